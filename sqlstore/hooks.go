package sqlstore

import (
	"context"
	"errors"
	"time"

	"github.com/plantstore/plantstore"
)

// Hooks are told what a Store does, so that a caller can count and time
// it (package promstats does, for Prometheus). The Store calls the funcs
// that are not nil, on the goroutine of the call that did the work; they
// must be safe for concurrent use, and quick. With no Hooks the Store does
// none of this work, and reads no clock for it.
type Hooks struct {
	// Done is called when an operation returns, with how long it took,
	// whatever its outcome; a Create's time includes its wait for the
	// group commit.
	Done func(op Op, took time.Duration, outcome Outcome)
	// Committed is called after each group-commit transaction, with the
	// number of Creates it stored and how long it took, from the
	// transaction's start to its commit's answer. It is called on the
	// committer's goroutine: the next batch waits for it.
	Committed func(creates int, took time.Duration)
}

// WithHooks makes the Store call h. Later WithHooks replace earlier.
func WithHooks(h Hooks) Option {
	return func(c *config) { c.hooks = h }
}

// An Op is a Store operation, for [Hooks].
type Op uint8

// The operations of a Store. Its String is the name given in brackets.
const (
	OpCreate      Op = iota // create: [Store.Create]
	OpRead                  // read: [Store.Plant]
	OpList                  // list: [Store.List]
	OpDelete                // delete: [Store.Delete]
	OpPing                  // ping: [Store.Ping]
	OpClaimEvents           // claim_events: [Store.Claim]
	OpAckEvents             // ack_events: [Store.Ack]
	OpProbeWrite            // probe_write: [Store.ProbeWrite]
	numOps
)

var opNames = [numOps]string{"create", "read", "list", "delete", "ping", "claim_events", "ack_events", "probe_write"}

func (o Op) String() string {
	if o < numOps {
		return opNames[o]
	}
	return "unknown"
}

// Ops returns every Op, in the order of their values.
func Ops() []Op {
	ops := make([]Op, numOps)
	for i := range ops {
		ops[i] = Op(i)
	}
	return ops
}

// An Outcome is how an operation ended, for [Hooks].
type Outcome uint8

// The outcomes of an operation. Its String is the name given in brackets.
const (
	// OK is a success, or an answer that is not a failure of the storage:
	// a conflict, a missing id (ok).
	OK Outcome = iota
	// Unavailable wraps [plantstore.ErrUnavailable] (unavailable).
	Unavailable
	// OutcomeUnknown wraps [plantstore.ErrOutcomeUnknown]
	// (outcome_unknown).
	OutcomeUnknown
	// Canceled is the caller's context ending first (canceled).
	Canceled
	// Failed is any other failure (other).
	Failed
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"ok", "unavailable", "outcome_unknown", "canceled", "other"}

func (o Outcome) String() string {
	if o < numOutcomes {
		return outcomeNames[o]
	}
	return "unknown"
}

// Outcomes returns every Outcome, in the order of their values.
func Outcomes() []Outcome {
	os := make([]Outcome, numOutcomes)
	for i := range os {
		os[i] = Outcome(i)
	}
	return os
}

// outcomeOf returns the Outcome of an operation that returned err.
func outcomeOf(err error) Outcome {
	switch {
	case err == nil, errors.Is(err, plantstore.ErrConflict), errors.Is(err, plantstore.ErrNotFound):
		return OK
	case errors.Is(err, plantstore.ErrOutcomeUnknown):
		return OutcomeUnknown
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// failure keeps the context's errors reachable only when the
		// caller's context has ended.
		return Canceled
	case errors.Is(err, plantstore.ErrUnavailable):
		return Unavailable
	}
	return Failed
}

// start returns the time an operation starts, or the zero time when no
// hook would read it, to spare the clock.
func (s *Store) start() time.Time {
	if s.cfg.hooks.Done == nil {
		return time.Time{}
	}
	return time.Now()
}

// done calls the Done hook for an operation o that started at start and
// returned *errp. It is meant to be deferred.
func (s *Store) done(o Op, start time.Time, errp *error) {
	if s.cfg.hooks.Done != nil {
		s.cfg.hooks.Done(o, time.Since(start), outcomeOf(*errp))
	}
}

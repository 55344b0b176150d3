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
//
// Done and Committed count and time; Start and Batch carry a context, so
// that a tracer can give each operation and each group-commit transaction
// a span under the caller's (package oteltrace does, for OpenTelemetry).
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
	// Start is called as an operation begins, with the caller's context.
	// The operation goes on with the context it returns, which must not
	// be nil, and end, unless nil, is called once, as the operation
	// returns, with its outcome (after Done). A Create's context is the
	// one its group-commit transaction's Batch is given.
	Start func(ctx context.Context, op Op) (_ context.Context, end func(Outcome))
	// Batch is called as the committer begins a group-commit transaction,
	// with the contexts of the Creates it stores, as Start returned them
	// (or as their callers gave them, without Start), in the order they
	// came; joined is the Store's again once Batch returns. end, unless
	// nil, is called once the transaction has ended, with its outcome: OK
	// when it committed, whatever conflicts it found. Both are called on
	// the committer's goroutine: the next batch waits for them. Creates of
	// a Store opened [WithoutGroupCommit] join no batch.
	Batch func(joined []context.Context) (end func(Outcome))
}

// WithHooks makes the Store call h. Several WithHooks add up, as
// [net/http/httptrace.WithClientTrace] does, so that metrics (package
// promstats) and tracing (package oteltrace) are each given as they come:
// Done and Committed are told to every set in the order the sets were
// given; Start and Batch are called in that order too, each Start with
// the context the one before it returned, and their ends in the reverse
// order, the last set's first, as spans nested that way end. A field only
// one set fills is called as it is, at no cost over that set alone.
func WithHooks(h Hooks) Option {
	return func(c *config) { c.hooks = c.hooks.join(h) }
}

// join returns hooks that call h's, then next's.
func (h Hooks) join(next Hooks) Hooks {
	j := h
	switch {
	case j.Done == nil:
		j.Done = next.Done
	case next.Done != nil:
		first, second := h.Done, next.Done
		j.Done = func(op Op, took time.Duration, k Outcome) {
			first(op, took, k)
			second(op, took, k)
		}
	}
	switch {
	case j.Committed == nil:
		j.Committed = next.Committed
	case next.Committed != nil:
		first, second := h.Committed, next.Committed
		j.Committed = func(creates int, took time.Duration) {
			first(creates, took)
			second(creates, took)
		}
	}
	switch {
	case j.Start == nil:
		j.Start = next.Start
	case next.Start != nil:
		first, second := h.Start, next.Start
		j.Start = func(ctx context.Context, op Op) (context.Context, func(Outcome)) {
			ctx1, end1 := first(ctx, op)
			if ctx1 == nil {
				ctx1 = ctx
			}
			ctx2, end2 := second(ctx1, op)
			if ctx2 == nil {
				ctx2 = ctx1
			}
			return ctx2, joinEnds(end2, end1)
		}
	}
	switch {
	case j.Batch == nil:
		j.Batch = next.Batch
	case next.Batch != nil:
		first, second := h.Batch, next.Batch
		j.Batch = func(joined []context.Context) func(Outcome) {
			end1 := first(joined)
			return joinEnds(second(joined), end1)
		}
	}
	return j
}

// joinEnds returns an end that calls a, then b, either of which may be
// nil; nil when both are.
func joinEnds(a, b func(Outcome)) func(Outcome) {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return func(k Outcome) {
		a(k)
		b(k)
	}
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

// An opTrack is what the hooks need of an operation, from track to done.
type opTrack struct {
	s     *Store
	op    Op
	start time.Time     // zero unless Done is set, to spare the clock
	end   func(Outcome) // from Start, or nil
}

// track begins operation o for the hooks and returns the context it goes
// on with: ctx, unless Start gives another. Without hooks it does nothing.
func (s *Store) track(ctx context.Context, o Op) (context.Context, opTrack) {
	t := opTrack{s: s, op: o}
	if s.cfg.hooks.Done != nil {
		t.start = time.Now()
	}
	if s.cfg.hooks.Start != nil {
		if c, end := s.cfg.hooks.Start(ctx, o); c != nil {
			ctx, t.end = c, end
		}
	}
	return ctx, t
}

// done calls the Done hook and Start's end, if any, for an operation that
// returned *errp. It is meant to be deferred.
func (t opTrack) done(errp *error) {
	done := t.s.cfg.hooks.Done
	if done == nil && t.end == nil {
		return
	}
	k := outcomeOf(*errp)
	if done != nil {
		done(t.op, time.Since(t.start), k)
	}
	if t.end != nil {
		t.end(k)
	}
}

// batchStarted calls the Batch hook, if any, for the Creates of batch,
// and returns its end, or nil.
func (s *Store) batchStarted(batch []*createReq) func(Outcome) {
	if s.cfg.hooks.Batch == nil {
		return nil
	}
	joined := s.joined[:0]
	for _, r := range batch {
		joined = append(joined, r.ctx)
	}
	end := s.cfg.hooks.Batch(joined)
	clear(joined) // keep no caller's context past its Create
	s.joined = joined[:0]
	return end
}

// batchOutcome is the Outcome of a group-commit transaction whose Creates
// were answered errs: that of its first failure, conflicts aside.
func batchOutcome(errs []error) Outcome {
	for _, err := range errs {
		if k := outcomeOf(err); k != OK {
			return k
		}
	}
	return OK
}

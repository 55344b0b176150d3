package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore"
)

// WithMetrics makes the Store time its operations and count their
// failures, in collectors registered with reg:
//
//   - plantstore_storage_operation_duration_seconds{operation}, a histogram
//     of how long each call took, whatever its outcome;
//   - plantstore_storage_errors_total{operation, kind}, a counter of the
//     calls that failed;
//   - plantstore_storage_group_commit_batch_size, a histogram of the
//     Creates stored per group-commit transaction.
//
// operation is create, read ([Store.Plant]), list, delete, ping,
// probe_write ([Store.ProbeWrite]), and with
// [WithOutbox] claim_events ([Store.Claim]) and ack_events ([Store.Ack]). A
// create's time includes its wait for the group commit. kind is
// unavailable ([plantstore.ErrUnavailable]), outcome_unknown
// ([plantstore.ErrOutcomeUnknown]), canceled (the caller's context ended
// first) or other. A conflict or a missing id is an answer, not a failure:
// it is not counted.
//
// Stores given the same reg share the collectors. To tell several Stores
// apart, give each reg wrapped with [prometheus.WrapRegistererWith] and a
// label of its own. Nothing is registered anywhere else.
func WithMetrics(reg prometheus.Registerer) Option {
	return func(c *config) { c.registerer = reg }
}

// An op is a Store operation, as a metric label.
type op int

const (
	opCreate op = iota
	opRead
	opList
	opDelete
	opPing
	opClaimEvents
	opAckEvents
	opProbeWrite
	numOps
)

var opLabels = [numOps]string{"create", "read", "list", "delete", "ping", "claim_events", "ack_events", "probe_write"}

// The kinds of failure, as a metric label.
const (
	kindUnavailable = iota
	kindOutcomeUnknown
	kindCanceled
	kindOther
	numKinds
)

var kindLabels = [numKinds]string{"unavailable", "outcome_unknown", "canceled", "other"}

// kindOf returns the kind of failure err is, or -1 when err is nil or an
// answer rather than a failure.
func kindOf(err error) int {
	switch {
	case err == nil, errors.Is(err, plantstore.ErrConflict), errors.Is(err, plantstore.ErrNotFound):
		return -1
	case errors.Is(err, plantstore.ErrOutcomeUnknown):
		return kindOutcomeUnknown
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		// failure keeps the context's errors reachable only when the
		// caller's context has ended.
		return kindCanceled
	case errors.Is(err, plantstore.ErrUnavailable):
		return kindUnavailable
	}
	return kindOther
}

// durationBuckets are the operation duration histogram's upper bounds, in
// seconds: from 50 µs, a read from SQLite's cache, to 30 s, well past
// the default timeout of 5 s (see [WithTimeout]).
var durationBuckets = []float64{
	0.00005, 0.0001, 0.00025, 0.0005,
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
}

// storeMetrics holds a Store's collectors, and their children looked up
// once, so that an operation does not hash its labels. A nil
// *storeMetrics records nothing.
type storeMetrics struct {
	durationVec *prometheus.HistogramVec
	errorsVec   *prometheus.CounterVec
	batch       prometheus.Observer

	// duration and errors are nil for the outbox operations of a Store
	// without an outbox, which would be exported as zeros for nothing.
	duration [numOps]prometheus.Observer
	errors   [numOps][numKinds]prometheus.Counter
}

func newStoreMetrics(reg prometheus.Registerer, cfg config) (*storeMetrics, error) {
	m := &storeMetrics{
		durationVec: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "plantstore_storage_operation_duration_seconds",
			Help:    "Time a storage operation took, whatever its outcome; a create's includes its wait for the group commit.",
			Buckets: durationBuckets,
		}, []string{"operation"}),
		errorsVec: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plantstore_storage_errors_total",
			Help: "Storage operations that failed, by kind: unavailable, outcome_unknown, canceled or other. Conflicts and missing ids are not failures.",
		}, []string{"operation", "kind"}),
	}
	batch := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "plantstore_storage_group_commit_batch_size",
		Help:    "Creates stored per group-commit transaction.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 9), // 1 to maxBatch
	})
	var err error
	if m.durationVec, err = register(reg, m.durationVec); err != nil {
		return nil, err
	}
	if m.errorsVec, err = register(reg, m.errorsVec); err != nil {
		return nil, err
	}
	if cfg.group {
		if m.batch, err = register(reg, batch); err != nil {
			return nil, err
		}
	}
	for o := range numOps {
		if (o == opClaimEvents || o == opAckEvents) && !cfg.outbox {
			continue
		}
		m.duration[o] = m.durationVec.WithLabelValues(opLabels[o])
		for k := range numKinds {
			m.errors[o][k] = m.errorsVec.WithLabelValues(opLabels[o], kindLabels[k])
		}
	}
	return m, nil
}

// register registers c with reg and returns it, or the equal collector reg
// already has.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	if err != nil {
		return c, fmt.Errorf("sqlstore: register metrics: %w", err)
	}
	return c, nil
}

// start returns the time an operation starts, or the zero time when m
// records nothing, to spare the clock.
func (m *storeMetrics) start() time.Time {
	if m == nil {
		return time.Time{}
	}
	return time.Now()
}

// done records an operation o that started at start and returned *errp.
// It is meant to be deferred.
func (m *storeMetrics) done(o op, start time.Time, errp *error) {
	if m == nil {
		return
	}
	d := time.Since(start).Seconds()
	if h := m.duration[o]; h != nil {
		h.Observe(d)
	} else {
		m.durationVec.WithLabelValues(opLabels[o]).Observe(d)
	}
	k := kindOf(*errp)
	if k < 0 {
		return
	}
	if c := m.errors[o][k]; c != nil {
		c.Inc()
	} else {
		m.errorsVec.WithLabelValues(opLabels[o], kindLabels[k]).Inc()
	}
}

// batched records a group commit of n Creates.
func (m *storeMetrics) batched(n int) {
	if m != nil && m.batch != nil {
		m.batch.Observe(float64(n))
	}
}

package promstats

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore/sqlstore"
)

// Storage returns the [sqlstore.Hooks] that time a Store's operations and
// count their failures in collectors registered with reg:
//
//   - plantstore_storage_operation_duration_seconds{operation}, a histogram
//     of how long each call took, whatever its outcome;
//   - plantstore_storage_errors_total{operation, kind}, a counter of the
//     calls that failed;
//   - plantstore_storage_group_commit_batch_size, a histogram of the
//     Creates stored per group-commit transaction, and
//     plantstore_storage_group_commit_duration_seconds, of how long each
//     such transaction took.
//
// operation is an [sqlstore.Op] (create, read, list, delete, ping,
// probe_write, claim_events, ack_events); a create's time includes its
// wait for the group commit. kind is an [sqlstore.Outcome] other than ok
// (unavailable, outcome_unknown, canceled or other): a conflict or a
// missing id is an answer, not a failure. Every series is there from the
// start, at zero, the outbox's operations included.
func Storage(reg prometheus.Registerer) (sqlstore.Hooks, error) {
	durationVec, err := register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "plantstore_storage_operation_duration_seconds",
		Help:    "Time a storage operation took, whatever its outcome; a create's includes its wait for the group commit.",
		Buckets: storageBuckets,
	}, []string{"operation"}))
	if err != nil {
		return sqlstore.Hooks{}, err
	}
	errorsVec, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "plantstore_storage_errors_total",
		Help: "Storage operations that failed, by kind: unavailable, outcome_unknown, canceled or other. Conflicts and missing ids are not failures.",
	}, []string{"operation", "kind"}))
	if err != nil {
		return sqlstore.Hooks{}, err
	}
	batch, err := register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "plantstore_storage_group_commit_batch_size",
		Help:    "Creates stored per group-commit transaction.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 9), // 1 to 256, the largest batch
	}))
	if err != nil {
		return sqlstore.Hooks{}, err
	}
	commit, err := register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "plantstore_storage_group_commit_duration_seconds",
		Help:    "Time a group-commit transaction took, from its start to its commit's answer.",
		Buckets: storageBuckets,
	}))
	if err != nil {
		return sqlstore.Hooks{}, err
	}
	ops, outcomes := sqlstore.Ops(), sqlstore.Outcomes()
	m := &storeMetrics{
		duration: make([]prometheus.Observer, len(ops)),
		errors:   make([][]prometheus.Counter, len(ops)),
	}
	for _, o := range ops {
		m.duration[o] = durationVec.WithLabelValues(o.String())
		m.errors[o] = make([]prometheus.Counter, len(outcomes))
		for _, k := range outcomes[sqlstore.OK+1:] {
			m.errors[o][k] = errorsVec.WithLabelValues(o.String(), k.String())
		}
	}
	return sqlstore.Hooks{
		Done: m.done,
		Committed: func(n int, took time.Duration) {
			batch.Observe(float64(n))
			commit.Observe(took.Seconds())
		},
	}, nil
}

// storageBuckets are the storage histograms' upper bounds, in seconds:
// from 50 µs, a read from SQLite's cache, to 30 s, well past the default
// timeout of 5 s.
var storageBuckets = []float64{
	0.00005, 0.0001, 0.00025, 0.0005,
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
}

// storeMetrics holds the children of the storage collectors, looked up
// once, by operation and outcome.
type storeMetrics struct {
	duration []prometheus.Observer
	errors   [][]prometheus.Counter
}

func (m *storeMetrics) done(o sqlstore.Op, took time.Duration, k sqlstore.Outcome) {
	if int(o) >= len(m.duration) {
		return
	}
	m.duration[o].Observe(took.Seconds())
	if k != sqlstore.OK && int(k) < len(m.errors[o]) {
		m.errors[o][k].Inc()
	}
}

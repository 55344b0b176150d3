package webhook

import (
	"context"
	"sync/atomic"
)

// Stats counts what a [Dispatcher] has done since [New], for metrics
// (package promstats exports them to Prometheus) and logs, as
// [database/sql.DB.Stats] does for a pool.
type Stats struct {
	// Delivered counts the deliveries a subscriber acknowledged with a
	// 2xx response.
	Delivered uint64
	// FailedAttempts counts the attempts that failed: no response, a
	// timeout, or a status other than 2xx.
	FailedAttempts uint64
	// Abandoned counts the deliveries given up after the maximum age.
	Abandoned uint64
	// SubscribersDown is the number of subscribers taken as down after
	// failed attempts in a row, to which only one delivery at a time is
	// attempted, as a probe.
	SubscribersDown int
	// Dropped counts the events the outbox dropped undelivered, for every
	// subscriber, to stay within its bound, when CanDrop: the outbox is a
	// [*MemoryOutbox], or another that reports its drops (as
	// [github.com/plantstore/plantstore/sqlstore.Store] does, bound or
	// not).
	Dropped uint64
	CanDrop bool
}

// counters are what Stats reads, updated by the Dispatcher's goroutines.
type counters struct {
	delivered, failed, abandoned atomic.Uint64
	down                         atomic.Int64
}

// Stats returns the Dispatcher's counts. It is safe to call at any time.
func (d *Dispatcher) Stats() Stats {
	st := Stats{
		Delivered:       d.counts.delivered.Load(),
		FailedAttempts:  d.counts.failed.Load(),
		Abandoned:       d.counts.abandoned.Load(),
		SubscribersDown: int(d.counts.down.Load()),
	}
	if dr, ok := d.source.(dropper); ok {
		st.Dropped, st.CanDrop = dr.Dropped(), true
	}
	return st
}

// Depth returns the number of events in the Dispatcher's outbox that some
// subscriber has not received or given up yet, as
// [plantstore.Outbox.Depth] counts them.
func (d *Dispatcher) Depth(ctx context.Context) (int, error) {
	return d.source.Depth(ctx)
}

package plantstore

import (
	"context"
	"errors"
	"time"
)

// A WriteProber is a [Storage] that can check that it can commit a write
// now: that its backend is reachable, writable and has room. A storage
// whose writes can fail while reads still succeed (a full disk, a
// read-only file or database) implements it, so that [PlantStore.Ready]
// can tell when writes work again without waiting for a client's write.
type WriteProber interface {
	// ProbeWrite commits a write that changes no plant, and returns nil
	// once it is as durable as a Create would be, or an error wrapping
	// ErrUnavailable when it cannot be committed. It must be safe for
	// concurrent use and honour ctx.
	ProbeWrite(ctx context.Context) error
}

// Ready reports whether ps can serve writes now. While the latest Create
// or Delete that ended in an error of the storage (one wrapping
// [ErrUnavailable] or [ErrOutcomeUnknown]) has not been followed by one
// that succeeded, Ready probes a write through [WriteProber], and its
// success makes ps ready again; otherwise, or when the storage cannot
// probe writes, it pings the storage as [PlantStore.Ping] does.
//
// Errors: the error of the ping or of the write probe (wrapping
// [ErrUnavailable], or [ErrOutcomeUnknown] when the probe's commit was
// lost in flight) when ps cannot serve writes; the context's error when
// ctx ends first.
func (ps *PlantStore) Ready(ctx context.Context) error {
	if ps.failingSince.Load() == 0 {
		return ps.Ping(ctx)
	}
	wp, ok := ps.storage.(WriteProber)
	if !ok {
		return ps.Ping(ctx)
	}
	failures := ps.writeFailures.Load()
	if err := wp.ProbeWrite(ctx); err != nil {
		return err
	}
	// A write that failed while the probe ran outranks the probe.
	if ps.writeFailures.Load() == failures {
		ps.failingSince.Store(0)
	}
	return nil
}

// WritesFailing reports whether the latest Create or Delete that reached
// the storage failed for want of it (an error wrapping [ErrUnavailable] or
// [ErrOutcomeUnknown]) and no write or [PlantStore.Ready] has succeeded
// since. A cached answer of Ready holds only while this stays the same.
func (ps *PlantStore) WritesFailing() bool { return ps.failingSince.Load() != 0 }

// WritesFailingSince returns when writes started failing, while
// [PlantStore.WritesFailing] reports true, and the zero Time otherwise:
// how long the storage has been failing tells a client how long to wait
// before it tries again.
func (ps *PlantStore) WritesFailingSince() time.Time {
	if ns := ps.failingSince.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// noteWrite records the outcome of a Create or Delete for Ready. It writes
// the shared state only when it changes, so that concurrent writes that
// all succeed do not contend for it.
func (ps *PlantStore) noteWrite(err error) {
	failed := err != nil && (errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown))
	if err != nil && !failed {
		// A conflict, a missing plant or a caller giving up says nothing
		// about whether writes work.
		return
	}
	if failed {
		ps.writeFailures.Add(1)
		if ps.failingSince.Load() == 0 {
			ps.failingSince.CompareAndSwap(0, time.Now().UnixNano())
		}
		return
	}
	if ps.failingSince.Load() != 0 {
		ps.failingSince.Store(0)
	}
}

package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/wire"
)

// DefaultReadyTimeout bounds how long GET /readyz waits for the storage
// unless [WithReadyTimeout] says otherwise: a load balancer's health check
// must get its answer before its own timeout, however stuck the database.
const DefaultReadyTimeout = time.Second

// DefaultReadyInterval is how long GET /readyz reuses a check's result
// unless [WithReadyInterval] says otherwise.
const DefaultReadyInterval = 250 * time.Millisecond

// WithReadyTimeout sets how long GET /readyz waits for its check of the
// storage before it answers 503. A d of zero or less leaves the default,
// [DefaultReadyTimeout].
func WithReadyTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.readyTimeout = d
		}
	}
}

// WithReadyInterval sets how long the result of a check of the storage
// answers GET /readyz before the next request checks again, so that
// however many clients ask, the storage sees at most one check per d. A
// d of zero or less leaves the default, [DefaultReadyInterval].
func WithReadyInterval(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.readyInterval = d
		}
	}
}

var (
	errNotReady     = &apiError{code: wire.CodeUnavailable, msg: "not ready: the storage cannot take writes now"}
	errReadyTimeout = &apiError{code: wire.CodeUnavailable, msg: "not ready: the storage did not answer in time"}
)

// A readiness caches the outcome of [plantstore.PlantStore.Ready] for an
// interval, or until a write's outcome says otherwise. At most one check
// runs at a time, on a context of its own, so that a client
// that hangs up does not cut the check short for the others, and a flood
// of GET /readyz costs the storage one check per interval.
type readiness struct {
	ps       *plantstore.PlantStore
	timeout  time.Duration
	interval time.Duration

	mu      sync.Mutex
	checked time.Time // when the latest check ended; zero before any
	err     error     // its outcome
	// failing is what WritesFailing said when the latest check ended: a
	// write that has failed, or succeeded, since makes its outcome stale.
	failing bool
	running chan struct{} // closed when the check under way ends; nil when none is
}

// check returns the outcome of a check of the storage that ended less
// than an interval ago, or of one it waits for, at most r.timeout.
func (r *readiness) check(ctx context.Context) error {
	r.mu.Lock()
	if !r.checked.IsZero() && time.Since(r.checked) < r.interval && r.failing == r.ps.WritesFailing() {
		err := r.err
		r.mu.Unlock()
		return err
	}
	running := r.running
	if running == nil {
		running = make(chan struct{})
		r.running = running
		go r.run(running)
	}
	r.mu.Unlock()

	t := time.NewTimer(r.timeout)
	defer t.Stop()
	select {
	case <-running:
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.err
	case <-t.C:
		return errReadyTimeout
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run checks the storage, bounded by the timeout, and publishes the
// outcome.
func (r *readiness) run(done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	err := r.ps.Ready(ctx)
	if err != nil && ctx.Err() != nil {
		err = errReadyTimeout
	}
	cancel()
	// Read after the check, which clears it when its write probe succeeds.
	failing := r.ps.WritesFailing()
	r.mu.Lock()
	r.checked, r.err, r.failing, r.running = time.Now(), err, failing, nil
	r.mu.Unlock()
	close(done)
}

// readyz answers 200 when the storage can take writes now, and 503
// otherwise, within the ready timeout; see [plantstore.PlantStore.Ready].
func (h *handler) readyz(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	err := h.ready.check(r.Context())
	if err == nil {
		writeJSON(w, http.StatusOK, statusReady)
		return
	}
	ae := errNotReady
	if errors.Is(err, errReadyTimeout) {
		ae = errReadyTimeout
	}
	if r.Context().Err() == nil {
		h.storageLog.LogAttrs(r.Context(), slog.LevelWarn, "httpapi: not ready", slog.Any("err", err))
	}
	h.writeError(w, r, ae)
}

// logSummaryInterval is how often the handler logs a kind of storage
// failure while it keeps recurring: the first at once, then a summary of
// the others, with their count, every interval. The metrics count each.
const logSummaryInterval = 5 * time.Second

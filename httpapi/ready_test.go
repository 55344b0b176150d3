package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/memstore"
)

// probedStorage is a memory storage whose writes fail with ErrUnavailable
// while writesDown is set, as on a full disk: reads and pings still
// succeed. It counts the checks GET /readyz makes.
type probedStorage struct {
	*memstore.Store
	writesDown atomic.Bool
	pings      atomic.Int64
	probes     atomic.Int64
	// stall, when not nil, holds every Ping and ProbeWrite until it is
	// closed, whatever their contexts say, like a database behind a
	// network that stopped forwarding bytes.
	stall chan struct{}
}

var errDiskFull = fmt.Errorf("disk full: %w", plantstore.ErrUnavailable)

func (s *probedStorage) Create(ctx context.Context, p plantstore.Plant) error {
	if s.writesDown.Load() {
		return errDiskFull
	}
	return s.Store.Create(ctx, p)
}

func (s *probedStorage) Ping(ctx context.Context) error {
	s.pings.Add(1)
	if s.stall != nil {
		<-s.stall
	}
	return nil
}

func (s *probedStorage) ProbeWrite(ctx context.Context) error {
	s.probes.Add(1)
	if s.stall != nil {
		<-s.stall
	}
	if s.writesDown.Load() {
		return errDiskFull
	}
	return nil
}

// TestReadyzFollowsWrites shows GET /readyz turning 503, saying when to
// come back, once creates fail for want of the storage, though the storage
// still answers pings, and 200
// again as soon as a write probe succeeds, with no client write. When
// plantstore.Ready pings and when it probes is the root package's
// TestReady.
func TestReadyzFollowsWrites(t *testing.T) {
	t.Parallel()
	s := &probedStorage{Store: memstore.New()}
	e := newEnv(t, s, httpapi.WithReadyInterval(time.Nanosecond))
	e.do("GET", "/readyz", noToken, ``).wantOK(t, "GET /readyz")
	s.writesDown.Store(true)
	e.do("POST", "/plants", nil, `{"id":1,"name":"Fern"}`).wantError(t, 400, 503)
	r := e.do("GET", "/readyz", noToken, ``)
	if w := r.wantError(t, 400, 503); !strings.Contains(w.Message, "cannot take writes") {
		t.Errorf("GET /readyz message = %q, want one saying the storage cannot take writes", w.Message)
	}
	if got := r.header.Get("Retry-After"); got != "1" {
		t.Errorf("GET /readyz with writes failing: Retry-After = %q, want 1", got)
	}
	s.writesDown.Store(false)
	e.do("GET", "/readyz", noToken, ``).wantOK(t, "GET /readyz once writes work")
	if s.probes.Load() == 0 {
		t.Errorf("GET /readyz after a failed write made no write probe")
	}
}

// TestReadyzStalledStorage shows GET /readyz answering 503 within its
// timeout when the storage does not answer at all, not even to its
// context, and then one check at a time being outstanding.
func TestReadyzStalledStorage(t *testing.T) {
	t.Parallel()
	s := &probedStorage{Store: memstore.New(), stall: make(chan struct{})}
	e := newEnv(t, s, httpapi.WithReadyTimeout(50*time.Millisecond))
	t.Cleanup(func() { close(s.stall) })
	for range 5 {
		w := e.do("GET", "/readyz", noToken, ``).wantError(t, 400, 503)
		if !strings.Contains(w.Message, "in time") {
			t.Errorf("GET /readyz message = %q, want one saying the storage did not answer in time", w.Message)
		}
	}
	if got := s.pings.Load(); got != 1 {
		t.Errorf("storage checked %d times while the first check hung, want 1", got)
	}
	e.do("GET", "/healthz", noToken, ``).wantOK(t, "GET /healthz with the storage stalled")
}

// TestReadyzCache shows that however many GET /readyz arrive, sequential
// or concurrent, the storage sees one check per interval; and that a
// cached check does not outlive a write's outcome: failed creates make the
// next GET /readyz check again, and so does a create that succeeds after
// them. The burst of failed creates, all for one reason, logs a line or
// two, not one each.
func TestReadyzCache(t *testing.T) {
	t.Parallel()
	s := &probedStorage{Store: memstore.New()}
	e := newEnv(t, s, httpapi.WithReadyInterval(time.Hour))
	const n = 200
	for range n {
		e.do("GET", "/readyz", noToken, ``).wantOK(t, "GET /readyz")
	}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if status, _, _, err := testkit.Get(http.DefaultClient, e.url+"/readyz", ""); err != nil || status != 200 {
				t.Errorf("concurrent GET /readyz = %d, %v, want 200", status, err)
			}
		})
	}
	wg.Wait()
	if got := s.pings.Load() + s.probes.Load(); got != 1 {
		t.Fatalf("%d GET /readyz checked the storage %d times, want once", 2*n, got)
	}
	s.writesDown.Store(true)
	for i := range n {
		e.do("POST", "/plants", nil, fmt.Sprintf(`{"id":%d,"name":"Fern"}`, i)).wantError(t, 400, 503)
	}
	// The first is logged at once, and a summary every 5 s: a slow
	// machine may take that long for the burst.
	if lines := strings.Count(e.logs.String(), "httpapi: storage unavailable"); lines == 0 || lines > 3 {
		t.Errorf("%d failed creates logged %d lines, want 1 (or a summary or two more):\n%s", n, lines, e.logs.String())
	}
	e.do("GET", "/readyz", noToken, ``).wantError(t, 400, 503)
	s.writesDown.Store(false)
	e.do("POST", "/plants", nil, `{"id":-1,"name":"Aloe"}`).wantOK(t, "create")
	e.do("GET", "/readyz", noToken, ``).wantOK(t, "GET /readyz after a create succeeded")
	if got := s.pings.Load() + s.probes.Load(); got != 3 {
		t.Errorf("storage checked %d times, want 3: once per change of the writes' outcome", got)
	}
}

package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/client"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/memstore"
)

var (
	errUnavailable = fmt.Errorf("db down: %w", plantstore.ErrUnavailable)
	errUnknown     = fmt.Errorf("connection lost during commit: %w", plantstore.ErrOutcomeUnknown)
)

// A step is what one Create or Delete of scripted storage does: first
// act, if set, then return err.
type step struct {
	act func(s *memstore.Store, p plantstore.Plant) error
	err error
}

// stored acts as the call itself would.
var stored = func(s *memstore.Store, p plantstore.Plant) error {
	return s.Create(context.Background(), p)
}

// deleted acts as a delete would.
var deleted = func(s *memstore.Store, p plantstore.Plant) error {
	return s.Delete(context.Background(), p.ID)
}

// scripted is memory storage whose Creates and Deletes follow a script
// of steps, one a call, and then behave normally.
type scripted struct {
	*memstore.Store
	mu      sync.Mutex
	creates []step
	deletes []step
}

// play acts out the next of steps on p, and reports false when none is
// left.
func (s *scripted) play(steps *[]step, p plantstore.Plant) (played bool, err error) {
	s.mu.Lock()
	if len(*steps) == 0 {
		s.mu.Unlock()
		return false, nil
	}
	st := (*steps)[0]
	*steps = (*steps)[1:]
	s.mu.Unlock()
	if st.act != nil {
		if err := st.act(s.Store, p); err != nil {
			return true, err
		}
	}
	return true, st.err
}

func (s *scripted) Create(ctx context.Context, p plantstore.Plant) error {
	if played, err := s.play(&s.creates, p); played {
		return err
	}
	return s.Store.Create(ctx, p)
}

func (s *scripted) Delete(ctx context.Context, id int64) error {
	if played, err := s.play(&s.deletes, plantstore.Plant{ID: id}); played {
		return err
	}
	return s.Store.Delete(ctx, id)
}

// waits records the bounds of the waits a client draws, and draws zero.
type waits struct {
	mu     sync.Mutex
	bounds []time.Duration
}

func (w *waits) jitter(n int64) int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.bounds = append(w.bounds, time.Duration(n-1))
	return 0
}

func TestRetryUnavailable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		failures   int
		policy     client.RetryPolicy
		wantErr    bool
		wantBounds []time.Duration
	}{
		{name: "recovers", failures: 2,
			policy:     client.RetryPolicy{MaxAttempts: 5, BaseDelay: 10 * time.Millisecond, MaxDelay: time.Second},
			wantBounds: []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}},
		{name: "backoff capped", failures: 5,
			policy: client.RetryPolicy{MaxAttempts: 6, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond},
			wantBounds: []time.Duration{time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond,
				5 * time.Millisecond, 5 * time.Millisecond}},
		{name: "no cap", failures: 3,
			policy:     client.RetryPolicy{MaxAttempts: 4, BaseDelay: time.Hour},
			wantBounds: []time.Duration{time.Hour, 2 * time.Hour, 4 * time.Hour}},
		{name: "gives up", failures: 3, wantErr: true,
			policy:     client.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond},
			wantBounds: []time.Duration{time.Millisecond, 2 * time.Millisecond}},
		{name: "retries off", failures: 1, wantErr: true, policy: client.RetryPolicy{}},
	}
	for _, mode := range modes {
		for _, tt := range tests {
			t.Run(mode.name+"/"+tt.name, func(t *testing.T) {
				s := &scripted{Store: memstore.New()}
				for range tt.failures {
					s.creates = append(s.creates, step{err: errUnavailable})
				}
				// A 503 without Retry-After, as a proxy in front may send,
				// leaves the wait to the policy.
				h := newHandler(s, mode.opts...)
				srv, requests := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					h.ServeHTTP(withoutRetryAfter{w}, r)
				}))
				var w waits
				c := newClient(t, srv.URL, client.WithRetry(tt.policy), client.WithJitter(w.jitter))

				np := plantstore.NewPlant{ID: 1, Name: "Monstera"}
				p, err := c.Create(t.Context(), np)
				wantAttempts := int64(min(tt.failures+1, max(tt.policy.MaxAttempts, 1)))
				wantCount(t, requests, wantAttempts, "attempts")
				if diff := cmp.Diff(tt.wantBounds, w.bounds); diff != "" {
					t.Errorf("wait bounds mismatch (-want +got):\n%s", diff)
				}
				if tt.wantErr {
					checkError(t, err, 503, plantstore.ErrUnavailable)
					return
				}
				if err != nil {
					t.Fatalf("Create: %v", err)
				}
				if diff := cmp.Diff(plantstore.Plant(np), p); diff != "" {
					t.Errorf("Create mismatch (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// withoutRetryAfter drops the Retry-After header of the answers it writes.
type withoutRetryAfter struct{ http.ResponseWriter }

func (w withoutRetryAfter) WriteHeader(code int) {
	w.Header().Del("Retry-After")
	w.ResponseWriter.WriteHeader(code)
}

func (w withoutRetryAfter) Write(b []byte) (int, error) {
	w.Header().Del("Retry-After")
	return w.ResponseWriter.Write(b)
}

// TestRetryAfterHonoured checks that a client waits at least the
// Retry-After of the server's 503, and gives up at once, with the 503,
// when its context would end first.
func TestRetryAfterHonoured(t *testing.T) {
	t.Parallel()
	s := &scripted{Store: memstore.New(), creates: []step{{err: errUnavailable}}}
	srv, requests := serve(t, newHandler(s))
	var w waits
	c := newClient(t, srv.URL, client.WithRetry(client.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}),
		client.WithJitter(w.jitter))
	start := time.Now()
	if _, err := c.Create(t.Context(), plantstore.NewPlant{ID: 1, Name: "Monstera"}); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if took := time.Since(start); took < time.Second {
		t.Errorf("Create after a 503 with Retry-After: 1 took %v, want at least 1s", took)
	}
	if diff := cmp.Diff([]time.Duration{500 * time.Millisecond}, w.bounds); diff != "" {
		t.Errorf("jitter bounds mismatch (-want +got):\n%s", diff)
	}
	wantCount(t, requests, 2, "attempts")

	s.creates = []step{{err: errUnavailable}}
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	_, err := c.Create(ctx, plantstore.NewPlant{ID: 2, Name: "Fern"})
	if ce, ok := errors.AsType[*client.Error](err); !ok || ce.Code != 503 || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Create with less time left than Retry-After = %v, want the 503 at once, not a wait that outlived the context", err)
	}
}

// TestRetryUnknownOutcome checks which calls are repeated after which
// answer: a create or delete whose outcome is unknown (an Error 504, a
// gateway's 502, a connection lost after the request was sent) only when
// the caller opted in, and how a repeat settles it then; a read always.
func TestRetryUnknownOutcome(t *testing.T) {
	t.Parallel()
	np := plantstore.NewPlant{ID: 1, Name: "Monstera", Tag: "indoor", HasTag: true}
	other := func(s *memstore.Store, p plantstore.Plant) error {
		return s.Create(context.Background(), plantstore.Plant{ID: p.ID, Name: "someone else's"})
	}
	createNP := func(ctx context.Context, c *client.Client) error {
		p, err := c.Create(ctx, np)
		if err == nil && p != plantstore.Plant(np) {
			return fmt.Errorf("created %+v, want %+v", p, np)
		}
		return err
	}
	tests := []struct {
		name         string
		front        func(t *testing.T, h http.Handler) http.Handler // in front of the handler
		exists       bool                                            // np is stored before the call
		creates      []step
		deletes      []step
		optIn        bool
		call         op
		wantRequests int64
		wantIs       error // nil: the call succeeds, unless fails
		fails        bool
		wantCode     int // of the *client.Error, if not 0
		wantStored   bool
		reason       string
	}{
		{name: "create not repeated", creates: []step{{act: stored, err: errUnknown}}, call: createNP,
			wantRequests: 1, wantIs: plantstore.ErrOutcomeUnknown, wantCode: 504, wantStored: true,
			reason: "it was stored: a repeat would have been answered 409"},
		{name: "delete not repeated", exists: true, deletes: []step{{act: deleted, err: errUnknown}}, call: del(np.ID),
			wantRequests: 1, wantIs: plantstore.ErrOutcomeUnknown, wantCode: 504},
		{name: "create repeated, its own plant found", optIn: true, creates: []step{{act: stored, err: errUnknown}},
			call: createNP, wantRequests: 3, wantStored: true,
			reason: "the repeat is answered 409, and a read finds the very plant"},
		{name: "create repeated, not stored the first time", optIn: true, creates: []step{{err: errUnknown}},
			call: createNP, wantRequests: 2, wantStored: true},
		{name: "create repeated, another plant found", optIn: true, creates: []step{{act: other, err: errUnknown}},
			call: createNP, wantRequests: 3, wantIs: plantstore.ErrConflict, wantCode: 409,
			reason: "the id is taken by a plant that is not the one being created"},
		{name: "delete repeated, gone", optIn: true, exists: true, deletes: []step{{act: deleted, err: errUnknown}},
			call: del(np.ID), wantRequests: 2},
		{name: "create repeated, still unknown", optIn: true,
			creates: []step{{err: errUnknown}, {err: errUnknown}, {err: errUnknown}},
			call:    createNP, wantRequests: 3, wantIs: plantstore.ErrOutcomeUnknown, wantCode: 504},
		{name: "create repeated, then unavailable", optIn: true, creates: []step{{err: errUnknown}, {err: errUnavailable}, {err: errUnavailable}},
			call: createNP, wantRequests: 3, wantIs: plantstore.ErrOutcomeUnknown, wantCode: 504,
			reason: "the first attempt may have stored it, whatever the later ones say"},
		{name: "create through a gateway's 502", front: gateway(1), call: createNP, wantRequests: 1,
			wantIs: plantstore.ErrOutcomeUnknown, wantCode: 502},
		{name: "read through a gateway's 502s", front: gateway(2), exists: true, call: read(np.ID), wantRequests: 3, wantStored: true},
		{name: "create, connection lost", front: hangUp, call: createNP, wantRequests: 1, wantIs: plantstore.ErrOutcomeUnknown,
			reason: "the server may have stored it"},
		{name: "delete, connection lost", front: hangUp, call: del(np.ID), wantRequests: 1, wantIs: plantstore.ErrOutcomeUnknown},
		{name: "create repeated, connection lost", front: hangUp, optIn: true, call: createNP, wantRequests: 3,
			wantIs: plantstore.ErrOutcomeUnknown},
		{name: "read, connection lost", front: hangUp, call: read(np.ID), wantRequests: 3, fails: true, reason: "a read may be repeated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &scripted{Store: memstore.New(), creates: tt.creates, deletes: tt.deletes}
			if tt.exists {
				if err := s.Store.Create(t.Context(), plantstore.Plant(np)); err != nil {
					t.Fatal(err)
				}
			}
			h := newHandler(s)
			if tt.front != nil {
				h = tt.front(t, h)
			}
			srv, requests := serve(t, h)
			// Without keep-alives, net/http never repeats a request on a
			// connection the server closed: every repeat is the client's.
			c := newClient(t, srv.URL, client.WithHTTPClient(&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}),
				client.WithRetry(client.RetryPolicy{MaxAttempts: 3, RetryUnknownOutcome: tt.optIn}))

			err := tt.call(t.Context(), c)
			wantCount(t, requests, tt.wantRequests, "requests: "+tt.reason)
			checkSentinel(t, err, tt.wantIs)
			if fails := tt.wantIs != nil || tt.fails; fails != (err != nil) {
				t.Fatalf("error %v, want one: %v", err, fails)
			}
			if tt.wantCode != 0 {
				checkError(t, err, tt.wantCode, tt.wantIs)
			}
			p, err := s.Store.Plant(t.Context(), np.ID)
			if isStored := err == nil && p == plantstore.Plant(np); isStored != tt.wantStored {
				t.Errorf("plant stored: %v, want %v", isStored, tt.wantStored)
			}
		})
	}
}

// gateway returns a front that answers the first n requests with a
// gateway's 502 page.
func gateway(n int64) func(*testing.T, http.Handler) http.Handler {
	var failures atomic.Int64
	failures.Store(n)
	return func(_ *testing.T, h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if failures.Add(-1) >= 0 {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(http.StatusBadGateway)
				io.WriteString(w, "<h1>502 Bad Gateway</h1>")
				return
			}
			h.ServeHTTP(w, r)
		})
	}
}

// hangUp is a front that reads each request whole and then closes the
// connection without answering.
func hangUp(t *testing.T, _ http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.Close()
	})
}

// TestRetryConnectionRefused checks that a request whose connection was
// refused, which the server never saw, is repeated, create included, and
// fails with ErrUnavailable when every attempt is refused, with the
// default transport too.
func TestRetryConnectionRefused(t *testing.T) {
	t.Parallel()
	srv, requests := serve(t, newHandler(memstore.New()))
	closed := testkit.FreeAddr(t)
	var dials atomic.Int64
	var refusals atomic.Int64
	refusals.Store(2)
	transport := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dials.Add(1) <= refusals.Load() {
			addr = closed
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	t.Cleanup(transport.CloseIdleConnections)
	c := newClient(t, srv.URL, client.WithHTTPClient(&http.Client{Transport: transport}),
		client.WithRetry(client.RetryPolicy{MaxAttempts: 3}))

	np := plantstore.NewPlant{ID: 1, Name: "Monstera"}
	if _, err := c.Create(t.Context(), np); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if got := []int64{dials.Load(), requests.Load()}; got[0] != 3 || got[1] != 1 {
		t.Errorf("dials, requests = %v, want [3 1]", got)
	}

	// Refused every time: nothing was sent, so nothing was stored.
	transport.CloseIdleConnections()
	dials.Store(0)
	refusals.Store(1 << 62)
	_, err := c.Create(t.Context(), plantstore.NewPlant{ID: 2, Name: "Fern"})
	checkSentinel(t, err, plantstore.ErrUnavailable)
	if _, ok := errors.AsType[*net.OpError](err); !ok {
		t.Errorf("error %v does not keep the dial error", err)
	}
	wantCount(t, &dials, 3, "dials")

	c = newClient(t, "http://"+closed, client.WithRetry(client.RetryPolicy{MaxAttempts: 2}))
	checkSentinel(t, c.Delete(t.Context(), 1), plantstore.ErrUnavailable)
	checkSentinel(t, c.Ping(t.Context()), plantstore.ErrUnavailable)
}

// TestBackoffEndsWithContext cancels the context as the client starts an
// hour's wait: the call must return at once with the context's error.
func TestBackoffEndsWithContext(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		creates []step
		wantIs  error
	}{
		{"unavailable", []step{{err: errUnavailable}}, plantstore.ErrUnavailable},
		{"outcome unknown, opted in", []step{{err: errUnknown}}, plantstore.ErrOutcomeUnknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &scripted{Store: memstore.New(), creates: tt.creates}
			srv, requests := serve(t, newHandler(s))
			ctx, cancel := context.WithCancel(t.Context())
			c := newClient(t, srv.URL,
				client.WithRetry(client.RetryPolicy{MaxAttempts: 3, BaseDelay: time.Hour, MaxDelay: time.Hour, RetryUnknownOutcome: true}),
				client.WithJitter(func(n int64) int64 {
					cancel()
					return n - 1
				}))
			_, err := c.Create(ctx, plantstore.NewPlant{ID: 1, Name: "a"})
			if !errors.Is(err, context.Canceled) {
				t.Errorf("error %v, want context.Canceled", err)
			}
			checkSentinel(t, err, tt.wantIs)
			wantCount(t, requests, 1, "requests")
		})
	}
}

// TestPingOnce checks that Ping reports the server's state with one
// attempt.
func TestPingOnce(t *testing.T) {
	t.Parallel()
	srv, requests := serve(t, newHandler(failing{errUnavailable}))
	c := newClient(t, srv.URL, client.WithRetry(client.RetryPolicy{MaxAttempts: 5}))
	checkSentinel(t, c.Ping(t.Context()), plantstore.ErrUnavailable)
	wantCount(t, requests, 1, "requests")
}

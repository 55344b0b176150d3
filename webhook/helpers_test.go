package webhook_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/memstore"
	"github.com/plantstore/plantstore/webhook"
)

var testSecret = []byte("whsec_" + base64.StdEncoding.EncodeToString([]byte("plantstore test key 0123456789ab")))

// secretPath is part of every subscriber URL; like the secret and the
// bodies, it must never reach the logs.
const secretPath = "/hooks/s3cr3t-path"

// A receiver is a subscriber on loopback that verifies every delivery and
// counts them by webhook-id.
type receiver struct {
	srv *httptest.Server
	// respond answers the attempt-th delivery of one webhook-id.
	respond func(w http.ResponseWriter, r *http.Request, attempt int) int

	mu        sync.Mutex
	attempts  map[string]int    // requests by webhook-id
	delivered map[string]int    // 2xx answers by webhook-id
	bodies    map[string]string // by webhook-id
	problems  []string
}

func ok(http.ResponseWriter, *http.Request, int) int     { return http.StatusNoContent }
func refuse(http.ResponseWriter, *http.Request, int) int { return http.StatusServiceUnavailable }

// newDownReceiver returns a receiver that refuses every delivery while
// down is set, and acknowledges each once it is cleared. down starts set.
func newDownReceiver(t *testing.T) (rc *receiver, down *atomic.Bool) {
	t.Helper()
	down = new(atomic.Bool)
	down.Store(true)
	return newReceiver(t, func(w http.ResponseWriter, r *http.Request, n int) int {
		if down.Load() {
			return refuse(w, r, n)
		}
		return ok(w, r, n)
	}), down
}

// newGateReceiver returns a receiver that holds every request until open
// is called, then acknowledges it, or until the client gives up, then
// answers 503. Once open, it acknowledges every request at once.
func newGateReceiver(t *testing.T) (rc *receiver, open func()) {
	t.Helper()
	gate := make(chan struct{})
	rc = newReceiver(t, func(_ http.ResponseWriter, r *http.Request, _ int) int {
		select {
		case <-gate:
			return http.StatusNoContent
		case <-r.Context().Done():
			return http.StatusServiceUnavailable
		}
	})
	return rc, sync.OnceFunc(func() { close(gate) })
}

func newReceiver(t *testing.T, respond func(w http.ResponseWriter, r *http.Request, attempt int) int) *receiver {
	t.Helper()
	rc := &receiver{
		respond:   respond,
		attempts:  make(map[string]int),
		delivered: make(map[string]int),
		bodies:    make(map[string]string),
	}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(func() {
		rc.srv.Close()
		for _, p := range rc.problems {
			t.Errorf("receiver: %s", p)
		}
	})
	return rc
}

func (rc *receiver) url() string { return rc.srv.URL + secretPath }

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	id := r.Header.Get(webhook.HeaderID)
	rc.mu.Lock()
	switch {
	case err != nil:
		rc.problems = append(rc.problems, fmt.Sprintf("read body: %v", err))
	case r.Method != http.MethodPost || r.URL.Path != secretPath:
		rc.problems = append(rc.problems, fmt.Sprintf("request %s %s, want POST %s", r.Method, r.URL.Path, secretPath))
	case r.Header.Get("Content-Type") != "application/json":
		rc.problems = append(rc.problems, fmt.Sprintf("Content-Type %q, want application/json", r.Header.Get("Content-Type")))
	}
	if err := webhook.Verify(testSecret, r.Header, body, time.Now(), 0); err != nil {
		rc.problems = append(rc.problems, fmt.Sprintf("Verify() = %v", err))
	}
	if prev, seen := rc.bodies[id]; seen && prev != string(body) {
		rc.problems = append(rc.problems, fmt.Sprintf("%s: body %s, then %s", id, prev, body))
	}
	rc.bodies[id] = string(body)
	rc.attempts[id]++
	attempt := rc.attempts[id]
	rc.mu.Unlock()

	status := rc.respond(w, r, attempt)

	rc.mu.Lock()
	if status >= 200 && status <= 299 {
		rc.delivered[id]++
	}
	rc.mu.Unlock()
	w.WriteHeader(status)
}

// stats returns a copy of what rc counted.
func (rc *receiver) stats() (attempts, delivered map[string]int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return maps.Clone(rc.attempts), maps.Clone(rc.delivered)
}

// total returns the number of attempts received, every event together.
func (rc *receiver) total() int {
	attempts, _ := rc.stats()
	sum := 0
	for _, c := range attempts {
		sum += c
	}
	return sum
}

// waitAttempted waits until rc has received attempts of n events.
func (rc *receiver) waitAttempted(t *testing.T, n int) {
	t.Helper()
	testkit.WaitUntil(t, time.Minute, fmt.Sprintf("attempts of %d events", n), func() bool {
		attempts, _ := rc.stats()
		return len(attempts) == n
	})
}

// waitDelivered waits until rc has acknowledged n events.
func (rc *receiver) waitDelivered(t *testing.T, n int) {
	t.Helper()
	testkit.WaitUntil(t, time.Minute, fmt.Sprintf("%d events delivered", n), func() bool {
		_, delivered := rc.stats()
		return len(delivered) == n
	})
}

// ids returns the plant ids of the bodies rc received, ascending: of
// those it answered with a 2xx only, when delivered is set.
func (rc *receiver) ids(t *testing.T, delivered bool) []int64 {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	ids := []int64{}
	for id, b := range rc.bodies {
		if delivered && rc.delivered[id] == 0 {
			continue
		}
		var p struct{ ID int64 }
		if err := json.Unmarshal([]byte(b), &p); err != nil {
			t.Fatalf("body %s: %v", b, err)
		}
		ids = append(ids, p.ID)
	}
	slices.Sort(ids)
	return ids
}

// logs collects what a Dispatcher logs, and checks at the end of the test
// that no secret, body or subscriber path is in it.
type logs struct{ testkit.Buffer }

func newLogs(t *testing.T) *logs {
	t.Helper()
	l := &logs{}
	t.Cleanup(func() {
		s := l.String()
		key, _ := base64.StdEncoding.DecodeString(string(testSecret[len("whsec_"):]))
		for _, secret := range []string{string(testSecret), string(testSecret[len("whsec_"):]), string(key), secretPath, `"name"`} {
			if strings.Contains(s, secret) {
				t.Errorf("logs contain %q:\n%s", secret, s)
			}
		}
	})
	return l
}

// waitDown waits until the Dispatcher logging to l takes a subscriber as
// down.
func (l *logs) waitDown(t *testing.T) {
	t.Helper()
	testkit.WaitUntil(t, time.Minute, "the subscriber to be taken as down", func() bool {
		return strings.Contains(l.String(), "webhook: subscriber down")
	})
}

// options returns opts after the options every test starts from: log to
// l, at debug level, and poll and back off quickly.
func (l *logs) options(opts []webhook.Option) []webhook.Option {
	return append([]webhook.Option{
		webhook.WithLogger(testkit.NewLogger(l, slog.LevelDebug)),
		webhook.WithPollInterval(20 * time.Millisecond),
		webhook.WithBackoff(time.Millisecond, 10*time.Millisecond),
	}, opts...)
}

// start runs a Dispatcher over source until the test ends or stop is
// called. Its poll interval and backoff are small enough for tests unless
// opts say otherwise.
func start(t *testing.T, source plantstore.Outbox, subscribers []string, opts ...webhook.Option) (d *webhook.Dispatcher, l *logs, stop func()) {
	t.Helper()
	l = newLogs(t)
	d, err := webhook.New(source, subscribers, testSecret, l.options(opts)...)
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run() = %v, want nil", err)
			}
		})
	}
	t.Cleanup(stop)
	return d, l, stop
}

// newPlantStore returns a PlantStore in memory that adds every plant to mo
// and wakes d.
func newPlantStore(mo *webhook.MemoryOutbox, d *webhook.Dispatcher) *plantstore.PlantStore {
	return plantstore.New(memstore.New(),
		plantstore.OnCreate(mo.Add),
		plantstore.OnCreate(func(plantstore.Plant) { d.Notify() }))
}

// notifying returns a PlantStore over s, an outbox itself, that wakes d.
func notifying(s plantstore.Storage, d *webhook.Dispatcher) *plantstore.PlantStore {
	return plantstore.New(s, plantstore.OnCreate(func(plantstore.Plant) { d.Notify() }))
}

func mustCreate(t *testing.T, ps *plantstore.PlantStore, np plantstore.NewPlant) {
	t.Helper()
	if _, err := ps.Create(context.Background(), np); err != nil {
		t.Fatalf("Create(%+v) = %v", np, err)
	}
}

// createRange creates the plants from ids lo to hi-1, named p.
func createRange(t *testing.T, ps *plantstore.PlantStore, lo, hi int64) {
	t.Helper()
	for id := lo; id < hi; id++ {
		mustCreate(t, ps, plantstore.NewPlant{ID: id, Name: "p"})
	}
}

// idRange returns the ids from lo to hi-1.
func idRange(lo, hi int64) []int64 {
	ids := make([]int64, 0, hi-lo)
	for id := lo; id < hi; id++ {
		ids = append(ids, id)
	}
	return ids
}

type depther interface {
	Depth(context.Context) (int, error)
}

// pending returns the depth of o, an outbox or a Dispatcher.
func pending(t *testing.T, o depther) int {
	t.Helper()
	n, err := o.Depth(context.Background())
	if err != nil {
		t.Fatalf("Depth() = %v", err)
	}
	return n
}

func onceEach(n int) func(map[string]int) bool {
	return func(m map[string]int) bool {
		if len(m) != n {
			return false
		}
		for _, c := range m {
			if c != 1 {
				return false
			}
		}
		return true
	}
}

// failingOutbox fails every call, as a storage that cannot be reached does.
type failingOutbox struct{}

var errDown = errors.New("outbox down")

func (failingOutbox) FanOut(context.Context, []string, int) (int, error) { return 0, errDown }
func (failingOutbox) Claim(context.Context, string, string, time.Time, int) ([]plantstore.Delivery, error) {
	return nil, errDown
}
func (failingOutbox) Extend(context.Context, string, string, []int64, time.Time) ([]int64, error) {
	return nil, errDown
}
func (failingOutbox) Retry(context.Context, string, string, []plantstore.Retry) error { return errDown }
func (failingOutbox) Ack(context.Context, string, []int64) error                      { return errDown }
func (failingOutbox) Depth(context.Context) (int, error)                              { return 0, errDown }
func (failingOutbox) Beat(context.Context, string, string, time.Duration) (bool, error) {
	return false, errDown
}
func (failingOutbox) TakeBack(context.Context, string, string) (int, int, error) {
	return 0, 0, errDown
}
func (failingOutbox) EndRun(context.Context, string) (int, error) { return 0, errDown }

// deadOutbox is the outbox as a process that is being killed, or cut off
// from the database, sees it: once dead, no claim, renewal, retry,
// acknowledgement or run record reaches the storage, so that what the
// process held stays leased to it, as after kill -9. With dieAtClaim set,
// it dies as soon as a claim gives it a delivery.
type deadOutbox struct {
	plantstore.Outbox
	dieAtClaim bool
	dead       atomic.Bool
	takeBacks  atomic.Int64 // TakeBack calls that reached the outbox
}

// to returns the outbox a call reaches.
func (o *deadOutbox) to() plantstore.Outbox {
	if o.dead.Load() {
		return failingOutbox{}
	}
	return o.Outbox
}

func (o *deadOutbox) runs() plantstore.OutboxRuns { return o.to().(plantstore.OutboxRuns) }

func (o *deadOutbox) Claim(ctx context.Context, sub, owner string, until time.Time, limit int) ([]plantstore.Delivery, error) {
	ds, err := o.to().Claim(ctx, sub, owner, until, limit)
	if len(ds) > 0 && o.dieAtClaim {
		o.dead.Store(true)
	}
	return ds, err
}

func (o *deadOutbox) Extend(ctx context.Context, sub, owner string, seqs []int64, until time.Time) ([]int64, error) {
	return o.to().Extend(ctx, sub, owner, seqs, until)
}

func (o *deadOutbox) Retry(ctx context.Context, sub, owner string, retries []plantstore.Retry) error {
	return o.to().Retry(ctx, sub, owner, retries)
}

func (o *deadOutbox) Ack(ctx context.Context, sub string, seqs []int64) error {
	return o.to().Ack(ctx, sub, seqs)
}

func (o *deadOutbox) Beat(ctx context.Context, instance, owner string, ttl time.Duration) (bool, error) {
	return o.runs().Beat(ctx, instance, owner, ttl)
}

func (o *deadOutbox) TakeBack(ctx context.Context, instance, owner string) (int, int, error) {
	runs := o.runs()
	if _, failing := runs.(failingOutbox); !failing {
		o.takeBacks.Add(1)
	}
	return runs.TakeBack(ctx, instance, owner)
}

func (o *deadOutbox) EndRun(ctx context.Context, owner string) (int, error) {
	return o.runs().EndRun(ctx, owner)
}

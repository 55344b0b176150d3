package webhook_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/webhook"
)

func TestDeliver(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, ok)
	mo := webhook.NewMemoryOutbox()
	d, _, _ := start(t, mo, []string{rc.url()})
	ps := newPlantStore(mo, d)
	plants := []plantstore.NewPlant{
		{ID: 1, Name: "Monstera"},
		{ID: 2, Name: "Fern", HasTag: true},
		{ID: 3, Name: "Ficus \"lyrata\" 🌿", Tag: "<indoor>", HasTag: true},
	}
	for _, np := range plants {
		mustCreate(t, ps, np)
	}
	testkit.WaitUntil(t, time.Minute, "the outbox to empty", func() bool { return mo.Len() == 0 })

	want := []string{}
	for _, np := range plants {
		want = append(want, string(webhook.Payload(plantstore.Plant(np))))
	}
	rc.mu.Lock()
	got := []string{}
	for _, b := range rc.bodies {
		got = append(got, b)
	}
	rc.mu.Unlock()
	slices.Sort(want)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("bodies received mismatch (-want +got):\n%s", diff)
	}
	attempts, delivered, _ := rc.stats()
	if diff := cmp.Diff(attempts, delivered); diff != "" || !onceEach(len(plants))(delivered) {
		t.Errorf("deliveries by webhook-id = %v, attempts %v, want each of %d once", delivered, attempts, len(plants))
	}
}

func TestRetryUntilSuccess(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(_ http.ResponseWriter, _ *http.Request, attempt int) int {
		if attempt <= 3 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	mo := webhook.NewMemoryOutbox()
	d, l, _ := start(t, mo, []string{rc.url()})
	mustCreate(t, newPlantStore(mo, d), plantstore.NewPlant{ID: 1, Name: "Monstera"})
	testkit.WaitUntil(t, time.Minute, "the outbox to empty", func() bool { return mo.Len() == 0 })

	attempts, delivered, _ := rc.stats()
	if len(attempts) != 1 {
		t.Fatalf("attempts by webhook-id = %v, want one id: retries keep the id", attempts)
	}
	for id, n := range attempts {
		if n != 4 || delivered[id] != 1 {
			t.Errorf("%s: %d attempts, %d delivered; want 4 attempts, the last delivered", id, n, delivered[id])
		}
	}
	if got := strings.Count(l.String(), "delivery attempt failed"); got != 3 {
		t.Errorf("logged %d failed attempts, want 3", got)
	}
}

func TestDeadSubscriber(t *testing.T) {
	t.Parallel()
	// dead never answers; it lets go only when the attempt times out.
	dead := newReceiver(t, func(_ http.ResponseWriter, r *http.Request, _ int) int {
		<-r.Context().Done()
		return http.StatusServiceUnavailable
	})
	live := newReceiver(t, ok)
	const n, concurrency = 200, 2
	tr := &countingTransport{base: http.DefaultTransport.(*http.Transport).Clone(), host: dead.srv.Listener.Addr().String()}
	mo := webhook.NewMemoryOutbox()
	d, l, _ := start(t, mo, []string{dead.url(), live.url()},
		webhook.WithClient(&http.Client{Transport: tr}),
		webhook.WithAttemptTimeout(200*time.Millisecond),
		webhook.WithConcurrency(concurrency),
		webhook.WithMaxInFlight(10),
		webhook.WithMaxAge(time.Hour))
	ps := newPlantStore(mo, d)
	// Creates, and so Add and Notify, complete while dead holds every
	// worker it is allowed.
	for id := range int64(n) {
		mustCreate(t, ps, plantstore.NewPlant{ID: id, Name: "p"})
		d.Notify()
	}
	testkit.WaitUntil(t, time.Minute, "live to receive every event", func() bool {
		_, delivered, _ := live.stats()
		return len(delivered) == n
	})
	testkit.WaitUntil(t, time.Minute, "dead to time out an attempt", func() bool {
		attempts, _, _ := dead.stats()
		return len(attempts) > 0
	})

	// An attempt to live may time out after live handled it, on a loaded
	// machine; only then may live receive an event twice.
	liveAttempts, _, _ := live.stats()
	for id, n := range liveAttempts {
		if failed := "subscriber_index=1 webhook-id=" + id; n > 1 && !strings.Contains(l.String(), failed) {
			t.Errorf("live received %s %d times, and no attempt of it failed", id, n)
		}
	}
	if got := tr.maxActive.Load(); got > concurrency {
		t.Errorf("%d attempts to dead at once, want at most Concurrency, %d", got, concurrency)
	}
	_, delivered, _ := dead.stats()
	if len(delivered) != 0 {
		t.Errorf("dead delivered %v, want none", delivered)
	}
	if got := mo.Len(); got != n {
		t.Errorf("outbox holds %d events, want all %d: dead has not received them", got, n)
	}
}

// countingTransport counts the requests to host in flight at once.
type countingTransport struct {
	base              http.RoundTripper
	host              string
	active, maxActive atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host != c.host {
		return c.base.RoundTrip(r)
	}
	n := c.active.Add(1)
	defer c.active.Add(-1)
	for {
		m := c.maxActive.Load()
		if n <= m || c.maxActive.CompareAndSwap(m, n) {
			break
		}
	}
	return c.base.RoundTrip(r)
}

// TestMaxAgeAbandons fails an event's first attempt to two subscribers,
// one answering 500 and one redirecting to a receiver of its own: with the
// event past its max age, each failure abandons it, the redirect is not
// followed, and a third subscriber, live, gets it once.
func TestMaxAgeAbandons(t *testing.T) {
	t.Parallel()
	failing := newReceiver(t, func(http.ResponseWriter, *http.Request, int) int { return http.StatusInternalServerError })
	target := newReceiver(t, ok)
	redirect := newReceiver(t, func(w http.ResponseWriter, r *http.Request, _ int) int {
		w.Header().Set("Location", target.url())
		return http.StatusTemporaryRedirect
	})
	live := newReceiver(t, ok)
	mo := webhook.NewMemoryOutbox()
	// The first failure abandons the event: a subscriber that fails ten in
	// a row is taken as down, and a failure then never abandons.
	d, l, _ := start(t, mo, []string{failing.url(), redirect.url(), live.url()}, webhook.WithMaxAge(time.Nanosecond))
	mustCreate(t, newPlantStore(mo, d), plantstore.NewPlant{ID: 1, Name: "Monstera"})
	testkit.WaitUntil(t, time.Minute, "the event to be deleted", func() bool { return mo.Len() == 0 })

	for name, rc := range map[string]*receiver{"failing": failing, "redirecting": redirect} {
		if attempts, delivered, _ := rc.stats(); len(attempts) != 1 || len(delivered) != 0 {
			t.Errorf("%s subscriber: attempts %v, delivered %v; want attempts for one id, none delivered", name, attempts, delivered)
		}
	}
	if attempts, _, _ := target.stats(); len(attempts) != 0 {
		t.Errorf("redirect target received %v, want nothing", attempts)
	}
	if _, delivered, _ := live.stats(); !onceEach(1)(delivered) {
		t.Errorf("live deliveries %v, want one", delivered)
	}
	if !strings.Contains(l.String(), "status 307") {
		t.Errorf("logs do not report the 307:\n%s", l)
	}
	if got := strings.Count(l.String(), "abandoned"); got != 2 {
		t.Errorf("logged %d abandonments, want 2:\n%s", got, l)
	}
}

func TestManyConcurrentCreates(t *testing.T) {
	t.Parallel()
	const goroutines, perGoroutine = 20, 100
	const n = goroutines * perGoroutine
	a, b := newReceiver(t, ok), newReceiver(t, ok)
	mo := webhook.NewMemoryOutbox()
	d, _, _ := start(t, mo, []string{a.url(), b.url()}, webhook.WithMaxInFlight(300))
	ps := newPlantStore(mo, d)
	var wg sync.WaitGroup
	var failed atomic.Int64
	for g := range goroutines {
		wg.Go(func() {
			for i := range perGoroutine {
				np := plantstore.NewPlant{ID: int64(g*perGoroutine + i + 1), Name: "p"}
				if _, err := ps.Create(context.Background(), np); err != nil {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() != 0 {
		t.Fatalf("%d creates failed", failed.Load())
	}
	testkit.WaitUntil(t, time.Minute, "the outbox to empty", func() bool { return mo.Len() == 0 })

	want := make([]int64, n)
	for i := range want {
		want[i] = int64(i + 1)
	}
	for _, rc := range []*receiver{a, b} {
		attempts, delivered, _ := rc.stats()
		if !onceEach(n)(attempts) || !onceEach(n)(delivered) {
			t.Errorf("%d webhook-ids received; want %d, each sent and delivered once", len(attempts), n)
		}
		if diff := cmp.Diff(want, rc.plantIDs(t)); diff != "" {
			t.Errorf("plant ids received mismatch (-want +got):\n%s", diff)
		}
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

func TestOutboxFailureIsLogged(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, ok)
	_, l, stop := start(t, failingOutbox{}, []string{rc.url()})
	testkit.WaitUntil(t, time.Minute, "the failure to be logged", func() bool { return strings.Contains(l.String(), errDown.Error()) })
	stop()
}

func TestRunTwice(t *testing.T) {
	t.Parallel()
	d, err := webhook.New(webhook.NewMemoryOutbox(), []string{"http://127.0.0.1:1/"}, testSecret)
	if err != nil {
		t.Fatalf("New() = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := d.Run(ctx); err != nil {
		t.Fatalf("Run() = %v, want nil once ctx is done", err)
	}
	if err := d.Run(ctx); !errors.Is(err, webhook.ErrRunning) {
		t.Errorf("second Run() = %v, want ErrRunning", err)
	}
}

func TestNewRejects(t *testing.T) {
	t.Parallel()
	good := "https://example.com/hooks"
	tests := []struct {
		name    string
		subs    []string
		secret  []byte
		opts    []webhook.Option
		wantErr error
	}{
		{name: "no subscribers", secret: testSecret},
		{name: "relative URL", secret: testSecret, subs: []string{"/hooks"}},
		{name: "no host", secret: testSecret, subs: []string{"http:///hooks"}},
		{name: "other scheme", secret: testSecret, subs: []string{"ftp://example.com/hooks"}},
		{name: "malformed URL", secret: testSecret, subs: []string{"http://exa mple.com/%zz"}},
		{name: "one bad among good", secret: testSecret, subs: []string{good, "example.com"}},
		// Which secrets are refused is TestCheckSecret's; New checks with
		// CheckSecret.
		{name: "short secret", secret: []byte("5byte"), subs: []string{good}, wantErr: webhook.ErrSecret},
		{name: "negative timeout", secret: testSecret, subs: []string{good}, opts: []webhook.Option{webhook.WithAttemptTimeout(-1)}},
		{name: "negative concurrency", secret: testSecret, subs: []string{good}, opts: []webhook.Option{webhook.WithConcurrency(-1)}},
		{name: "negative backoff", secret: testSecret, subs: []string{good}, opts: []webhook.Option{webhook.WithBackoff(-1, time.Second)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := webhook.New(webhook.NewMemoryOutbox(), tt.subs, tt.secret, tt.opts...)
			if err == nil {
				t.Fatalf("New() = %v, nil; want an error", d)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("New() = %v, want %v", err, tt.wantErr)
			}
		})
	}
	if _, err := webhook.New(webhook.NewMemoryOutbox(), []string{good, "http://127.0.0.1:8080"}, []byte("raw key bytes, 24 or more")); err != nil {
		t.Errorf("New() with a valid config = %v", err)
	}
}

// TestSetSecret checks that the attempts after SetSecret are signed with
// the new secret, and that a secret New would refuse leaves the old one.
func TestSetSecret(t *testing.T) {
	t.Parallel()
	newSecret := []byte("whsec_" + base64.StdEncoding.EncodeToString([]byte("plantstore rotated key 0123456789")))
	var mu sync.Mutex
	signedWith := map[int64]string{} // plant id: "old", "new" or "neither"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var p struct{ ID int64 }
		json.Unmarshal(body, &p)
		which := "neither"
		if webhook.Verify(testSecret, r.Header, body, time.Now(), 0) == nil {
			which = "old"
		} else if webhook.Verify(newSecret, r.Header, body, time.Now(), 0) == nil {
			which = "new"
		}
		mu.Lock()
		signedWith[p.ID] = which
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	mo := webhook.NewMemoryOutbox()
	d, _, _ := start(t, mo, []string{srv.URL})
	ps := newPlantStore(mo, d)
	deliver := func(id int64) {
		t.Helper()
		mustCreate(t, ps, plantstore.NewPlant{ID: id, Name: "Fern"})
		testkit.WaitUntil(t, time.Minute, fmt.Sprintf("the delivery of plant %d", id), func() bool {
			mu.Lock()
			defer mu.Unlock()
			_, ok := signedWith[id]
			return ok
		})
	}
	deliver(1)
	if err := d.SetSecret([]byte("short")); !errors.Is(err, webhook.ErrSecret) {
		t.Errorf("SetSecret(a short secret) = %v, want ErrSecret", err)
	}
	deliver(2)
	if err := d.SetSecret(newSecret); err != nil {
		t.Fatalf("SetSecret = %v", err)
	}
	deliver(3)
	mu.Lock()
	defer mu.Unlock()
	want := map[int64]string{1: "old", 2: "old", 3: "new"}
	if diff := cmp.Diff(want, signedWith); diff != "" {
		t.Errorf("secret each delivery was signed with (-want +got):\n%s", diff)
	}
}

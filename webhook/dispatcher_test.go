package webhook_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
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

	attempts, delivered := rc.stats()
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
	dead, _ := newGateReceiver(t) // never opened: it lets go only when the attempt times out
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
	// Creates, and so Add and Notify, complete while dead holds every
	// worker it is allowed.
	createRange(t, newPlantStore(mo, d), 0, n)
	live.waitDelivered(t, n)
	testkit.WaitUntil(t, time.Minute, "dead to time out an attempt", func() bool { return dead.total() > 0 })

	// An attempt to live may time out after live handled it, on a loaded
	// machine; only then may live receive an event twice.
	liveAttempts, _ := live.stats()
	for id, n := range liveAttempts {
		if failed := "subscriber_index=1 webhook-id=" + id; n > 1 && !strings.Contains(l.String(), failed) {
			t.Errorf("live received %s %d times, and no attempt of it failed", id, n)
		}
	}
	if got := tr.maxActive.Load(); got > concurrency {
		t.Errorf("%d attempts to dead at once, want at most Concurrency, %d", got, concurrency)
	}
	if _, delivered := dead.stats(); len(delivered) != 0 {
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

// TestDeliver creates plants from many goroutines at once, and checks that
// each subscriber receives each plant once, in one attempt, its body the
// plant's Payload, whatever its name and tag hold.
func TestDeliver(t *testing.T) {
	t.Parallel()
	const goroutines, perGoroutine = 20, 100
	const n = goroutines * perGoroutine
	a, b := newReceiver(t, ok), newReceiver(t, ok)
	mo := webhook.NewMemoryOutbox()
	d, _, _ := start(t, mo, []string{a.url(), b.url()}, webhook.WithMaxInFlight(300))
	ps := newPlantStore(mo, d)
	plants := []plantstore.NewPlant{
		{ID: n + 1, Name: "Monstera"},
		{ID: n + 2, Name: "Fern", HasTag: true},
		{ID: n + 3, Name: "Ficus \"lyrata\" 🌿", Tag: "<indoor>", HasTag: true},
	}
	for _, np := range plants {
		mustCreate(t, ps, np)
	}
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

	want := []string{}
	for id := range int64(n) {
		want = append(want, string(webhook.Payload(plantstore.Plant{ID: id + 1, Name: "p"})))
	}
	for _, np := range plants {
		want = append(want, string(webhook.Payload(plantstore.Plant(np))))
	}
	slices.Sort(want)
	for _, rc := range []*receiver{a, b} {
		attempts, delivered := rc.stats()
		if !onceEach(len(want))(attempts) || !onceEach(len(want))(delivered) {
			t.Errorf("%d webhook-ids received; want %d, each sent and delivered once", len(attempts), len(want))
		}
		rc.mu.Lock()
		got := slices.Sorted(maps.Values(rc.bodies))
		rc.mu.Unlock()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("bodies received mismatch (-want +got):\n%s", diff)
		}
	}
}

func TestOutboxFailureIsLogged(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, ok)
	_, l, stop := start(t, failingOutbox{}, []string{rc.url()})
	testkit.WaitUntil(t, time.Minute, "the failure to be logged", func() bool { return strings.Contains(l.String(), errDown.Error()) })
	stop()
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

// TestRotateSecret checks that the attempts after SetSecret, or after a
// ReloadSecretFile that changed the key, are signed with the new secret;
// that a secret New would refuse leaves the old one; and that reloading
// the key in use changes nothing.
func TestRotateSecret(t *testing.T) {
	t.Parallel()
	secrets := map[string][]byte{"old": testSecret}
	for _, name := range []string{"set", "reloaded"} {
		secrets[name] = []byte("whsec_" + base64.StdEncoding.EncodeToString([]byte("plantstore "+name+" key 0123456789abcdefghij")))
	}
	var mu sync.Mutex
	signedWith := map[int64]string{} // plant id: the name of the secret that verifies it
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var p struct{ ID int64 }
		json.Unmarshal(body, &p)
		mu.Lock()
		defer mu.Unlock()
		signedWith[p.ID] = "none"
		for name, secret := range secrets {
			if webhook.Verify(secret, r.Header, body, time.Now(), 0) == nil {
				signedWith[p.ID] = name
			}
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	mo := webhook.NewMemoryOutbox()
	d, _, _ := start(t, mo, []string{srv.URL})
	ps := newPlantStore(mo, d)
	file := filepath.Join(t.TempDir(), "secret")
	set := func(secret string) (bool, error) {
		err := d.SetSecret([]byte(secret))
		return err == nil, err
	}
	reload := func(contents string) (bool, error) {
		testkit.WriteFile(t, file, contents)
		return d.ReloadSecretFile(file, nil)
	}
	want := map[int64]string{}
	for id, tt := range []struct {
		swap        func(string) (bool, error)
		secret      string
		wantChanged bool
		wantErr     error
		want        string // the secret the next delivery is signed with
	}{
		{set, "short", false, webhook.ErrSecret, "old"},
		{reload, string(testSecret) + "\n", false, nil, "old"},
		{reload, "short", false, webhook.ErrSecret, "old"},
		{set, string(secrets["set"]), true, nil, "set"},
		{reload, string(secrets["reloaded"]) + "\n", true, nil, "reloaded"},
		{reload, string(secrets["reloaded"]), false, nil, "reloaded"},
	} {
		if changed, err := tt.swap(tt.secret); changed != tt.wantChanged || !errors.Is(err, tt.wantErr) {
			t.Errorf("step %d: swap to %q = %v, %v; want %v, %v", id, tt.secret, changed, err, tt.wantChanged, tt.wantErr)
		}
		want[int64(id)] = tt.want
		mustCreate(t, ps, plantstore.NewPlant{ID: int64(id), Name: "Fern"})
		testkit.WaitUntil(t, time.Minute, fmt.Sprintf("the delivery of plant %d", id), func() bool {
			mu.Lock()
			defer mu.Unlock()
			_, ok := signedWith[int64(id)]
			return ok
		})
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, signedWith); diff != "" {
		t.Errorf("secret each delivery was signed with (-want +got):\n%s", diff)
	}
}

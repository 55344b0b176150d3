package webhook_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
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
	active    int
	maxActive int
}

func ok(http.ResponseWriter, *http.Request, int) int { return http.StatusNoContent }

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
	rc.active++
	rc.maxActive = max(rc.maxActive, rc.active)
	rc.mu.Unlock()

	status := rc.respond(w, r, attempt)

	rc.mu.Lock()
	rc.active--
	if status >= 200 && status <= 299 {
		rc.delivered[id]++
	}
	rc.mu.Unlock()
	w.WriteHeader(status)
}

// stats returns a copy of what rc counted.
func (rc *receiver) stats() (attempts, delivered map[string]int, maxActive int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return maps(rc.attempts), maps(rc.delivered), rc.maxActive
}

// total returns the number of attempts received, every event together.
func (rc *receiver) total() int {
	attempts, _, _ := rc.stats()
	sum := 0
	for _, c := range attempts {
		sum += c
	}
	return sum
}

func maps(m map[string]int) map[string]int {
	c := make(map[string]int, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// plantIDs returns the plant ids of the bodies rc received, ascending.
func (rc *receiver) plantIDs(t *testing.T) []int64 {
	t.Helper()
	return rc.ids(t, func(string) bool { return true })
}

// deliveredIDs returns the plant ids of the bodies rc answered with a
// 2xx, ascending.
func (rc *receiver) deliveredIDs(t *testing.T) []int64 {
	t.Helper()
	return rc.ids(t, func(id string) bool { return rc.delivered[id] > 0 })
}

// ids returns the plant ids of the bodies of the webhook-ids keep
// accepts, ascending. keep is called with rc.mu held.
func (rc *receiver) ids(t *testing.T, keep func(webhookID string) bool) []int64 {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	ids := []int64{}
	for id, b := range rc.bodies {
		if !keep(id) {
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

// start runs a Dispatcher over source until the test ends or stop is
// called. Its poll interval and backoff are small enough for tests unless
// opts say otherwise.
func start(t *testing.T, source plantstore.Outbox, subscribers []string, opts ...webhook.Option) (d *webhook.Dispatcher, l *logs, stop func()) {
	t.Helper()
	l = newLogs(t)
	opts = append([]webhook.Option{
		webhook.WithLogger(slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))),
		webhook.WithPollInterval(20 * time.Millisecond),
		webhook.WithBackoff(time.Millisecond, 10*time.Millisecond),
	}, opts...)
	d, err := webhook.New(source, subscribers, testSecret, opts...)
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

func mustCreate(t *testing.T, ps *plantstore.PlantStore, np plantstore.NewPlant) {
	t.Helper()
	if _, err := ps.Create(context.Background(), np); err != nil {
		t.Fatalf("Create(%+v) = %v", np, err)
	}
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

package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/sqlstore"
	"github.com/plantstore/plantstore/webhook"
)

const fleetSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// A hookCounter is a webhook receiver that verifies every delivery and
// counts, by webhook-id, the deliveries it answered with a 2xx.
type hookCounter struct {
	srv *httptest.Server
	// hold, while not nil, keeps each request waiting until it is closed
	// or the sender goes away.
	hold chan struct{}

	mu       sync.Mutex
	answered map[string]int   // 2xx answers by webhook-id
	plants   map[string]int64 // plant id by webhook-id
	active   int              // requests being handled
	seen     int              // requests received
	bad      []string
}

func newHookCounter(t *testing.T, hold chan struct{}) *hookCounter {
	t.Helper()
	h := &hookCounter{hold: hold, answered: map[string]int{}, plants: map[string]int64{}}
	h.srv = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(func() {
		h.srv.Close()
		for _, b := range h.bad {
			t.Errorf("receiver: %s", b)
		}
	})
	return h
}

func (h *hookCounter) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	h.mu.Lock()
	h.seen++
	h.active++
	hold := h.hold
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.active--
		h.mu.Unlock()
	}()
	if err == nil {
		err = webhook.Verify([]byte(fleetSecret), r.Header, body, time.Now(), 0)
	}
	var p struct{ ID int64 }
	if err == nil {
		err = json.Unmarshal(body, &p)
	}
	if err != nil {
		h.mu.Lock()
		h.bad = append(h.bad, err.Error())
		h.mu.Unlock()
		http.Error(w, "bad delivery", http.StatusBadRequest)
		return
	}
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return // the sender is gone: nothing was delivered
		}
	}
	id := r.Header.Get(webhook.HeaderID)
	h.mu.Lock()
	h.answered[id]++
	h.plants[id] = p.ID
	h.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// counts returns the distinct plant ids delivered, and the webhook-ids
// answered more than once, counted once per extra delivery.
func (h *hookCounter) counts() (plants map[int64]bool, duplicates int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	plants = map[int64]bool{}
	for id, n := range h.answered {
		plants[h.plants[id]] = true
		duplicates += n - 1
	}
	return plants, duplicates
}

// secretFile writes the webhook secret to a file for -webhook-secret-file.
func secretFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(path, []byte(fleetSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// openSQLiteFile opens the SQLite file at path, which a binary under
// test uses, as another process would; it is closed in t.Cleanup.
func openSQLiteFile(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", sqlstore.SQLiteDSN(path))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// outboxRows returns the events and the deliveries left in the outbox of
// the database at dsn.
func outboxRows(t *testing.T, db *sql.DB) (events, deliveries int) {
	t.Helper()
	if err := db.QueryRow(`SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM webhook_deliveries)`).Scan(&events, &deliveries); err != nil {
		t.Fatalf("read the outbox: %v", err)
	}
	return events, deliveries
}

// createSpread creates plants first…first+n-1 over the processes in turn,
// 16 at a time.
func createSpread(t *testing.T, procs []*testkit.Process, first int64, n int) {
	t.Helper()
	var wg sync.WaitGroup
	ids := make(chan int64)
	for range 16 {
		wg.Go(func() {
			for id := range ids {
				p := procs[int(id)%len(procs)]
				if status, code, err := create(p.URL, id, fmt.Sprint("plant-", id)); err != nil || status != 200 {
					t.Errorf("create %d on %s: status %d code %d, %v", id, p.URL, status, code, err)
				}
			}
		})
	}
	for i := range int64(n) {
		ids <- first + i
	}
	close(ids)
	wg.Wait()
}

// TestFleetDeliversEachWebhookOnce runs three binaries on one PostgreSQL
// schema, all with the same subscriber, and checks that 600 creates spread
// over them reach the subscriber once each.
func TestFleetDeliversEachWebhookOnce(t *testing.T) {
	t.Parallel()
	dsn := postgresDSN(t)
	rc := newHookCounter(t, nil)
	secret := secretFile(t)
	args := []string{"-db", dsn, "-log-level", "warn", "-webhook", rc.srv.URL + "/hooks", "-webhook-secret-file", secret}
	procs := []*testkit.Process{startProcess(t, args...), startProcess(t, args...), startProcess(t, args...)}

	const n = 600
	createSpread(t, procs, 1, n)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Once the outbox is empty, no delivery is pending anywhere, so no
	// duplicate can still arrive.
	testkit.WaitUntil(t, 2*time.Minute, "the outbox to empty", func() bool {
		events, deliveries := outboxRows(t, db)
		return events == 0 && deliveries == 0
	})
	plants, dups := rc.counts()
	rc.mu.Lock()
	requests := rc.seen
	rc.mu.Unlock()
	t.Logf("3 binaries, one PostgreSQL schema, %d creates: %d requests, %d plants delivered, %d duplicate deliveries, %d lost",
		n, requests, len(plants), dups, n-len(plants))
	if len(plants) != n {
		t.Errorf("%d of %d plants delivered", len(plants), n)
	}
	if dups != 0 {
		t.Errorf("%d duplicate deliveries, want 0", dups)
	}
	for _, p := range procs {
		select {
		case <-p.Exited():
			t.Errorf("a binary exited: %v\n%s", p.Err(), p.Stderr)
		default:
		}
	}
}

// TestFleetRedeliversAfterKill SIGKILLs a binary while it holds claimed
// deliveries that the subscriber has not answered, and checks that another
// binary on the same database delivers every event once the leases expire.
func TestFleetRedeliversAfterKill(t *testing.T) {
	t.Parallel()
	dsn := postgresDSN(t)
	hold := make(chan struct{})
	rc := newHookCounter(t, hold)
	secret := secretFile(t)
	const lease = 2 * time.Second
	args := []string{"-db", dsn, "-log-level", "warn", "-webhook", rc.srv.URL + "/hooks",
		"-webhook-secret-file", secret, "-webhook-lease", lease.String()}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	a := startProcess(t, args...)
	const n = 50
	createSpread(t, []*testkit.Process{a}, 1, n)
	// a has claimed deliveries and sent some; the receiver holds them.
	var leased int
	testkit.WaitUntil(t, time.Minute, "a to hold leased deliveries in flight", func() bool {
		rc.mu.Lock()
		active := rc.active
		rc.mu.Unlock()
		err := db.QueryRow(`SELECT count(*) FROM webhook_deliveries WHERE lease_us > $1`, time.Now().UnixMicro()).Scan(&leased)
		if err != nil {
			t.Fatal(err)
		}
		return active > 0 && leased > 0
	})
	rc.mu.Lock()
	inFlight := rc.active
	rc.mu.Unlock()
	a.Cmd.Process.Signal(syscall.SIGKILL)
	<-a.Exited()
	// The receiver lets go of a's requests as their connections close,
	// without answering them; from then on it answers at once.
	testkit.WaitUntil(t, time.Minute, "the receiver to drop a's requests", func() bool {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		return rc.active == 0
	})
	rc.mu.Lock()
	rc.hold = nil
	rc.mu.Unlock()
	close(hold)
	if plants, _ := rc.counts(); len(plants) != 0 {
		t.Fatalf("%d plants delivered before the kill, want none: the receiver held every request", len(plants))
	}

	killed := time.Now()
	startProcess(t, args...)
	testkit.WaitUntil(t, time.Minute, "b to deliver every event", func() bool {
		plants, _ := rc.counts()
		return len(plants) == n
	})
	after := time.Since(killed)
	plants, dups := rc.counts()
	t.Logf("SIGKILL with %d deliveries leased (%d in flight at the receiver), lease %v: the second binary delivered %d of %d events within %v of the kill; %d lost, %d duplicates",
		leased, inFlight, lease, len(plants), n, after.Round(100*time.Millisecond), n-len(plants), dups)
	testkit.WaitUntil(t, time.Minute, "the outbox to empty", func() bool {
		events, deliveries := outboxRows(t, db)
		return events == 0 && deliveries == 0
	})
}

// TestTwoBinariesOnOneSQLiteFile runs two binaries on one SQLite file, with
// the same subscriber, and checks that they share the outbox: each create
// is delivered once.
func TestTwoBinariesOnOneSQLiteFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "plants.db")
	rc := newHookCounter(t, nil)
	args := []string{"-db", path, "-log-level", "warn", "-webhook", rc.srv.URL + "/hooks", "-webhook-secret-file", secretFile(t)}
	procs := []*testkit.Process{startProcess(t, args...), startProcess(t, args...)}

	const n = 200
	createSpread(t, procs, 1, n)
	db := openSQLiteFile(t, path)
	testkit.WaitUntil(t, 2*time.Minute, "the outbox to empty", func() bool {
		events, deliveries := outboxRows(t, db)
		return events == 0 && deliveries == 0
	})
	plants, dups := rc.counts()
	t.Logf("2 binaries, one SQLite file, %d creates: %d plants delivered, %d duplicate deliveries, %d lost", n, len(plants), dups, n-len(plants))
	if len(plants) != n || dups != 0 {
		t.Errorf("%d of %d plants delivered, %d duplicates; want all, none", len(plants), n, dups)
	}
}

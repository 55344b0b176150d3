package webhook_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	_ "modernc.org/sqlite"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/sqlstore"
	"github.com/plantstore/plantstore/webhook"
)

// openSQLite opens the Store with an outbox over the SQLite file at path,
// closed at the end of the test.
func openSQLite(t *testing.T, path string, opts ...sqlstore.Option) *sqlstore.Store {
	t.Helper()
	s, err := sqlstore.OpenSQLite(context.Background(), "sqlite", path, append([]sqlstore.Option{sqlstore.WithOutbox()}, opts...)...)
	if err != nil {
		t.Fatalf("sqlstore.OpenSQLite() = %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestRestartRedeliversPending(t *testing.T) {
	t.Parallel()
	const n = 5
	rc, down := newDownReceiver(t)
	path := filepath.Join(t.TempDir(), "plants.db")
	subs := []string{rc.url()}

	// The first process creates plants while the receiver is down, then
	// stops before any is delivered.
	s1 := openSQLite(t, path)
	d1, _, stop1 := start(t, s1, subs)
	ps := notifying(s1, d1)
	for id := range int64(n) {
		mustCreate(t, ps, plantstore.NewPlant{ID: id + 1, Name: "Fern", Tag: "✓", HasTag: true})
	}
	rc.waitAttempted(t, n)
	stop1()
	s1.Close()
	firstIDs, _ := rc.stats()

	// The second process finds the events in the outbox and delivers them
	// under the same webhook-ids.
	down.Store(false)
	s2 := openSQLite(t, path)
	if got := pending(t, s2); got != n {
		t.Fatalf("after the restart %d events are pending, want %d", got, n)
	}
	start(t, s2, subs)
	testkit.WaitUntil(t, time.Minute, "the outbox to empty", func() bool { return pending(t, s2) == 0 })

	attempts, delivered := rc.stats()
	if !onceEach(n)(delivered) {
		t.Errorf("deliveries by webhook-id = %v, want each of %d once", delivered, n)
	}
	for id := range attempts {
		if _, ok := firstIDs[id]; !ok {
			t.Errorf("webhook-id %s is new after the restart; want the ids of the first attempts, %v", id, firstIDs)
		}
	}
	if diff := cmp.Diff(idRange(1, n+1), rc.ids(t, false)); diff != "" {
		t.Errorf("plant ids received mismatch (-want +got):\n%s", diff)
	}
}

// TestRestartTakesBackItsLeases stops a Dispatcher while it holds
// deliveries leased for an hour, the subscriber holding some requests and
// more deliveries waiting behind them, and checks that a second
// Dispatcher on the same outbox delivers them rather than wait for the
// hour: at once when the first stopped cleanly and handed them back.
// When the first, of a named instance (WithInstance), was killed, a
// Dispatcher started for the same instance, as the same process
// restarted, takes them back, and another process is not given them:
// once the killed run's record has expired and the restarted one has
// renewed its own for as long, a second each; or at once, before the
// record expires, an hour later, when the run lock (WithRunLock) the
// killed run held shows it gone.
func TestRestartTakesBackItsLeases(t *testing.T) {
	t.Parallel()
	const instance = "plantstore host-1 10.0.0.1:8080"
	for _, tt := range []struct {
		name    string
		opts    func(lock string) []webhook.Option
		killed  bool
		knownBy string
	}{
		{"clean stop", func(string) []webhook.Option { return nil }, false, ""},
		{"record expired", func(string) []webhook.Option {
			return []webhook.Option{webhook.WithInstance(instance), webhook.WithHeartbeat(time.Second)}
		}, true, ""},
		{"run lock", func(lock string) []webhook.Option {
			return []webhook.Option{webhook.WithInstance(instance), webhook.WithHeartbeat(time.Hour), webhook.WithRunLock(lock)}
		}, true, "known_gone_by=\"run lock\""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			const n = 20
			rc, open := newGateReceiver(t)
			dir := t.TempDir()
			s := openSQLite(t, filepath.Join(dir, "plants.db"))
			subs := []string{rc.url()}
			opts := append(tt.opts(filepath.Join(dir, "run.lock")), webhook.WithLease(time.Hour))
			dying := &deadOutbox{Outbox: s}
			d1, _, stop1 := start(t, dying, subs, append(opts, webhook.WithConcurrency(4))...)
			createRange(t, notifying(s, d1), 0, n)
			rc.waitAttempted(t, 4) // held by the subscriber
			waitAllClaimed(t, s, rc, n)
			dying.dead.Store(tt.killed)
			stop1() // killed, its hand-back fails: the leases stay with the killed run; its run lock ends
			open()

			_, l, _ := start(t, s, subs, opts...)
			testkit.WaitUntil(t, time.Minute, "the second Dispatcher to deliver every event", func() bool { return pending(t, s) == 0 })
			if got := l.String(); tt.killed && (!strings.Contains(got, "took back the deliveries this instance's previous run held") || !strings.Contains(got, tt.knownBy)) {
				t.Errorf("the restarted Dispatcher did not log that it took back its deliveries (%s):\n%s", tt.knownBy, got)
			}
			if diff := cmp.Diff(idRange(0, n), rc.ids(t, true)); diff != "" {
				t.Errorf("plants delivered (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLiveTwinKeepsItsLeases starts a second Dispatcher for the instance
// of one that runs and holds every delivery, as two containers of one
// service with one host name and address do, and checks that the second
// never takes the first's deliveries: each is delivered once, by the
// first. When both claimed under the instance's name, the second took
// back the first's leases as a restart would, and delivered them again.
func TestLiveTwinKeepsItsLeases(t *testing.T) {
	t.Parallel()
	const n, instance = 20, "plantstore twin [::]:8080"
	rc, release := newGateReceiver(t)
	s := openSQLite(t, filepath.Join(t.TempDir(), "plants.db"))
	subs := []string{rc.url()}
	// Both on one run lock file, as on one host: the second cannot take it.
	opts := []webhook.Option{webhook.WithInstance(instance), webhook.WithHeartbeat(2 * time.Second), webhook.WithLease(time.Hour),
		webhook.WithConcurrency(4), webhook.WithAttemptTimeout(time.Minute), webhook.WithRunLock(filepath.Join(t.TempDir(), "run.lock"))}
	d1, l1, _ := start(t, s, subs, opts...)
	createRange(t, notifying(s, d1), 0, n)
	rc.waitAttempted(t, 4) // held by the subscriber
	waitAllClaimed(t, s, rc, n)

	_, l2, _ := start(t, s, subs, opts...)
	// Once the second has renewed its record for as long as a record
	// lives, it takes back what expired, and knows the first for a live
	// twin.
	testkit.WaitUntil(t, time.Minute, "the second Dispatcher to find the first alive", func() bool {
		return strings.Contains(l2.String(), "other live runs share this instance's name")
	})
	release()
	checkTwinsDeliveredOnce(t, s, rc, n, l1, l2)
}

// TestOutageTakesNoLiveTwinsLeases runs two live Dispatchers of one
// instance, each over its own Store on one SQLite file as two processes
// would, cuts both, each holding deliveries, off the outbox for longer
// than their records live, as an outage of the database does, then gives
// it back to both at once, and checks that neither takes the other's
// deliveries: each is attempted once.
func TestOutageTakesNoLiveTwinsLeases(t *testing.T) {
	t.Parallel()
	const n, instance, heartbeat = 20, "plantstore twin [::]:8080", 2 * time.Second
	rc, release := newGateReceiver(t)
	path := filepath.Join(t.TempDir(), "plants.db")
	s := openSQLite(t, path)
	db, err := sql.Open("sqlite", sqlstore.SQLiteDSN(path))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	subs := []string{rc.url()}
	opts := []webhook.Option{webhook.WithInstance(instance), webhook.WithHeartbeat(heartbeat), webhook.WithLease(time.Hour),
		webhook.WithConcurrency(4), webhook.WithMaxInFlight(n / 2), webhook.WithAttemptTimeout(time.Minute)}
	w1, w2 := &deadOutbox{Outbox: s}, &deadOutbox{Outbox: openSQLite(t, path)}
	d1, l1, _ := start(t, w1, subs, opts...)
	_, l2, _ := start(t, w2, subs, opts...)
	createRange(t, notifying(s, d1), 0, n)
	rc.waitAttempted(t, 8) // four at a time each: with eight held, both hold some

	w1.dead.Store(true)
	w2.dead.Store(true)
	testkit.WaitUntil(t, time.Minute, "both runs' records to expire", func() bool {
		var expired int
		err := db.QueryRow(`SELECT count(*) FROM webhook_runs WHERE expires_us < ?1`, time.Now().UnixMicro()).Scan(&expired)
		return err == nil && expired == 2
	})
	before1, before2 := w1.takeBacks.Load(), w2.takeBacks.Load()
	w1.dead.Store(false)
	w2.dead.Store(false)
	testkit.WaitUntil(t, time.Minute, "both runs to look for runs to take back after the outage", func() bool {
		return w1.takeBacks.Load() > before1 && w2.takeBacks.Load() > before2
	})
	release()
	checkTwinsDeliveredOnce(t, s, rc, n, l1, l2)
}

// TestRunLockRemovedAtCleanStop checks that a run holds its run lock
// file while it lives and removes it once it has stopped cleanly, having
// handed back what it held: nothing is left for the next run to learn.
func TestRunLockRemovedAtCleanStop(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := openSQLite(t, filepath.Join(dir, "plants.db"))
	lock := filepath.Join(dir, "run.lock")
	_, _, stop := start(t, s, []string{"http://127.0.0.1:1/hook"}, webhook.WithInstance("plantstore host-1 10.0.0.1:8080"), webhook.WithRunLock(lock))
	testkit.WaitUntil(t, time.Minute, "the run lock file to name the run", func() bool {
		b, err := os.ReadFile(lock)
		return err == nil && strings.HasPrefix(string(b), "plantstore host-1 10.0.0.1:8080 run ")
	})
	stop()
	if _, err := os.Stat(lock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("run lock file after a clean stop: %v, want it removed", err)
	}
}

// waitAllClaimed waits until a claim of another process finds none of
// the n deliveries to rc in o: a Dispatcher holds every one. The lease of
// that claim ends as it is taken, so that what it might find before then
// stays free.
func waitAllClaimed(t *testing.T, o plantstore.Outbox, rc *receiver, n int) {
	t.Helper()
	testkit.WaitUntil(t, time.Minute, "every delivery claimed", func() bool {
		ds, err := o.Claim(t.Context(), webhook.SubscriberKey(rc.url()), "another process", time.Now(), n)
		return err == nil && len(ds) == 0
	})
}

// checkTwinsDeliveredOnce waits until the outbox o holds nothing
// pending, then checks that rc got each of the n events once, in one
// attempt, and that no twin's log says a live run's deliveries were
// taken back.
func checkTwinsDeliveredOnce(t *testing.T, o plantstore.Outbox, rc *receiver, n int, twins ...*logs) {
	t.Helper()
	testkit.WaitUntil(t, time.Minute, "every event delivered", func() bool { return pending(t, o) == 0 })
	attempts, delivered := rc.stats()
	if !onceEach(n)(delivered) || !onceEach(n)(attempts) {
		t.Errorf("deliveries by webhook-id = %v, attempts %v, want each of %d once", delivered, attempts, n)
	}
	for _, l := range twins {
		if got := l.String(); strings.Contains(got, "took back the deliveries") || strings.Contains(got, "this run was taken for gone") {
			t.Errorf("a live run's deliveries were taken back:\n%s", got)
		}
	}
}

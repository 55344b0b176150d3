package webhook_test

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
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
// closed at the end of the test or by close.
func openSQLite(t *testing.T, path string, opts ...sqlstore.Option) (s *sqlstore.Store, close func()) {
	t.Helper()
	db, err := sql.Open("sqlite", sqlstore.SQLiteDSN(path))
	if err != nil {
		t.Fatalf("sql.Open() = %v", err)
	}
	s, err = sqlstore.Open(context.Background(), db, sqlstore.SQLite, append([]sqlstore.Option{sqlstore.WithOutbox()}, opts...)...)
	if err != nil {
		db.Close()
		t.Fatalf("sqlstore.Open() = %v", err)
	}
	var closed atomic.Bool
	close = func() {
		if closed.CompareAndSwap(false, true) {
			s.Close()
			db.Close()
		}
	}
	t.Cleanup(close)
	return s, close
}

func pendingCount(t *testing.T, o plantstore.Outbox) int {
	t.Helper()
	n, err := o.Depth(context.Background())
	if err != nil {
		t.Fatalf("Depth() = %v", err)
	}
	return n
}

func TestRestartRedeliversPending(t *testing.T) {
	t.Parallel()
	const n = 5
	var down atomic.Bool
	down.Store(true)
	rc := newReceiver(t, func(http.ResponseWriter, *http.Request, int) int {
		if down.Load() {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	path := filepath.Join(t.TempDir(), "plants.db")
	subs := []string{rc.url()}

	// The first process creates plants while the receiver is down, then
	// stops before any is delivered.
	s1, close1 := openSQLite(t, path)
	d1, _, stop1 := start(t, s1, subs)
	ps := plantstore.New(s1, plantstore.OnCreate(func(plantstore.Plant) { d1.Notify() }))
	for id := range int64(n) {
		mustCreate(t, ps, plantstore.NewPlant{ID: id + 1, Name: "Fern", Tag: "✓", HasTag: true})
	}
	testkit.WaitUntil(t, time.Minute, "an attempt of every event", func() bool {
		attempts, _, _ := rc.stats()
		return len(attempts) == n
	})
	stop1()
	close1()
	firstIDs, _, _ := rc.stats()

	// The second process finds the events in the outbox and delivers them
	// under the same webhook-ids.
	down.Store(false)
	s2, _ := openSQLite(t, path)
	if got := pendingCount(t, s2); got != n {
		t.Fatalf("after the restart %d events are pending, want %d", got, n)
	}
	start(t, s2, subs)
	testkit.WaitUntil(t, time.Minute, "the outbox to empty", func() bool { return pendingCount(t, s2) == 0 })

	attempts, delivered, _ := rc.stats()
	if !onceEach(n)(delivered) {
		t.Errorf("deliveries by webhook-id = %v, want each of %d once", delivered, n)
	}
	for id := range attempts {
		if _, ok := firstIDs[id]; !ok {
			t.Errorf("webhook-id %s is new after the restart; want the ids of the first attempts, %v", id, firstIDs)
		}
	}
	if diff := cmp.Diff([]int64{1, 2, 3, 4, 5}, rc.plantIDs(t)); diff != "" {
		t.Errorf("plant ids received mismatch (-want +got):\n%s", diff)
	}
}

// TestRunHandsBackHeldDeliveries stops a Dispatcher while the subscriber
// holds its requests and more deliveries wait behind them, and checks that
// a second Dispatcher on the same outbox delivers them at once rather than
// after the first one's leases, an hour, expire.
func TestRunHandsBackHeldDeliveries(t *testing.T) {
	t.Parallel()
	const n = 20
	rc, hold := newHoldingReceiver(t)
	s, _ := openSQLite(t, filepath.Join(t.TempDir(), "plants.db"))
	subs := []string{rc.url()}
	d1, _, stop1 := start(t, s, subs, webhook.WithLease(time.Hour), webhook.WithConcurrency(4))
	ps := plantstore.New(s, plantstore.OnCreate(func(plantstore.Plant) { d1.Notify() }))
	for id := range int64(n) {
		mustCreate(t, ps, plantstore.NewPlant{ID: id, Name: "p"})
	}
	testkit.WaitUntil(t, time.Minute, "four requests held by the subscriber", func() bool {
		attempts, _, _ := rc.stats()
		return len(attempts) == 4
	})
	stop1()

	hold.Store(false)
	start(t, s, subs, webhook.WithLease(time.Hour))
	testkit.WaitUntil(t, time.Minute, "the second Dispatcher to deliver every event", func() bool { return pendingCount(t, s) == 0 })
	want := make([]int64, 0, n)
	for id := range int64(n) {
		want = append(want, id)
	}
	if diff := cmp.Diff(want, rc.deliveredIDs(t)); diff != "" {
		t.Errorf("plants delivered (-want +got):\n%s", diff)
	}
}

// deadOutbox is the outbox as a process that is being killed sees it: once
// dead, no call reaches the storage, so that what the process held stays
// leased to it, as after kill -9.
type deadOutbox struct {
	plantstore.Outbox
	dead      atomic.Bool
	takeBacks atomic.Int64 // TakeBack calls that reached the outbox
}

var errKilled = errors.New("the process was killed")

func (o *deadOutbox) Claim(ctx context.Context, sub, owner string, until time.Time, limit int) ([]plantstore.Delivery, error) {
	if o.dead.Load() {
		return nil, errKilled
	}
	return o.Outbox.Claim(ctx, sub, owner, until, limit)
}

func (o *deadOutbox) Extend(ctx context.Context, sub, owner string, seqs []int64, until time.Time) ([]int64, error) {
	if o.dead.Load() {
		return nil, errKilled
	}
	return o.Outbox.Extend(ctx, sub, owner, seqs, until)
}

func (o *deadOutbox) Retry(ctx context.Context, sub, owner string, retries []plantstore.Retry) error {
	if o.dead.Load() {
		return errKilled
	}
	return o.Outbox.Retry(ctx, sub, owner, retries)
}

func (o *deadOutbox) Ack(ctx context.Context, sub string, seqs []int64) error {
	if o.dead.Load() {
		return errKilled
	}
	return o.Outbox.Ack(ctx, sub, seqs)
}

func (o *deadOutbox) Beat(ctx context.Context, instance, owner string, ttl time.Duration) (bool, error) {
	if o.dead.Load() {
		return false, errKilled
	}
	return o.Outbox.(plantstore.OutboxRuns).Beat(ctx, instance, owner, ttl)
}

func (o *deadOutbox) TakeBack(ctx context.Context, instance, owner string) (int, int, error) {
	if o.dead.Load() {
		return 0, 0, errKilled
	}
	o.takeBacks.Add(1)
	return o.Outbox.(plantstore.OutboxRuns).TakeBack(ctx, instance, owner)
}

func (o *deadOutbox) EndRun(ctx context.Context, owner string) (int, error) {
	if o.dead.Load() {
		return 0, errKilled
	}
	return o.Outbox.(plantstore.OutboxRuns).EndRun(ctx, owner)
}

// TestRestartTakesBackItsLeases kills a Dispatcher of a named instance
// (WithInstance) while it holds deliveries leased for an hour, and checks
// that a Dispatcher started for the same instance, as the same process
// restarted, delivers them rather than wait for the hour, and that
// another process is not given them: once the killed run's record has
// expired and the restarted one has renewed its own for as long, a second
// each; or at once, before the record expires, an hour later, when the
// run lock (WithRunLock) the killed run held shows it gone.
func TestRestartTakesBackItsLeases(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		opts    func(lock string) []webhook.Option
		knownBy string
	}{
		{"record expired", func(string) []webhook.Option { return []webhook.Option{webhook.WithHeartbeat(time.Second)} }, ""},
		{"run lock", func(lock string) []webhook.Option {
			return []webhook.Option{webhook.WithHeartbeat(time.Hour), webhook.WithRunLock(lock)}
		}, "known_gone_by=\"run lock\""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			const n, instance = 20, "plantstore host-1 10.0.0.1:8080"
			rc, hold := newHoldingReceiver(t)
			dir := t.TempDir()
			s, _ := openSQLite(t, filepath.Join(dir, "plants.db"))
			subs := []string{rc.url()}
			opts := append(tt.opts(filepath.Join(dir, "run.lock")), webhook.WithInstance(instance), webhook.WithLease(time.Hour))
			dying := &deadOutbox{Outbox: s}
			d1, _, stop1 := start(t, dying, subs, append(opts, webhook.WithConcurrency(4))...)
			ps := plantstore.New(s, plantstore.OnCreate(func(plantstore.Plant) { d1.Notify() }))
			for id := range int64(n) {
				mustCreate(t, ps, plantstore.NewPlant{ID: id, Name: "p"})
			}
			testkit.WaitUntil(t, time.Minute, "four requests held by the subscriber", func() bool {
				attempts, _, _ := rc.stats()
				return len(attempts) == 4
			})
			// A claim of another process finds nothing once the Dispatcher
			// holds every delivery; its lease ends as it is taken, so that
			// what it might find before then stays free.
			testkit.WaitUntil(t, time.Minute, "every delivery claimed", func() bool {
				ds, err := s.Claim(t.Context(), webhook.SubscriberKey(rc.url()), "another process", time.Now(), n)
				return err == nil && len(ds) == 0
			})
			dying.dead.Store(true)
			stop1() // its hand-back fails: the leases stay with the killed run; its run lock ends
			hold.Store(false)

			_, l, _ := start(t, s, subs, opts...)
			testkit.WaitUntil(t, time.Minute, "the restarted Dispatcher to deliver every event", func() bool { return pendingCount(t, s) == 0 })
			if got := l.String(); !strings.Contains(got, "took back the deliveries this instance's previous run held") || !strings.Contains(got, tt.knownBy) {
				t.Errorf("the restarted Dispatcher did not log that it took back its deliveries (%s):\n%s", tt.knownBy, got)
			}
			want := make([]int64, 0, n)
			for id := range int64(n) {
				want = append(want, id)
			}
			if diff := cmp.Diff(want, rc.plantIDs(t)); diff != "" {
				t.Errorf("plant ids received mismatch (-want +got):\n%s", diff)
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
	release := make(chan struct{})
	rc := newReceiver(t, func(_ http.ResponseWriter, r *http.Request, _ int) int {
		select {
		case <-release:
			return http.StatusNoContent
		case <-r.Context().Done():
			return http.StatusServiceUnavailable
		}
	})
	s, _ := openSQLite(t, filepath.Join(t.TempDir(), "plants.db"))
	subs := []string{rc.url()}
	// Both on one run lock file, as on one host: the second cannot take it.
	opts := []webhook.Option{webhook.WithInstance(instance), webhook.WithHeartbeat(2 * time.Second), webhook.WithLease(time.Hour),
		webhook.WithConcurrency(4), webhook.WithAttemptTimeout(time.Minute), webhook.WithRunLock(filepath.Join(t.TempDir(), "run.lock"))}
	d1, l1, _ := start(t, s, subs, opts...)
	ps := plantstore.New(s, plantstore.OnCreate(func(plantstore.Plant) { d1.Notify() }))
	for id := range int64(n) {
		mustCreate(t, ps, plantstore.NewPlant{ID: id, Name: "p"})
	}
	testkit.WaitUntil(t, time.Minute, "four requests held by the subscriber", func() bool {
		attempts, _, _ := rc.stats()
		return len(attempts) == 4
	})
	testkit.WaitUntil(t, time.Minute, "every delivery claimed", func() bool {
		ds, err := s.Claim(t.Context(), webhook.SubscriberKey(rc.url()), "another process", time.Now(), n)
		return err == nil && len(ds) == 0
	})

	_, l2, _ := start(t, s, subs, opts...)
	// Once the second has renewed its record for as long as a record
	// lives, it takes back what expired, and knows the first for a live
	// twin.
	testkit.WaitUntil(t, time.Minute, "the second Dispatcher to find the first alive", func() bool {
		return strings.Contains(l2.String(), "other live runs share this instance's name")
	})
	close(release)
	checkTwinsDeliveredOnce(t, s, rc, n, l1, l2)
}

// TestOutageTakesNoLiveTwinsLeases cuts two live Dispatchers of one
// instance, each holding deliveries, off the outbox for longer than their
// records live, as an outage of the database does, then gives it back to
// both at once, and checks that neither takes the other's deliveries:
// each is attempted once.
func TestOutageTakesNoLiveTwinsLeases(t *testing.T) {
	t.Parallel()
	const n, instance, heartbeat = 20, "plantstore twin [::]:8080", 2 * time.Second
	release := make(chan struct{})
	rc := newReceiver(t, func(_ http.ResponseWriter, r *http.Request, _ int) int {
		select {
		case <-release:
			return http.StatusNoContent
		case <-r.Context().Done():
			return http.StatusServiceUnavailable
		}
	})
	path := filepath.Join(t.TempDir(), "plants.db")
	s, _ := openSQLite(t, path)
	db, err := sql.Open("sqlite", sqlstore.SQLiteDSN(path))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	subs := []string{rc.url()}
	opts := []webhook.Option{webhook.WithInstance(instance), webhook.WithHeartbeat(heartbeat), webhook.WithLease(time.Hour),
		webhook.WithConcurrency(4), webhook.WithMaxInFlight(n / 2), webhook.WithAttemptTimeout(time.Minute)}
	w1, w2 := &deadOutbox{Outbox: s}, &deadOutbox{Outbox: s}
	d1, l1, _ := start(t, w1, subs, opts...)
	_, l2, _ := start(t, w2, subs, opts...)
	ps := plantstore.New(s, plantstore.OnCreate(func(plantstore.Plant) { d1.Notify() }))
	for id := range int64(n) {
		mustCreate(t, ps, plantstore.NewPlant{ID: id, Name: "p"})
	}
	// Four attempts at a time each: with eight held, both hold some.
	testkit.WaitUntil(t, time.Minute, "eight requests held by the subscriber", func() bool {
		attempts, _, _ := rc.stats()
		return len(attempts) == 8
	})

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
	close(release)
	checkTwinsDeliveredOnce(t, s, rc, n, l1, l2)
}

// TestRunLockRemovedAtCleanStop checks that a run holds its run lock
// file while it lives and removes it once it has stopped cleanly, having
// handed back what it held: nothing is left for the next run to learn.
func TestRunLockRemovedAtCleanStop(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, _ := openSQLite(t, filepath.Join(dir, "plants.db"))
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

// newHoldingReceiver returns a receiver that holds every request until the
// client gives up, while hold is set, and acknowledges each once it is
// cleared. hold starts set.
func newHoldingReceiver(t *testing.T) (*receiver, *atomic.Bool) {
	t.Helper()
	hold := new(atomic.Bool)
	hold.Store(true)
	rc := newReceiver(t, func(_ http.ResponseWriter, r *http.Request, _ int) int {
		if hold.Load() {
			<-r.Context().Done()
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	})
	return rc, hold
}

// checkTwinsDeliveredOnce waits until the outbox o holds nothing
// pending, then checks that rc got each of the n events once, in one
// attempt, and that no twin's log says a live run's deliveries were
// taken back.
func checkTwinsDeliveredOnce(t *testing.T, o plantstore.Outbox, rc *receiver, n int, twins ...*logs) {
	t.Helper()
	testkit.WaitUntil(t, time.Minute, "every event delivered", func() bool { return pendingCount(t, o) == 0 })
	attempts, delivered, _ := rc.stats()
	if !onceEach(n)(delivered) || !onceEach(n)(attempts) {
		t.Errorf("deliveries by webhook-id = %v, attempts %v, want each of %d once", delivered, attempts, n)
	}
	for _, l := range twins {
		if got := l.String(); strings.Contains(got, "took back the deliveries") || strings.Contains(got, "this run was taken for gone") {
			t.Errorf("a live run's deliveries were taken back:\n%s", got)
		}
	}
}

package deploy_test

import (
	"database/sql"
	"net/url"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/sqlstore"
)

// createSpread creates plants 1…n over the instances in turn, 16 at a
// time, and fails the test unless each is acknowledged.
func createSpread(t *testing.T, procs []*testkit.Process, n int) []int64 {
	t.Helper()
	var wg sync.WaitGroup
	ids := make(chan int64)
	for range 16 {
		wg.Go(func() {
			for id := range ids {
				if c := send(procs[int(id)%len(procs)].URL, id); c.code != 200 {
					t.Error(c)
				}
			}
		})
	}
	var all []int64
	for id := range int64(n) {
		ids <- id + 1
		all = append(all, id+1)
	}
	close(ids)
	wg.Wait()
	return all
}

// newPostgresDatabase returns the URL of a database of its own (see
// [testkit.PostgresDatabase]) and a connection to it.
func newPostgresDatabase(t *testing.T) (string, *sql.DB) {
	t.Helper()
	dsn := testkit.PostgresDatabase(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return dsn, db
}

// waitOutboxEmpty waits until no webhook event or delivery is left in the
// database: from then on no duplicate delivery can still arrive.
func waitOutboxEmpty(t *testing.T, db *sql.DB, limit time.Duration) {
	t.Helper()
	testkit.WaitUntil(t, limit, "the webhook outbox to empty", func() bool {
		var events, deliveries int
		err := db.QueryRow(`SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM webhook_deliveries)`).Scan(&events, &deliveries)
		if err != nil {
			t.Fatalf("read the outbox: %v", err)
		}
		return events == 0 && deliveries == 0
	})
}

// TestFleetDeliversEachWebhookOnce runs instances with one subscriber on
// one database, three on a PostgreSQL database, two on a SQLite file, and
// two on a PostgreSQL database through PgBouncer 1.18 in transaction mode
// with a plain URL, and checks that creates spread over them, 16 at a
// time, are all acknowledged and stored, and reach the subscriber once
// each: the instances share the outbox. (The library's
// TestOutageTakesNoLiveTwinsLeases and TestExpiredLeaseGoesToAnotherDispatcher
// check the sharing and a lease left by a dead instance.)
func TestFleetDeliversEachWebhookOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		instances, n int
		long         string // why the case is long; "" for none
		open         func(t *testing.T) (string, *sql.DB)
	}{
		{"postgres", 3, 600, "", newPostgresDatabase},
		{"sqlite", 2, 600, "", func(t *testing.T) (string, *sql.DB) {
			path := filepath.Join(t.TempDir(), "plants.db")
			db, err := sql.Open("sqlite", sqlstore.SQLiteDSN(path))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			return path, db
		}},
		{"pgbouncer", 2, 3000, "runs two instances under load through PgBouncer", func(t *testing.T) (string, *sql.DB) {
			dsn, db := newPostgresDatabase(t)
			u, err := url.Parse(dsn)
			if err != nil {
				t.Fatal(err)
			}
			u.Host = pgtest.PgBouncer(t, u.Host)
			return u.String(), db
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.long != "" {
				testkit.Long(t, tt.long)
			}
			dsn, db := tt.open(t)
			recv := newHookReceiver(t)
			dir := t.TempDir()
			procs := startInstances(t, dsn, recv, tt.instances, dir)
			ids := createSpread(t, procs, tt.n)
			if t.Failed() {
				t.Logf("the instances' logs say:\n%s", errorLines(dir, len(procs)))
			}
			lost := checkStored(t, procs[len(procs)-1].URL, ids)
			waitOutboxEmpty(t, db, 2*time.Minute)
			dups, deliveries := recv.duplicates()
			missing := recv.undelivered(ids)
			t.Logf("%d instances, %d creates: %d lost; %d deliveries, %d duplicates, %d undelivered", tt.instances, tt.n, lost, deliveries, dups, len(missing))
			if len(missing) != 0 || dups != 0 {
				t.Errorf("%d of %d plants undelivered (e.g. %v), %d duplicate deliveries; want none, none", len(missing), tt.n, missing[:min(len(missing), 10)], dups)
			}
		})
	}
}

// TestFleetRedeliversAfterKill SIGKILLs an instance while it holds claimed
// deliveries that the subscriber has not answered, and checks that
// another instance on the same database delivers every event once the
// leases expire.
func TestFleetRedeliversAfterKill(t *testing.T) {
	t.Parallel()
	dsn, db := newPostgresDatabase(t)
	recv := newHookReceiver(t)
	recv.hold = make(chan struct{})
	const lease = 2 * time.Second
	a := startInstances(t, dsn, recv, 1, t.TempDir(), "-webhook-lease", lease.String())[0]
	const n = 50
	ids := createSpread(t, []*testkit.Process{a}, n)
	// a has claimed deliveries and sent some; the receiver holds them.
	var leased int
	testkit.WaitUntil(t, time.Minute, "a to hold leased deliveries in flight", func() bool {
		err := db.QueryRow(`SELECT count(*) FROM webhook_deliveries WHERE lease_us > $1`, time.Now().UnixMicro()).Scan(&leased)
		if err != nil {
			t.Fatal(err)
		}
		return recv.held() > 0 && leased > 0
	})
	inFlight := recv.held()
	a.Cmd.Process.Signal(syscall.SIGKILL)
	<-a.Exited()
	// The receiver lets go of a's requests as their connections close,
	// without answering them; from then on it answers at once.
	testkit.WaitUntil(t, time.Minute, "the receiver to drop a's requests", func() bool { return recv.held() == 0 })
	recv.release()
	if missing := recv.undelivered(ids); len(missing) != n {
		t.Fatalf("%d plants delivered before the kill, want none: the receiver held every request", n-len(missing))
	}

	killed := time.Now()
	startInstances(t, dsn, recv, 1, t.TempDir(), "-webhook-lease", lease.String())
	testkit.WaitUntil(t, time.Minute, "b to deliver every event", func() bool { return len(recv.undelivered(ids)) == 0 })
	after := time.Since(killed)
	dups, _ := recv.duplicates()
	t.Logf("SIGKILL with %d deliveries leased (%d in flight at the receiver), lease %v: the second instance delivered all %d events within %v of the kill; %d duplicates",
		leased, inFlight, lease, n, after.Round(100*time.Millisecond), dups)
	waitOutboxEmpty(t, db, time.Minute)
}

// TestFleetSurvivesAStoppedInstance runs three instances with webhooks on
// one PostgreSQL database, all taking creates, and stops the first with
// SIGSTOP for 10 s, three times, as a long pause, a frozen VM or a
// debugger would. The two others must go on answering their creates
// while it is stopped: no lock of the first, held across its pause, may
// make them wait. Once it resumes, every create acknowledged by any of
// them is stored and delivered.
//
// It is one piece: each step acts on what the steps before it left, on one set of processes.
func TestFleetSurvivesAStoppedInstance(t *testing.T) {
	testkit.Long(t, "stops an instance three times for 10 s")
	dsn, db := newPostgresDatabase(t)
	recv := newHookReceiver(t)
	procs := startInstances(t, dsn, recv, 3, t.TempDir())
	stopped := procs[0].Cmd.Process
	t.Cleanup(func() { stopped.Signal(syscall.SIGCONT) })

	const (
		perInstance = 6
		pause       = 10 * time.Second
		pauses      = 3
		// gap paces the creates of each worker of the running instances.
		// The first instance's workers send theirs back to back, so that
		// it is most likely in the middle of a transaction when stopped.
		gap = 50 * time.Millisecond
	)
	l := startLoad(t, urls(procs), loadOptions{workers: perInstance * len(procs), pinned: true, gap: func(i int) time.Duration {
		if i == 0 {
			return 0
		}
		return gap
	}})

	// The first pause comes once every instance is taking creates. The
	// pauses, and the 3 s after each, are the scenario: the instance stays
	// stopped for as long as a frozen VM would, whatever the others do
	// meanwhile.
	testkit.WaitUntil(t, 30*time.Second, "a create acknowledged by each instance", func() bool { return l.allAckSince(time.Time{}) })
	type window struct{ from, to time.Time }
	var windows []window
	for range pauses {
		if err := stopped.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		w := window{from: time.Now()}
		time.Sleep(pause)
		w.to = time.Now()
		if err := stopped.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
		windows = append(windows, w)
		time.Sleep(3 * time.Second)
	}
	l.halt()

	// The others' creates sent while the first was stopped, pause by
	// pause: the workers wait for each answer, so a pause in which they
	// waited sends few creates, and must not hide among those that did not.
	acked := l.ackedIDs()
	var took []time.Duration
	for k, w := range windows {
		ok, n, codes := 0, 0, map[int]int{}
		for _, a := range l.sent() {
			if a.instance == 0 || a.start.Before(w.from) || !a.start.Before(w.to) {
				continue
			}
			n++
			took = append(took, a.end.Sub(a.start))
			if a.code == 200 {
				ok++
			} else {
				codes[a.code]++
			}
		}
		t.Logf("pause %d of %v: the two running instances answered %d of %d creates 200 (others: %s)", k+1, pause, ok, n, codeCounts(codes))
		if n == 0 || ok*100 < n*99 {
			t.Errorf("pause %d: the running instances answered %d of %d creates 200 while another was stopped, want at least 99 %%", k+1, ok, n)
		}
	}
	slices.Sort(took)
	if len(took) > 0 {
		t.Logf("the running instances' creates while the first was stopped: p50 %v, p99 %v, max %v; %d creates acknowledged in all",
			took[len(took)/2].Round(time.Millisecond), took[len(took)*99/100].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond), len(acked))
	}

	waitOutboxEmpty(t, db, 2*time.Minute)
	lost := checkStored(t, procs[1].URL, acked)
	undelivered := recv.undelivered(acked)
	dups, _ := recv.duplicates()
	t.Logf("after the pauses: %d acknowledged creates lost, %d not delivered, %d duplicate deliveries", lost, len(undelivered), dups)
	if len(undelivered) > 0 {
		t.Errorf("%d acknowledged creates not delivered (e.g. %v), want none", len(undelivered), undelivered[:min(len(undelivered), 10)])
	}
	checkRunning(t, procs, "the pauses")
}

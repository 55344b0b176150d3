package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/faultproxy"
	"github.com/plantstore/plantstore/internal/testkit"
)

// behindProxy makes a fresh PostgreSQL schema and returns a *sql.DB
// connected to it directly, a fault proxy in front of it, and the DSN that
// reaches it through the proxy.
func behindProxy(t *testing.T) (direct *sql.DB, proxy *faultproxy.Proxy, proxiedDSN string) {
	t.Helper()
	_, dsn := postgresBackend.newDB(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	proxy = faultproxy.New(t, u.Host)
	u.Host = proxy.Addr()
	return openDB(t, "pgx", dsn), proxy, withParams(t, u.String(), map[string]string{"connect_timeout": "2"})
}

// TestDatabaseOutage cuts the connections to PostgreSQL under a load of
// Creates and restores them: Creates during the outage fail with
// ErrUnavailable (or ErrOutcomeUnknown when the cut caught their COMMIT),
// Creates succeed again afterwards, every Create that returned nil is
// stored, with its event, and none that returned ErrUnavailable is.
//
// It is one piece: each step acts on what the steps before it left, on one set of processes.
func TestDatabaseOutage(t *testing.T) {
	t.Parallel()
	direct, proxy, dsn := behindProxy(t)
	s := openStore(t, openDB(t, "pgx", dsn), Postgres, WithOutbox())

	// A bounded load: workers create fresh ids until told to stop or
	// until each has made perCap attempts.
	const workers, perCap = 8, 3000
	var (
		nextID              atomic.Int64
		ok                  atomic.Int64
		mu                  sync.Mutex
		stored, unavailable []int64
		unknown             atomic.Int64
		unexpected          []error
		stop                = make(chan struct{})
		wg                  sync.WaitGroup
		okAfterRestore      atomic.Int64
		restored            atomic.Bool
		failedDuringOutage  atomic.Int64
		outage              atomic.Bool
	)
	for range workers {
		wg.Go(func() {
			for range perCap {
				select {
				case <-stop:
					return
				default:
				}
				id := nextID.Add(1)
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				err := s.Create(ctx, plantstore.Plant{ID: id, Name: "load"})
				cancel()
				switch {
				case err == nil:
					ok.Add(1)
					if restored.Load() {
						okAfterRestore.Add(1)
					}
					mu.Lock()
					stored = append(stored, id)
					mu.Unlock()
				case errors.Is(err, plantstore.ErrOutcomeUnknown):
					unknown.Add(1)
				case errors.Is(err, plantstore.ErrUnavailable):
					mu.Lock()
					unavailable = append(unavailable, id)
					mu.Unlock()
					if outage.Load() {
						failedDuringOutage.Add(1)
					}
				default:
					mu.Lock()
					unexpected = append(unexpected, err)
					mu.Unlock()
				}
			}
		})
	}
	stopLoad := sync.OnceFunc(func() { close(stop); wg.Wait() })
	defer stopLoad()
	waitFor := func(what string, cond func() bool) { t.Helper(); testkit.WaitUntil(t, 15*time.Second, what, cond) }

	waitFor("creates before the outage", func() bool { return ok.Load() >= 200 })
	proxy.Cut()
	outage.Store(true)
	waitFor("creates to fail during the outage", func() bool { return failedDuringOutage.Load() >= 50 })

	ctx := context.Background()
	if err := s.Create(ctx, plantstore.Plant{ID: -1, Name: "during outage"}); !errors.Is(err, plantstore.ErrUnavailable) {
		t.Errorf("Create during the outage = %v, want ErrUnavailable", err)
	}
	if _, err := s.Plant(ctx, 1); !errors.Is(err, plantstore.ErrUnavailable) {
		t.Errorf("Plant during the outage = %v, want ErrUnavailable", err)
	}
	if err := s.Ping(ctx); !errors.Is(err, plantstore.ErrUnavailable) {
		t.Errorf("Ping during the outage = %v, want ErrUnavailable", err)
	}

	outage.Store(false)
	proxy.Restore()
	restored.Store(true)
	waitFor("creates to succeed after the outage", func() bool { return okAfterRestore.Load() >= 200 })
	stopLoad()

	for _, err := range unexpected {
		t.Errorf("Create = %v, want nil, ErrUnavailable or ErrOutcomeUnknown", err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping after the outage = %v, want nil", err)
	}
	if err := s.Create(ctx, plantstore.Plant{ID: -2, Name: "after outage"}); err != nil {
		t.Errorf("Create after the outage = %v, want nil", err)
	}

	inDB := map[int64]bool{}
	for _, id := range queryInts(t, direct, `SELECT id FROM plants`) {
		inDB[id] = true
	}
	for _, id := range stored {
		if !inDB[id] {
			t.Errorf("plant %d was acknowledged but is not stored", id)
		}
	}
	for _, id := range unavailable {
		if inDB[id] {
			t.Errorf("plant %d was answered ErrUnavailable (nothing kept) but is stored", id)
		}
	}
	// Each stored plant has exactly one event, and each event its plant:
	// they were written in one transaction, whatever the outage cut.
	var orphans, missing, dupes int
	err := direct.QueryRow(`SELECT
		(SELECT count(*) FROM events e WHERE NOT EXISTS (SELECT 1 FROM plants p WHERE p.id = e.plant_id)),
		(SELECT count(*) FROM plants p WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.plant_id = p.id)),
		(SELECT count(*) - count(DISTINCT plant_id) FROM events)`).Scan(&orphans, &missing, &dupes)
	if err != nil {
		t.Fatal(err)
	}
	if orphans != 0 || missing != 0 || dupes != 0 {
		t.Errorf("events without plants: %d, plants without events: %d, duplicate events: %d; want none", orphans, missing, dupes)
	}
	t.Logf("%d creates acknowledged, %d unavailable, %d of unknown outcome, %d rows stored", ok.Load(), len(unavailable), unknown.Load(), len(inDB))
}

// TestCommitLostInFlight cuts the connection to PostgreSQL right after a
// COMMIT has gone through to the server, or the statement that is a
// Create's transaction (see insertOne), before its answer comes back, or
// cancels the call's context while the answer is held back: the Create or
// Delete must report that its outcome is unknown, never that nothing was
// kept, and the store must serve again once the database is reachable.
// After the cut, Creates take three statements until one commits.
func TestCommitLostInFlight(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		name string
		opts []Option
		// commit is in what the Create sends that commits it: its one
		// statement's arguments (whose text a cached statement does not
		// send again), or the COMMIT.
		commit string
		// cancel: the call's context is cancelled while its commit is at
		// the server and the answer held back, rather than the connection
		// cut.
		cancel bool
	}{
		{"group commit", []Option{WithOutbox()}, "in flight", false},
		{"single", []Option{WithoutGroupCommit()}, "commit", false},
		// A lock timeout set in each transaction, as through PgBouncer.
		{"transactions", []Option{WithOutbox(), WithLockTimeout(2 * time.Second)}, "commit", false},
		{"single, cancelled", []Option{WithoutGroupCommit()}, "commit", true},
	} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			direct, proxy, dsn := behindProxy(t)
			s := openStore(t, openDB(t, "pgx", dsn), Postgres, mode.opts...)
			ctx := context.Background()
			// stored waits for the sessions of the Store to have no
			// statement running, as the one whose connection was cut may
			// still, then says whether id is stored.
			app := appName(t, dsn)
			stored := func(id int64) bool {
				t.Helper()
				testkit.WaitUntil(t, 10*time.Second, "the cut statement to end", func() bool {
					return queryInt(t, direct, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND state = 'active' AND pid <> pg_backend_pid()`, app) == 0
				})
				return queryInt(t, direct, `SELECT count(*) FROM plants WHERE id = $1`, id) == 1
			}
			// lose returns what call says when what it sends that holds
			// trigger is lost as mode says.
			lose := func(trigger string, call func(ctx context.Context) error) error {
				if !mode.cancel {
					cut := proxy.CutAfter([]byte(trigger))
					err := call(ctx)
					<-cut
					proxy.Restore()
					return err
				}
				cctx, cancel := context.WithCancel(ctx)
				stalled := proxy.StallAfter([]byte(trigger))
				done := make(chan error, 1)
				go func() { done <- call(cctx) }()
				<-stalled
				cancel()
				err := <-done
				proxy.Resume()
				return err
			}
			mustCreate(t, s, "to delete", 2)

			err := lose(mode.commit, func(ctx context.Context) error { return s.Create(ctx, plantstore.Plant{ID: 1, Name: "in flight"}) })
			if !errors.Is(err, plantstore.ErrOutcomeUnknown) || errors.Is(err, plantstore.ErrUnavailable) {
				t.Errorf("Create whose %q was lost = %v, want ErrOutcomeUnknown and not ErrUnavailable", mode.commit, err)
			}
			t.Logf("create: %v; stored afterwards: %v", err, stored(1))
			if mode.commit == "in flight" && !s.wary.Load() {
				t.Errorf("after a Create's statement was cut, Creates still take one statement")
			}

			err = lose("commit", func(ctx context.Context) error { return s.Delete(ctx, 2) })
			if !errors.Is(err, plantstore.ErrOutcomeUnknown) || errors.Is(err, plantstore.ErrUnavailable) {
				t.Errorf("Delete whose COMMIT was lost = %v, want ErrOutcomeUnknown and not ErrUnavailable", err)
			}
			t.Logf("delete: %v; stored afterwards: %v", err, stored(2))

			// The store serves again, and what it says agrees with the table.
			before := stored(1)
			err = s.Create(ctx, plantstore.Plant{ID: 1, Name: "retry"})
			if before && !errors.Is(err, plantstore.ErrConflict) || !before && err != nil {
				t.Errorf("retried Create = %v with plant 1 stored before: %v", err, before)
			}
			if err := s.Create(ctx, plantstore.Plant{ID: 3, Name: "after"}); err != nil {
				t.Errorf("Create after the cut = %v, want nil", err)
			}
			if s.wary.Load() {
				t.Errorf("after a Create committed, Creates still take three statements")
			}
		})
	}
}

// TestStalledDatabase stalls every byte between the Store and PostgreSQL,
// as a frozen database host would: Creates, queued ones included, Deletes
// and reads all return while the stall lasts, by the Store's timeout, each
// with an honest error; once the stall ends, none that reported
// ErrUnavailable is stored, even though the bytes it sent arrive late.
//
// It is one piece: each step acts on what the steps before it left, through one stalled proxy.
func TestStalledDatabase(t *testing.T) {
	t.Parallel()
	eachMode(t, modes, func(t *testing.T, opts []Option) {
		direct, proxy, dsn := behindProxy(t)
		app := appName(t, dsn) + "_stalled"
		proxied := openDB(t, "pgx", withParams(t, dsn, map[string]string{"application_name": app}))
		s := openStore(t, proxied, Postgres, append([]Option{WithTimeout(time.Second)}, opts...)...)
		ctx := context.Background()
		// createSoon creates p, allowing a few attempts: the short
		// timeout can expire on a busy machine.
		createSoon := func(p plantstore.Plant) {
			t.Helper()
			for i := 0; ; i++ {
				err := s.Create(ctx, p)
				if err == nil {
					return
				}
				if i == 50 || !errors.Is(err, plantstore.ErrUnavailable) {
					t.Fatalf("Create(%d) = %v, want nil", p.ID, err)
				}
			}
		}
		// Warm the pool, so that the stall catches statements on open
		// connections.
		for id := range int64(8) {
			createSoon(plantstore.Plant{ID: 1000 + id, Name: "before"})
		}

		proxy.Stall()
		const n = 24
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { errs[i] = s.Create(ctx, plantstore.Plant{ID: int64(i), Name: "during"}) })
		}
		var readErr, deleteErr error
		wg.Go(func() { _, readErr = s.Plant(ctx, 1000) })
		wg.Go(func() { deleteErr = s.Delete(ctx, 1001) })
		returned := make(chan struct{})
		go func() { wg.Wait(); close(returned) }()
		select {
		case <-returned:
		case <-time.After(time.Minute):
			proxy.Resume()
			t.Fatal("calls did not return while the database stalled")
		}
		var unavailable, unknown []int64
		for i, err := range errs {
			switch {
			case errors.Is(err, plantstore.ErrOutcomeUnknown):
				unknown = append(unknown, int64(i))
			case errors.Is(err, plantstore.ErrUnavailable):
				unavailable = append(unavailable, int64(i))
			default:
				t.Errorf("Create %d during the stall = %v, want ErrUnavailable or ErrOutcomeUnknown", i, err)
			}
		}
		if !errors.Is(readErr, plantstore.ErrUnavailable) {
			t.Errorf("Plant during the stall = %v, want ErrUnavailable", readErr)
		}
		if !errors.Is(deleteErr, plantstore.ErrUnavailable) && !errors.Is(deleteErr, plantstore.ErrOutcomeUnknown) {
			t.Errorf("Delete during the stall = %v, want ErrUnavailable or ErrOutcomeUnknown", deleteErr)
		}

		// Let the held bytes through, and wait until the server has
		// seen the end of every connection of the stall.
		proxy.Resume()
		proxied.SetMaxIdleConns(0)
		testkit.WaitUntil(t, 10*time.Second, "the server to see the end of every connection of the stall", func() bool {
			return queryInt(t, direct, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, app) == 0
		})
		for _, id := range unavailable {
			if queryInt(t, direct, `SELECT count(*) FROM plants WHERE id = $1`, id) != 0 {
				t.Errorf("plant %d was answered ErrUnavailable (nothing kept) but is stored", id)
			}
		}
		createSoon(plantstore.Plant{ID: 2000, Name: "after"})
		t.Logf("during the stall: %d creates unavailable, %d of unknown outcome", len(unavailable), len(unknown))
	})
}

// retryable is an error that says whether it came before anything was
// sent, as pgx's do.
type retryable bool

func (r retryable) Error() string     { return "retryable" }
func (r retryable) SafeToRetry() bool { return bool(r) }

// TestErrorMeanings checks what a database error means. Alone, it is
// "unavailable, retry later" or rejects the request: a write refused by a
// read-only server (a standby, or a crashed primary restarting read-only
// under Patroni) is unavailable, nothing kept; a duplicate key is not. As
// the failure of a Create's one statement on PostgreSQL, nothing was kept
// when nothing was sent or the server rolled it back, and the outcome is
// unknown otherwise, as for a COMMIT.
func TestErrorMeanings(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		err       error
		transient bool
		statement error // ErrUnavailable, ErrOutcomeUnknown, or nil: neither
		// unsent: the driver says nothing was sent, so the Store need
		// not become wary.
		unsent bool
	}{
		{"read-only", &pgconn.PgError{Code: "25006"}, true, plantstore.ErrUnavailable, false},
		{"shutdown", &pgconn.PgError{Code: "57P01"}, true, plantstore.ErrOutcomeUnknown, false},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true, plantstore.ErrOutcomeUnknown, false},
		{"lock not available", &pgconn.PgError{Code: "55P03"}, true, plantstore.ErrUnavailable, false},
		{"duplicate key", &pgconn.PgError{Code: "23505"}, false, nil, false},
		{"undefined table", &pgconn.PgError{Code: "42P01"}, false, nil, false},
		{"bad connection", driver.ErrBadConn, true, plantstore.ErrUnavailable, true},
		{"safe to retry", fmt.Errorf("query: %w", retryable(true)), true, plantstore.ErrUnavailable, true},
		{"unsafe to retry", fmt.Errorf("query: %w", retryable(false)), true, plantstore.ErrOutcomeUnknown, false},
		{"lost answer", io.ErrUnexpectedEOF, true, plantstore.ErrOutcomeUnknown, false},
		{"deadline in flight", fmt.Errorf("timeout: %w", context.DeadlineExceeded), true, plantstore.ErrOutcomeUnknown, false},
		{"cancelled in flight", context.Canceled, true, plantstore.ErrOutcomeUnknown, false},
	} {
		err := fmt.Errorf("insert: %w", tt.err)
		if got := transient(err); got != tt.transient {
			t.Errorf("%s: transient(%v) = %v, want %v", tt.name, err, got, tt.transient)
		}
		if got := errors.Is(failure(context.Background(), "create plant", err), plantstore.ErrUnavailable); got != tt.transient {
			t.Errorf("%s: failure(%v) wraps ErrUnavailable: %v, want %v", tt.name, err, got, tt.transient)
		}
		err = failure(context.Background(), "create plant", statementError(tt.err))
		unavailable, unknown := errors.Is(err, plantstore.ErrUnavailable), errors.Is(err, plantstore.ErrOutcomeUnknown)
		if unavailable != (tt.statement == plantstore.ErrUnavailable) || unknown != (tt.statement == plantstore.ErrOutcomeUnknown) {
			t.Errorf("%s: as a statement's failure %v, want %v", tt.name, err, tt.statement)
		}
		if unsent := errors.Is(statementError(tt.err), errNothingSent); unsent != tt.unsent {
			t.Errorf("%s: nothing sent: %v, want %v", tt.name, unsent, tt.unsent)
		}
	}
}

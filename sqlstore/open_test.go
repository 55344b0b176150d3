package sqlstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/dirtest"
	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/internal/testkit"
)

// openSQLite opens the SQLite file at path with OpenSQLite, closed in
// t.Cleanup.
func openSQLite(t *testing.T, path string, opts ...Option) *Store {
	t.Helper()
	s, err := OpenSQLite(context.Background(), "sqlite", path, opts...)
	if err != nil {
		t.Fatalf("OpenSQLite(%s) = %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// A liteError is an error with a SQLite result code, as the driver's are.
type liteError int

func (e liteError) Error() string { return fmt.Sprintf("sqlite error %d", int(e)) }
func (e liteError) Code() int     { return int(e) }

// TestDiskFullNeedsAFullDisk checks that an I/O error is not taken for a
// full disk where there is room: only a filesystem with less than 1 MiB
// free makes one a DiskFullError.
func TestDiskFullNeedsAFullDisk(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "plants.db")
	for _, err := range []error{liteError(10), liteError(13), liteError(10 | 3<<8), errors.New("no code")} {
		if got := diskFull(path, err); got != nil {
			t.Errorf("diskFull(%v) with room on the disk = %v, want nil", err, got)
		}
	}
}

// TestOpenSQLiteOnAFullDisk opens a SQLite file again after its
// filesystem has filled up while it was closed: OpenSQLite fails with a
// *DiskFullError that names the directory and the free space, where
// SQLite itself says only "disk I/O error"; once space is freed it opens,
// with the plants it had.
func TestOpenSQLiteOnAFullDisk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := dirtest.Tmpfs(t, 2<<20)
	path := filepath.Join(dir, "plants.db")
	s := openSQLite(t, path)
	mustCreate(t, s, "before", 1)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	filler := dirtest.Fill(t, dir)

	_, err := OpenSQLite(ctx, "sqlite", path)
	full, ok := errors.AsType[*DiskFullError](err)
	if !ok || !errors.Is(err, ErrDiskFull) {
		t.Fatalf("OpenSQLite on a full disk = %v, want a *DiskFullError wrapping ErrDiskFull", err)
	}
	if full.Dir != dir || full.Free >= fullBelow || full.Err == nil {
		t.Errorf("DiskFullError{Dir: %q, Free: %d, Err: %v}, want Dir %q, Free below %d and SQLite's error", full.Dir, full.Free, full.Err, dir, fullBelow)
	}
	want := fmt.Sprintf("database directory %s is full: %d bytes free; free some space, then start again (", dir, full.Free)
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("the error says %q, want it to begin %q", err, want)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	wantPlant(t, openSQLite(t, path), plantstore.Plant{ID: 1, Name: "before"})
}

// TestOpenPostgresSessionSettings checks what OpenPostgres gives every
// session: its timeouts at connect time, so that no write transaction
// sets them again, unless the URL sets them; and pgx's exec mode, which
// prepares no named statement, unless the URL asks for another mode.
func TestOpenPostgresSessionSettings(t *testing.T) {
	t.Parallel()
	dsn := testkit.PostgresDatabase(t)
	ctx := context.Background()
	for _, tt := range []struct {
		name, params       string
		wantLock, wantIdle string
		wantPrepared       bool
	}{
		{"defaults", "", "100ms", "2s", false},
		{"the URL's timeout", "&lock_timeout=250", "250ms", "2s", false},
		{"the URL's query mode", "&default_query_exec_mode=cache_statement", "100ms", "2s", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := OpenPostgres(ctx, "pgx", dsn+tt.params, WithLockTimeout(100*time.Millisecond), WithIdleInTransactionTimeout(2*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// One session's settings, and the named prepared statements
			// it holds after a query with a parameter.
			conn, err := s.db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			var lock, idle string
			var n, prepared int
			if err := conn.QueryRowContext(ctx, `SELECT $1::int`, 1).Scan(&n); err != nil {
				t.Fatal(err)
			}
			err = conn.QueryRowContext(ctx, `SELECT current_setting('lock_timeout'), current_setting('idle_in_transaction_session_timeout'),
				(SELECT count(*) FROM pg_prepared_statements)`).Scan(&lock, &idle, &prepared)
			if err != nil {
				t.Fatal(err)
			}
			if lock != tt.wantLock || idle != tt.wantIdle || (prepared > 0) != tt.wantPrepared {
				t.Errorf("session: lock_timeout %s, idle_in_transaction_session_timeout %s, %d named statements; want %s, %s, named statements %v",
					lock, idle, prepared, tt.wantLock, tt.wantIdle, tt.wantPrepared)
			}
			if s.q.setTimeouts != "" {
				t.Errorf("write transactions set %q, want nothing: the session has the settings", s.q.setTimeouts)
			}
		})
	}
}

// TestOpenPostgresThroughPgBouncer opens PostgreSQL through PgBouncer in
// transaction mode with a plain URL, as an operator would write it:
// PgBouncer refuses the timeouts as startup parameters, so OpenPostgres
// says once that it sets them in every write transaction instead, where
// they hold: a Create of an id another session's transaction holds gives
// up with PostgreSQL's lock timeout (55P03). Beside it, a Store from Open
// on a URL whose query mode prepares no named statement: concurrent
// creates on both are served, and delivered through both, each once.
// Asked in the URL for pgx's statement cache, which such a pooler breaks,
// OpenPostgres refuses with ErrStatementsLost, naming the fix, rather than
// fail every call later. No error shows the URL's password.
func TestOpenPostgresThroughPgBouncer(t *testing.T) {
	t.Parallel()
	const password = "pw-not-to-show"
	direct := testkit.PostgresDatabase(t)
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = pgtest.PgBouncer(t, u.Host)
	u.User = url.UserPassword(u.User.Username(), password) // PgBouncer here asks for none
	var logs bytes.Buffer
	ctx := context.Background()
	s, err := OpenPostgres(ctx, "pgx", u.String(), WithOutbox(), WithLockTimeout(100*time.Millisecond),
		WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const said = "the database connection refuses session settings at connect time, as PgBouncer does: lock_timeout and idle_in_transaction_session_timeout are set in every write transaction instead"
	if n := strings.Count(logs.String(), said); n != 1 {
		t.Errorf("the log says %d times that the settings are made per transaction, want once:\n%s", n, &logs)
	}

	holdEventTx(t, openDB(t, "pgx", direct), 1000)
	err = s.Create(ctx, plantstore.Plant{ID: 1000, Name: "p"})
	var pg interface{ SQLState() string }
	if !errors.Is(err, plantstore.ErrUnavailable) || !errors.As(err, &pg) || pg.SQLState() != "55P03" {
		t.Errorf("Create of an id another transaction holds = %v, want ErrUnavailable for PostgreSQL's lock timeout (55P03)", err)
	}
	exec := withParams(t, u.String(), map[string]string{"default_query_exec_mode": "exec"})
	stores := []*Store{s, openStore(t, openDB(t, "pgx", exec), Postgres, WithOutbox())}
	const n = 200
	var wg sync.WaitGroup
	for id := range int64(n) {
		wg.Go(func() {
			if err := stores[id%2].Create(ctx, plantstore.Plant{ID: id, Name: "p"}); err != nil {
				t.Errorf("Create(%d) through PgBouncer = %v", id, err)
			}
		})
	}
	wg.Wait()
	if plants, err := s.List(ctx, 0, 1000); err != nil || len(plants) != n {
		t.Errorf("List through PgBouncer = %d plants, %v; want the %d", len(plants), err, n)
	}
	delivered := map[int64]int{}
	for range 100 {
		if _, err := stores[0].FanOut(ctx, []string{"a"}, n); err != nil {
			t.Fatalf("FanOut() = %v", err)
		}
		seqs, ids := claim(t, stores[1], "a", "o", time.Now().Add(time.Hour), n)
		for _, id := range ids {
			delivered[id]++
		}
		if err := stores[0].Ack(ctx, "a", seqs); err != nil {
			t.Fatalf("Ack() = %v", err)
		}
		if len(delivered) == n {
			break
		}
	}
	if len(delivered) != n {
		t.Errorf("%d plants delivered through PgBouncer, want %d", len(delivered), n)
	}
	for id, k := range delivered {
		if k != 1 {
			t.Errorf("plant %d delivered %d times, want once", id, k)
		}
	}

	_, err = OpenPostgres(ctx, "pgx", withParams(t, u.String(), map[string]string{"default_query_exec_mode": "cache_statement"}), WithLogger(slog.New(slog.DiscardHandler)))
	if !errors.Is(err, ErrStatementsLost) || !strings.Contains(err.Error(), "default_query_exec_mode=exec") {
		t.Errorf("OpenPostgres with named prepared statements through PgBouncer = %v, want ErrStatementsLost naming the fix", err)
	}
	if err != nil && strings.Contains(err.Error(), password) {
		t.Errorf("the error shows the password: %v", err)
	}
}

// TestOpenPostgresErrorsHideSecrets checks that whatever way OpenPostgres
// fails, its error names the database by RedactDSN's form and quotes none
// of the URL's secrets, even where the driver's own message would.
func TestOpenPostgresErrorsHideSecrets(t *testing.T) {
	t.Parallel()
	closed := testkit.FreeAddr(t)
	const secret = "s3cretpw"
	for _, tt := range []struct {
		name, dsn   string
		wantErr     error
		wantMessage string
		// permanent is set when no retry can mend the error: it must not
		// wrap ErrUnavailable.
		permanent bool
	}{
		{"nothing listens", "postgres://u:" + secret + "@" + closed + "/db?sslmode=disable&connect_timeout=5&sslpassword=" + secret,
			plantstore.ErrUnavailable, "open PostgreSQL postgres://u:xxxxx@" + closed + "/db?sslmode=disable&connect_timeout=5&sslpassword=xxxxx: ", false},
		{"the driver refuses a parameter", "postgres://u:" + secret + "@" + closed + "/db?sslmode=bogus&auth_token=" + secret,
			nil, "open PostgreSQL postgres://u:xxxxx@" + closed + "/db?sslmode=bogus&auth_token=xxxxx: cannot parse `", true},
		{"a URL that does not parse", "postgres://u:" + secret + "@h/db%zz", nil, "open PostgreSQL (a database URL that does not parse): ", false},
		{"not a URL", "host=h user=u password=" + secret, errNotPostgresURL, "sqlstore: open PostgreSQL: want a postgres:// or postgresql:// URL", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := OpenPostgres(context.Background(), "pgx", tt.dsn, WithLogger(slog.New(slog.DiscardHandler)))
			if err == nil {
				s.Close()
				t.Fatal("OpenPostgres = nil, want an error")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("OpenPostgres = %v, want %v", err, tt.wantErr)
			}
			if tt.permanent && errors.Is(err, plantstore.ErrUnavailable) {
				t.Errorf("OpenPostgres = %v, which calls a configuration error a passing outage", err)
			}
			if !strings.HasPrefix(err.Error(), tt.wantMessage) {
				t.Errorf("OpenPostgres = %q, want it to begin %q", err, tt.wantMessage)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("OpenPostgres = %q, which shows a secret", err)
			}
		})
	}
}

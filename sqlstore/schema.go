package sqlstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// SQLiteDSN returns the modernc.org/sqlite data source name that opens the
// database file at path with the settings a Store needs on every
// connection: WAL journal, synchronous=FULL (a commit is flushed before it
// returns, so it survives power loss), a 10 s busy timeout for writers in
// other processes, and IMMEDIATE transactions. Open the database with
//
//	sql.Open("sqlite", sqlstore.SQLiteDSN(path))
func SQLiteDSN(path string) string {
	u := url.URL{Path: path}
	return "file:" + u.EscapedPath() + "?" +
		"_pragma=busy_timeout(" + strconv.FormatInt(busyTimeout.Milliseconds(), 10) + ")" +
		"&_pragma=journal_mode(WAL)" +
		"&_pragma=synchronous(FULL)" +
		"&_txlock=immediate"
}

// busyTimeout is how long a SQLite connection opened with SQLiteDSN waits
// for writers in other processes.
const busyTimeout = 10 * time.Second

// connect returns a connection from db. On SQLite, opening a connection
// runs the DSN's pragmas, and the first to switch a new database file to
// WAL needs an exclusive lock. When several processes open the same new
// file at once, SQLite answers SQLITE_BUSY to that switch at once instead
// of waiting out the busy timeout, so connect retries it for up to
// busyTimeout. Once the file is in WAL mode, opening a connection takes no
// such lock.
func connect(ctx context.Context, db *sql.DB) (*sql.Conn, error) {
	conn, err := db.Conn(ctx)
	deadline := time.Now().Add(busyTimeout)
	pause := time.Millisecond
	for busy(err) && time.Now().Before(deadline) {
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
		pause = min(2*pause, 100*time.Millisecond)
		conn, err = db.Conn(ctx)
	}
	return conn, err
}

// busy reports whether err is SQLite's SQLITE_BUSY.
func busy(err error) bool {
	code, ok := sqliteCode(err)
	return ok && code == sqliteBusy
}

// checkSettings returns an error wrapping ErrReadOnly when db cannot be
// written, or ErrNotDurable when it would not make a commit durable. On
// SQLite it can only look at one connection; the DSN is what sets the
// others.
func checkSettings(ctx context.Context, db *sql.DB, d Dialect) error {
	conn, err := connect(ctx, db)
	if err != nil {
		return failure(ctx, "check settings", err)
	}
	defer conn.Close()
	if d == Postgres {
		if err := checkStatementsKept(ctx, db, conn); err != nil {
			return err
		}
	}
	if err := checkWritable(ctx, conn, d); err != nil {
		return err
	}
	show := func(query string) (string, error) {
		var v string
		if err := conn.QueryRowContext(ctx, query).Scan(&v); err != nil {
			return "", failure(ctx, "check settings: "+query, err)
		}
		return strings.ToLower(v), nil
	}
	type want struct {
		query string
		ok    func(string) bool
		need  string
	}
	var checks []want
	switch d {
	case SQLite:
		checks = []want{
			{"PRAGMA journal_mode", func(v string) bool { return v == "wal" }, "wal"},
			{"PRAGMA synchronous", func(v string) bool { return v == "2" || v == "3" }, "2 (FULL) or 3 (EXTRA)"},
			{"PRAGMA busy_timeout", func(v string) bool { return v != "0" }, "a busy timeout above 0"},
		}
	case Postgres:
		checks = []want{
			{"SHOW fsync", func(v string) bool { return v == "on" }, "on"},
			{"SHOW synchronous_commit", func(v string) bool { return v != "off" }, "not off"},
		}
	}
	for _, c := range checks {
		v, err := show(c.query)
		if err != nil {
			return err
		}
		if !c.ok(v) {
			return fmt.Errorf("sqlstore: %s is %q, want %s: %w", c.query, v, c.need, ErrNotDurable)
		}
	}
	if d == Postgres {
		// Names and tags are stored byte for byte only in UTF-8.
		v, err := show("SHOW server_encoding")
		if err != nil {
			return err
		}
		if v != "utf8" {
			return fmt.Errorf("sqlstore: database encoding is %q, want UTF8", v)
		}
	}
	return nil
}

// checkStatementsKept returns an error wrapping [ErrStatementsLost] when
// the connections of db share sessions, as through a pooler in
// transaction mode, and the driver keeps named prepared statements across
// transactions: conn and a second connection run the same query, one
// after the other, which such a pooler gives the same server session (it
// reuses the last one freed), so that the second prepares a statement the
// session already has. A driver or pooler that keeps no named statements
// passes.
func checkStatementsKept(ctx context.Context, db *sql.DB, conn *sql.Conn) error {
	other, err := db.Conn(ctx)
	if err != nil {
		return failure(ctx, "check prepared statements", err)
	}
	defer other.Close()
	for _, c := range []*sql.Conn{conn, other} {
		var one int
		err := c.QueryRowContext(ctx, `SELECT 1 AS plantstore_statements_probe`).Scan(&one)
		if statementsLost(err) {
			return fmt.Errorf("%w (%v)", ErrStatementsLost, err)
		}
		if err != nil {
			return failure(ctx, "check prepared statements", err)
		}
	}
	return nil
}

// A migration changes the schema from one version to the next. Versions
// count from 1; migrations[i] makes version i+1. Append, never edit: a
// database at version n has run the first n.
type migration struct {
	sqlite, postgres []string
}

func (m migration) statements(d Dialect) []string {
	if d == SQLite {
		return m.sqlite
	}
	return m.postgres
}

var migrations = []migration{
	{ // 1: plants. A NULL tag is an absent one.
		sqlite: []string{`CREATE TABLE plants (
			id   INTEGER PRIMARY KEY,
			name TEXT NOT NULL,
			tag  TEXT
		) STRICT`},
		postgres: []string{`CREATE TABLE plants (
			id   BIGINT PRIMARY KEY,
			name TEXT NOT NULL,
			tag  TEXT
		)`},
	},
	{ // 2: the outbox of "plant added" events. seq is never reused.
		sqlite: []string{`CREATE TABLE events (
			seq        INTEGER PRIMARY KEY AUTOINCREMENT,
			plant_id   INTEGER NOT NULL,
			name       TEXT NOT NULL,
			tag        TEXT,
			created_us INTEGER NOT NULL
		) STRICT`},
		postgres: []string{`CREATE TABLE events (
			seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
			plant_id   BIGINT NOT NULL,
			name       TEXT NOT NULL,
			tag        TEXT,
			created_us BIGINT NOT NULL
		)`},
	},
	{ // 3: mark a SQLite file as plantstore's; see PrepareSQLiteFile.
		sqlite: []string{fmt.Sprintf(`PRAGMA application_id = %d`, ApplicationID)},
	},
	{ // 4: one row per (subscriber, event) delivery not yet ended, with its
		// retry schedule and lease; see outbox.go.
		sqlite: []string{`CREATE TABLE webhook_deliveries (
			subscriber TEXT NOT NULL,
			seq        INTEGER NOT NULL,
			attempts   INTEGER NOT NULL DEFAULT 0,
			due_us     INTEGER NOT NULL DEFAULT 0,
			lease_us   INTEGER NOT NULL DEFAULT 0,
			owner      TEXT NOT NULL DEFAULT '',
			PRIMARY KEY (subscriber, seq)
		) STRICT, WITHOUT ROWID`,
			`CREATE INDEX webhook_deliveries_seq ON webhook_deliveries (seq)`},
		postgres: []string{`CREATE TABLE webhook_deliveries (
			subscriber TEXT NOT NULL,
			seq        BIGINT NOT NULL,
			attempts   INTEGER NOT NULL DEFAULT 0,
			due_us     BIGINT NOT NULL DEFAULT 0,
			lease_us   BIGINT NOT NULL DEFAULT 0,
			owner      TEXT NOT NULL DEFAULT '',
			PRIMARY KEY (subscriber, seq)
		)`,
			`CREATE INDEX webhook_deliveries_seq ON webhook_deliveries (seq)`},
	},
	{ // 5: the one row Store.ProbeWrite rewrites to check that a commit
		// reaches the disk.
		sqlite: []string{`CREATE TABLE write_probe (
			id  INTEGER PRIMARY KEY,
			n   INTEGER NOT NULL,
			pad BLOB NOT NULL
		) STRICT`},
		postgres: []string{`CREATE TABLE write_probe (
			id  INTEGER PRIMARY KEY,
			n   BIGINT NOT NULL,
			pad BYTEA NOT NULL
		)`},
	},
	{ // 6: PostgreSQL: an event is marked once fanned out, so that
		// creates need no lock to keep the fan-out from skipping an event
		// that commits late; see queries.fanOut. The events up to the
		// greatest seq with a delivery have been fanned out.
		postgres: []string{
			`ALTER TABLE events ADD COLUMN fanned BOOLEAN NOT NULL DEFAULT false`,
			`UPDATE events SET fanned = true WHERE seq <= (SELECT coalesce(max(seq), 0) FROM webhook_deliveries)`,
			`CREATE INDEX events_unfanned ON events (seq) WHERE NOT fanned`,
		},
	},
	{ // 7: the deliveries that are due, for Claim: without it, a claim
		// reads every delivery waiting out its backoff (a subscriber that
		// fails, a backlog of 200,000: a 10 ms scan of the table per claim on
		// PostgreSQL, against 0.3 ms with it).
		sqlite:   []string{`CREATE INDEX webhook_deliveries_due ON webhook_deliveries (subscriber, due_us)`},
		postgres: []string{`CREATE INDEX webhook_deliveries_due ON webhook_deliveries (subscriber, due_us)`},
	},
	{ // 8: one row per live run of a Dispatcher, renewed while it lives,
		// so that a restarted instance takes back the leases of its
		// previous run once that run is gone, and never those of a live
		// run of the same name; see runs.go. An existing database starts
		// with none: the leases of runs that started before expire.
		sqlite: []string{`CREATE TABLE webhook_runs (
			owner      TEXT PRIMARY KEY,
			instance   TEXT NOT NULL,
			expires_us INTEGER NOT NULL
		) STRICT, WITHOUT ROWID`,
			`CREATE INDEX webhook_runs_instance ON webhook_runs (instance)`},
		postgres: []string{`CREATE TABLE webhook_runs (
			owner      TEXT PRIMARY KEY,
			instance   TEXT NOT NULL,
			expires_us BIGINT NOT NULL
		)`,
			`CREATE INDEX webhook_runs_instance ON webhook_runs (instance)`},
	},
}

// migrateLockKey is the PostgreSQL advisory lock that serialises
// migrations of one database by concurrent Opens.
const migrateLockKey = 0x706c616e74730001 // "plants" 1

// migrate brings db to version len(ms), in one transaction that holds the
// database's write lock (SQLite) or an advisory lock (PostgreSQL), so that
// concurrent Opens migrate once.
func migrate(ctx context.Context, db *sql.DB, d Dialect, ms []migration) error {
	want := len(ms)
	if v, err := schemaVersion(ctx, db); err == nil {
		switch {
		case v == want:
			return nil
		case v > want:
			return fmt.Errorf("sqlstore: schema version %d, this program knows up to %d: %w", v, want, ErrSchemaTooNew)
		}
	}

	conn, err := db.Conn(ctx)
	if err != nil {
		return failure(ctx, "migrate", err)
	}
	defer conn.Close()
	begin := []string{"BEGIN IMMEDIATE"}
	if d == Postgres {
		// Another Open's migration is waited for however long it takes,
		// within ctx, whatever lock_timeout the session has.
		begin = []string{"BEGIN", "SET LOCAL lock_timeout = 0", fmt.Sprintf("SELECT pg_advisory_xact_lock(%d)", migrateLockKey)}
	}
	for _, stmt := range begin {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			abandon(conn)
			return failure(ctx, "migrate: begin", err)
		}
	}
	if err := migrateLocked(ctx, conn, d, ms); err != nil {
		if _, rbErr := conn.ExecContext(context.Background(), "ROLLBACK"); rbErr != nil {
			abandon(conn)
		}
		return err
	}
	return nil
}

func migrateLocked(ctx context.Context, conn *sql.Conn, d Dialect, ms []migration) error {
	exec := func(op, stmt string, args ...any) error {
		if _, err := conn.ExecContext(ctx, stmt, args...); err != nil {
			return failure(ctx, "migrate: "+op, err)
		}
		return nil
	}
	if d == SQLite {
		// Another application's tables are not to be added to.
		if why, err := whyNotPlantstore(ctx, conn); err != nil {
			return failure(ctx, "migrate: check owner", err)
		} else if why != "" {
			return notPlantstoreError("the database", why)
		}
	}
	if err := exec("create schema_version", `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return err
	}
	v, err := schemaVersion(ctx, conn)
	if errors.Is(err, sql.ErrNoRows) {
		v = 0
		if err := exec("set version", `INSERT INTO schema_version (version) VALUES (0)`); err != nil {
			return err
		}
	} else if err != nil {
		return failure(ctx, "migrate: read version", err)
	}
	want := len(ms)
	if v > want {
		return fmt.Errorf("sqlstore: schema version %d, this program knows up to %d: %w", v, want, ErrSchemaTooNew)
	}
	for i := v; i < want; i++ {
		for _, stmt := range ms[i].statements(d) {
			if err := exec(fmt.Sprintf("version %d", i+1), stmt); err != nil {
				return err
			}
		}
	}
	if err := exec("set version", fmt.Sprintf(`UPDATE schema_version SET version = %d`, want)); err != nil {
		return err
	}
	return exec("commit", "COMMIT")
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// schemaVersion returns the version db's schema is at, sql.ErrNoRows when
// it has none yet, or another error when it has no schema_version table.
func schemaVersion(ctx context.Context, q querier) (int, error) {
	var v int
	err := q.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&v)
	return v, err
}

// abandon closes conn's connection instead of returning it to the pool,
// for when it may still be inside a transaction.
func abandon(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
}

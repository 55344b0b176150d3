package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

func version(t *testing.T, db *sql.DB) int {
	t.Helper()
	v, err := schemaVersion(context.Background(), db)
	if err != nil {
		t.Fatalf("read schema version: %v", err)
	}
	return v
}

// TestMigrate opens databases an earlier release left at an older schema
// version, with rows it wrote, and checks that Open brings them to the
// current version and that the rows mean what they meant: a plant stored
// before the outbox, after which each Create records an event; an outbox
// of version 5 (PostgreSQL) whose fan-out goes on where it was, the events
// not fanned out fanned out once and the others not again; and deliveries
// leased by a program that recorded no runs, whose leases stand: they are
// not taken back, and expire.
func TestMigrate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name         string
		version      int
		postgresOnly bool
		stmts        []string
		check        func(t *testing.T, s *Store)
	}{
		{"plants of version 1", 1, false, []string{`INSERT INTO plants (id, name, tag) VALUES (7, 'old', NULL)`}, func(t *testing.T, s *Store) {
			wantPlant(t, s, plantstore.Plant{ID: 7, Name: "old"})
			mustCreate(t, s, "new", 8)
			if events := allEvents(t, s); len(events) != 1 {
				t.Errorf("events after migration = %v, want one", events)
			}
		}},
		{"outbox in flight", 5, true, []string{
			`INSERT INTO events (plant_id, name, created_us) VALUES (1, 'a', 0), (2, 'b', 0), (3, 'c', 0), (4, 'd', 0)`,
			// Events 1 and 2 were fanned out; 1 has been delivered to b.
			`INSERT INTO webhook_deliveries (subscriber, seq) VALUES ('a', 1), ('a', 2), ('b', 2)`,
		}, func(t *testing.T, s *Store) {
			if n, err := s.FanOut(ctx, []string{"a", "b"}, 10); err != nil || n != 2 {
				t.Fatalf("FanOut() after the migration = %d, %v; want 2: events 3 and 4", n, err)
			}
			rows, err := column(ctx, s.db, `SELECT subscriber || '/' || seq FROM webhook_deliveries ORDER BY seq, subscriber`)
			want := []string{"a/1", "a/2", "b/2", "a/3", "b/3", "a/4", "b/4"}
			if diff := cmp.Diff(want, rows); err != nil || diff != "" {
				t.Errorf("deliveries after the migration (%v) mismatch (-want +got):\n%s", err, diff)
			}
		}},
		{"leases without runs", 7, false, []string{
			`INSERT INTO events (plant_id, name, created_us) VALUES (1, 'p', 0)`,
			`INSERT INTO webhook_deliveries (subscriber, seq, lease_us, owner) SELECT 'a', seq, 9000000000000000, 'plantstore host 10.0.0.1:8080' FROM events`,
		}, func(t *testing.T, s *Store) {
			const instance = "plantstore host 10.0.0.1:8080"
			beat(t, s, instance, instance+" run 1", time.Hour)
			if n, others, err := s.TakeBack(ctx, instance, instance+" run 1"); err != nil || n != 0 || others != 0 {
				t.Errorf("TakeBack() after the migration = %d, %d, %v, want nothing", n, others, err)
			}
			if got, _ := claim(t, s, "a", "new", time.Now().Add(time.Hour), 10); len(got) != 0 {
				t.Errorf("Claim() of a delivery leased before the migration = %v, want none", got)
			}
		}},
	}
	eachBackend(t, func(t *testing.T, be backend) {
		for _, tt := range tests {
			if tt.postgresOnly && be.dialect != Postgres {
				continue
			}
			t.Run(tt.name, func(t *testing.T) {
				db, _ := be.newDB(t)
				if err := migrate(ctx, db, be.dialect, migrations[:tt.version]); err != nil {
					t.Fatalf("migrate to version %d: %v", tt.version, err)
				}
				if got := version(t, db); got != tt.version {
					t.Fatalf("schema version = %d, want %d", got, tt.version)
				}
				for _, stmt := range tt.stmts {
					if _, err := db.Exec(stmt); err != nil {
						t.Fatalf("%s: %v", stmt, err)
					}
				}
				s := openStore(t, db, be.dialect, WithOutbox())
				if got := version(t, db); got != len(migrations) {
					t.Errorf("schema version after Open = %d, want %d", got, len(migrations))
				}
				tt.check(t, s)
			})
		}
	})
}

// TestOpenRefuses checks the databases Open refuses, each with its own
// error and none with ErrUnavailable, which would say that waiting mends
// it: another application's tables, left as they were; a schema newer
// than this build's, which migrate refuses too; a database it may not
// write; and SQLite settings that do not make each commit durable.
func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	// sqliteWith opens a new SQLite file with the URI parameters params.
	sqliteWith := func(params string) func(t *testing.T, be backend) *sql.DB {
		return func(t *testing.T, _ backend) *sql.DB {
			return openDB(t, "sqlite", "file:"+filepath.Join(t.TempDir(), "plants.db")+"?"+params)
		}
	}
	tests := []struct {
		name       string
		sqliteOnly bool
		db         func(t *testing.T, be backend) *sql.DB
		wantErr    error
		after      func(t *testing.T, be backend, db *sql.DB)
	}{
		{"foreign tables", true, func(t *testing.T, _ backend) *sql.DB {
			path := filepath.Join(t.TempDir(), "plants.db")
			execSQLite(t, path, `CREATE TABLE customers (a)`)
			return openDB(t, "sqlite", SQLiteDSN(path))
		}, ErrNotPlantstore, func(t *testing.T, _ backend, db *sql.DB) {
			tables, err := column(context.Background(), db, `SELECT name FROM sqlite_schema WHERE type = 'table'`)
			if diff := cmp.Diff([]string{"customers"}, tables); err != nil || diff != "" {
				t.Errorf("tables after a refused Open (%v) (-want +got):\n%s", err, diff)
			}
		}},
		{"newer schema", false, func(t *testing.T, be backend) *sql.DB {
			db, _ := be.newDB(t)
			openStore(t, db, be.dialect).Close()
			if _, err := db.Exec(`UPDATE schema_version SET version = version + 1`); err != nil {
				t.Fatal(err)
			}
			return db
		}, ErrSchemaTooNew, func(t *testing.T, be backend, db *sql.DB) {
			if err := migrate(context.Background(), db, be.dialect, migrations); !errors.Is(err, ErrSchemaTooNew) {
				t.Errorf("migrate of a newer schema = %v, want ErrSchemaTooNew", err)
			}
		}},
		{"read-only", false, func(t *testing.T, be backend) *sql.DB {
			if be.dialect == Postgres {
				_, dsn := be.newDB(t)
				return openDB(t, be.driver, withParams(t, dsn, map[string]string{"default_transaction_read_only": "on"}))
			}
			path := filepath.Join(t.TempDir(), "plants.db")
			openSQLite(t, path).Close()
			// SQLite opens a file it may not write read-only without an
			// error; mode=ro does the same for a process that may.
			return openDB(t, "sqlite", SQLiteDSN(path)+"&mode=ro")
		}, ErrReadOnly, nil},
		{"rollback journal", true, sqliteWith("_pragma=busy_timeout(10000)&_pragma=synchronous(FULL)"), ErrNotDurable, nil},
		{"synchronous normal", true, sqliteWith("_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)"), ErrNotDurable, nil},
		{"synchronous off", true, sqliteWith("_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(OFF)"), ErrNotDurable, nil},
		{"no busy timeout", true, sqliteWith("_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)"), ErrNotDurable, nil},
	}
	eachBackend(t, func(t *testing.T, be backend) {
		for _, tt := range tests {
			if tt.sqliteOnly && be.dialect != SQLite {
				continue
			}
			t.Run(tt.name, func(t *testing.T) {
				db := tt.db(t, be)
				s, err := Open(context.Background(), db, be.dialect)
				if !errors.Is(err, tt.wantErr) || errors.Is(err, plantstore.ErrUnavailable) {
					t.Fatalf("Open = %v, %v, want %v and not ErrUnavailable", s, err, tt.wantErr)
				}
				if tt.after != nil {
					tt.after(t, be, db)
				}
			})
		}
	})
}

// TestConcurrentOpensMigrateOnce opens new databases from separate
// *sql.DBs at once, as separate processes would: each Open succeeds and
// the schema is migrated once, to one row of schema_version; a Store
// opened on it again, on a new *sql.DB, keeps the plants stored before.
func TestConcurrentOpensMigrateOnce(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, be backend) {
		// Openers of a new SQLite file race to switch it to WAL, and
		// SQLite answers the losers SQLITE_BUSY without waiting; before
		// Open retried that, about one round in seventy failed. Many
		// new files make such a failure likely to show; -short makes
		// fewer.
		rounds := 1
		if be.dialect == SQLite {
			rounds = 50
			if testing.Short() {
				rounds = 10
			}
		}
		var dsn string
		for range rounds {
			dsn = concurrentOpens(t, be)
		}
		want := plantstore.Plant{ID: 1, Name: "kept", HasTag: true}
		db := openDB(t, be.driver, dsn)
		s := openStore(t, db, be.dialect)
		if err := s.Create(context.Background(), want); err != nil {
			t.Fatal(err)
		}
		s.Close()
		db.Close()
		db = openDB(t, be.driver, dsn)
		wantPlant(t, openStore(t, db, be.dialect), want)
		if got, rows := version(t, db), queryInt(t, db, `SELECT count(*) FROM schema_version`); got != len(migrations) || rows != 1 {
			t.Errorf("schema version after reopen = %d in %d rows, want %d in 1", got, rows, len(migrations))
		}
	})
}

// concurrentOpens opens a new database of be from several *sql.DBs at
// once, and returns its DSN.
func concurrentOpens(t *testing.T, be backend) string {
	t.Helper()
	_, dsn := be.newDB(t)
	const n = 4
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		db := openDB(t, be.driver, dsn)
		wg.Go(func() {
			var s *Store
			s, errs[i] = Open(context.Background(), db, be.dialect)
			if s != nil {
				s.Close()
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d = %v", i, err)
		}
	}
	db := openDB(t, be.driver, dsn)
	if got := version(t, db); got != len(migrations) {
		t.Errorf("schema version = %d, want %d", got, len(migrations))
	}
	return dsn
}

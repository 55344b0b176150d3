package sqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/storagetest"
)

// TestMain runs 8 tests at a time: most of them wait on the database's
// commits, not the CPU.
func TestMain(m *testing.M) {
	os.Exit(testkit.Main(m, 8))
}

// A backend opens empty databases of one dialect for a test.
type backend struct {
	name    string
	dialect Dialect
	// newDB returns a *sql.DB on an empty database, closed in tb.Cleanup,
	// and the DSN that opens it again.
	newDB func(tb testing.TB) (*sql.DB, string)
	// driver is the database/sql driver name for the DSN.
	driver string
}

var (
	sqliteBackend   = backend{name: "sqlite", dialect: SQLite, newDB: newSQLiteDB, driver: "sqlite"}
	postgresBackend = backend{name: "postgres", dialect: Postgres, newDB: newPostgresDB, driver: "pgx"}
	backends        = []backend{sqliteBackend, postgresBackend}
)

// A mode is a set of options a Store is tested with.
type mode struct {
	name string
	opts []Option
}

// modes are the commit modes every backend is tested in. The outbox adds
// to what Create writes: TestStorage runs each mode with it and without
// it, and TestOutbox… and TestDatabaseOutage test the rest of it.
var modes = []mode{{"group", nil}, {"single", []Option{WithoutGroupCommit()}}}

// eachBackend runs fn in a parallel subtest for each backend.
func eachBackend(t *testing.T, fn func(t *testing.T, be backend)) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			fn(t, be)
		})
	}
}

// eachMode runs fn in a parallel subtest for each of ms.
func eachMode(t *testing.T, ms []mode, fn func(t *testing.T, opts []Option)) {
	for _, m := range ms {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			fn(t, m.opts)
		})
	}
}

func newSQLiteDB(tb testing.TB) (*sql.DB, string) {
	tb.Helper()
	dsn := SQLiteDSN(filepath.Join(tb.TempDir(), "plants.db"))
	return openDB(tb, "sqlite", dsn), dsn
}

func openDB(tb testing.TB, driver, dsn string) *sql.DB {
	tb.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		tb.Fatalf("sql.Open(%q) = %v", driver, err)
	}
	// Several tests run at once against one PostgreSQL server, which
	// allows 100 connections.
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	tb.Cleanup(func() { db.Close() })
	return db
}

// newPostgresDB creates a schema of its own in the test database, dropped
// in tb.Cleanup, and returns a *sql.DB whose connections use it. It skips
// tb when PLANTSTORE_TEST_POSTGRES_DSN is unset.
func newPostgresDB(tb testing.TB) (*sql.DB, string) {
	tb.Helper()
	base := os.Getenv("PLANTSTORE_TEST_POSTGRES_DSN")
	if base == "" {
		tb.Skip("PostgreSQL tests skipped: set PLANTSTORE_TEST_POSTGRES_DSN, e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
	}
	schema := "plantstore_test_" + rand.Text()[:12]
	admin := openDB(tb, "pgx", base)
	if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		tb.Fatalf("create schema: %v", err)
	}
	tb.Cleanup(func() {
		if _, err := admin.Exec(`DROP SCHEMA ` + schema + ` CASCADE`); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
	})
	dsn := withParams(tb, base, map[string]string{
		"search_path":      schema,
		"application_name": schema,
		"connect_timeout":  "5",
	})
	return openDB(tb, "pgx", dsn), dsn
}

// withParams returns dsn with the query parameters params set.
func withParams(tb testing.TB, dsn string, params map[string]string) string {
	tb.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		tb.Fatalf("parse DSN: %v", err)
	}
	q := u.Query()
	for k, v := range params {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// openStore opens a Store on db, closed in tb.Cleanup.
func openStore(tb testing.TB, db *sql.DB, d Dialect, opts ...Option) *Store {
	tb.Helper()
	s, err := Open(context.Background(), db, d, opts...)
	if err != nil {
		tb.Fatalf("Open(%v) = %v", d, err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// open opens a Store with opts on an empty database of be, both closed in
// tb.Cleanup; the Store's db field is the database.
func (be backend) open(tb testing.TB, opts ...Option) *Store {
	tb.Helper()
	db, _ := be.newDB(tb)
	return openStore(tb, db, be.dialect, opts...)
}

// mustCreate creates in s a plant named name under each of ids.
func mustCreate(tb testing.TB, s *Store, name string, ids ...int64) {
	tb.Helper()
	for _, id := range ids {
		if err := s.Create(context.Background(), plantstore.Plant{ID: id, Name: name}); err != nil {
			tb.Fatalf("Create(%d) = %v", id, err)
		}
	}
}

// wantPlant checks that s holds want.
func wantPlant(t *testing.T, s *Store, want plantstore.Plant) {
	t.Helper()
	got, err := s.Plant(context.Background(), want.ID)
	if err != nil {
		t.Fatalf("Plant(%d) = %v, want the plant", want.ID, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Plant(%d) mismatch (-want +got):\n%s", want.ID, diff)
	}
}

// queryInt returns the one integer that query returns on db.
func queryInt(t *testing.T, db *sql.DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// queryInts returns the integers of the one column that query returns on db.
func queryInts(t *testing.T, db *sql.DB, query string) []int64 {
	t.Helper()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var vs []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		vs = append(vs, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return vs
}

// TestStorage runs storagetest's suite, which checks the Outbox contract
// with the outbox on and, with it off, that it records no event.
func TestStorage(t *testing.T) {
	t.Parallel()
	for _, be := range backends {
		for _, mode := range modes {
			if mode.opts != nil && !testkit.LongOn() {
				// The whole suite against each mode that is not the
				// default is part of the long run.
				continue
			}
			for _, outbox := range []bool{false, true} {
				if !outbox && testing.Short() {
					continue // -short checks the storage with an outbox only
				}
				name, opts := be.name+"/mode="+mode.name, mode.opts
				if outbox {
					name, opts = name+"+outbox", append([]Option{WithOutbox()}, opts...)
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					storagetest.Run(t, func(t *testing.T) plantstore.Storage { return be.open(t, opts...) })
				})
			}
		}
	}
}

// TestBatchOutcomes checks what each Create of a batch is answered and
// what the batch stores: the first of an id wins, in batch order; the tag
// column is NULL for a plant without a tag and as given otherwise.
func TestBatchOutcomes(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, be backend) {
		s := be.open(t, WithOutbox())
		ctx := context.Background()
		mustCreate(t, s, "stored before", 5)
		tests := []struct {
			plant   plantstore.Plant
			wantErr error
			reason  string
		}{
			{plantstore.Plant{ID: 9, Name: "first 9"}, nil, ""},
			{plantstore.Plant{ID: 5, Name: "second 5"}, plantstore.ErrConflict, "id stored before the batch"},
			{plantstore.Plant{ID: 9, Name: "second 9"}, plantstore.ErrConflict, "the first of a batch wins"},
			{plantstore.Plant{ID: -1, Name: "minus one"}, nil, "batch order is not id order"},
			{plantstore.Plant{ID: 9, Name: "third 9"}, plantstore.ErrConflict, ""},
		}
		var reqs []*createReq
		for _, tt := range tests {
			reqs = append(reqs, &createReq{plant: tt.plant})
		}
		errs, _ := s.insert(ctx, ctx, reqs)
		for i, tt := range tests {
			if !errors.Is(errs[i], tt.wantErr) || (tt.wantErr == nil && errs[i] != nil) {
				t.Errorf("create %+v in a batch = %v, want %v (%s)", tt.plant, errs[i], tt.wantErr, tt.reason)
			}
		}
		// A Create that waited for its turn until too little of its time
		// is left is answered at once, and stores nothing.
		late := &createReq{plant: plantstore.Plant{ID: 7, Name: "late"}, deadline: time.Now(), done: make(chan error, 1)}
		s.commitBatch([]*createReq{late}, false)
		if err := <-late.done; !errors.Is(err, plantstore.ErrUnavailable) {
			t.Errorf("create with no time left = %v, want ErrUnavailable", err)
		}
		got, err := s.List(ctx, -100, 10)
		if err != nil {
			t.Fatal(err)
		}
		want := []plantstore.Plant{{ID: -1, Name: "minus one"}, {ID: 5, Name: "stored before"}, {ID: 9, Name: "first 9"}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("plants after the batch mismatch (-want +got):\n%s", diff)
		}
		gotEvents := map[int64]string{}
		for _, e := range allEvents(t, s) {
			gotEvents[e.Plant.ID] = e.Plant.Name
		}
		wantEvents := map[int64]string{-1: "minus one", 5: "stored before", 9: "first 9"}
		if diff := cmp.Diff(wantEvents, gotEvents); diff != "" {
			t.Errorf("events after the batch mismatch (-want +got):\n%s", diff)
		}

		// A batch of more than maxPreparedBatch, in chunks on SQLite, with
		// a taken id in its second chunk.
		const first, taken = 1000, 1000 + maxPreparedBatch + 3
		mustCreate(t, s, "taken before", taken)
		reqs, want = nil, nil
		untagged := 1 // "taken before"
		for id := int64(first); id < first+2*maxPreparedBatch+5; id++ {
			p := plantstore.Plant{ID: id, Name: fmt.Sprint("big ", id), Tag: []string{"", "", "t"}[id%3], HasTag: id%3 > 0}
			if !p.HasTag && id != taken {
				untagged++
			}
			reqs = append(reqs, &createReq{plant: p})
			if id == taken {
				p = plantstore.Plant{ID: id, Name: "taken before"}
			}
			want = append(want, p)
			wantEvents[id] = p.Name
		}
		slices.Reverse(reqs)
		errs, _ = s.insert(ctx, ctx, reqs)
		for i, r := range reqs {
			var wantErr error
			if r.plant.ID == taken {
				wantErr = plantstore.ErrConflict
			}
			if !errors.Is(errs[i], wantErr) {
				t.Errorf("create %d in a large batch = %v, want %v", r.plant.ID, errs[i], wantErr)
			}
		}
		if got, err = s.List(ctx, first, 500); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("plants after the large batch mismatch (-want +got):\n%s", diff)
		}
		if n := queryInt(t, s.db, `SELECT count(*) FROM plants WHERE tag IS NULL AND id >= `+s.q.param(1), first); n != untagged {
			t.Errorf("%d rows of the large batch with a NULL tag, want %d: the plants without one", n, untagged)
		}
		clear(gotEvents)
		for _, e := range allEvents(t, s) {
			gotEvents[e.Plant.ID] = e.Plant.Name
		}
		if diff := cmp.Diff(wantEvents, gotEvents); diff != "" {
			t.Errorf("events after the large batch mismatch (-want +got):\n%s", diff)
		}
	})
}

// TestTakenIDsGuardLaterBatches checks how a one-statement batch on
// PostgreSQL meets a taken id: sent as a plain INSERT, it fails as a
// whole and goes again skipping taken ids, as do the next guardedBatches
// batches; a batch with no taken id changes nothing.
func TestTakenIDsGuardLaterBatches(t *testing.T) {
	t.Parallel()
	s := postgresBackend.open(t, WithOutbox())
	ctx := context.Background()
	batch := func(ids ...int64) []error {
		var reqs []*createReq
		for _, id := range ids {
			reqs = append(reqs, &createReq{plant: plantstore.Plant{ID: id, Name: "plant " + strconv.FormatInt(id, 10)}})
		}
		errs, committed := s.insert(ctx, ctx, reqs)
		if !committed {
			t.Fatalf("batch %v did not commit: %v", ids, errs)
		}
		return errs
	}
	for _, step := range []struct {
		ids         []int64
		conflicts   []bool
		wantGuarded int
	}{
		{[]int64{1, 2}, []bool{false, false}, 0},
		{[]int64{2, 3}, []bool{true, false}, guardedBatches},
		{[]int64{4}, []bool{false}, guardedBatches - 1},
		{[]int64{4, 5}, []bool{true, false}, guardedBatches - 2},
	} {
		errs := batch(step.ids...)
		for i, err := range errs {
			if got := errors.Is(err, plantstore.ErrConflict); got != step.conflicts[i] || !got && err != nil {
				t.Errorf("batch %v: create %d = %v, want conflict %v", step.ids, step.ids[i], err, step.conflicts[i])
			}
		}
		if s.guarded != step.wantGuarded {
			t.Errorf("after batch %v: %d batches to skip taken ids, want %d", step.ids, s.guarded, step.wantGuarded)
		}
	}
	got := map[int64]string{}
	for _, e := range allEvents(t, s) {
		got[e.Plant.ID] = e.Plant.Name
	}
	want := map[int64]string{1: "plant 1", 2: "plant 2", 3: "plant 3", 4: "plant 4", 5: "plant 5"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestDialectString(t *testing.T) {
	t.Parallel()
	for d, want := range map[Dialect]string{SQLite: "sqlite", Postgres: "postgres", 0: "Dialect(0)"} {
		if got := d.String(); got != want {
			t.Errorf("Dialect(%d).String() = %q, want %q", int(d), got, want)
		}
	}
	if _, err := Open(context.Background(), nil, 0); err == nil {
		t.Error("Open with an unknown dialect = nil error")
	}
}

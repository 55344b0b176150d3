package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/storagetest"
)

// stores is one database as several processes see it: Creates and
// Deletes, and the outbox's fan-outs, claims and acks, go in turn to
// Stores on separate *sql.DBs; the other calls to the first.
type stores struct {
	*Store
	all  []*Store
	next atomic.Uint32
}

func (ss *stores) pick() *Store { return ss.all[ss.next.Add(1)%uint32(len(ss.all))] }

func (ss *stores) Create(ctx context.Context, p plantstore.Plant) error {
	return ss.pick().Create(ctx, p)
}
func (ss *stores) Delete(ctx context.Context, id int64) error { return ss.pick().Delete(ctx, id) }
func (ss *stores) FanOut(ctx context.Context, subs []string, limit int) (int, error) {
	return ss.pick().FanOut(ctx, subs, limit)
}
func (ss *stores) Claim(ctx context.Context, sub, owner string, until time.Time, limit int) ([]plantstore.Delivery, error) {
	return ss.pick().Claim(ctx, sub, owner, until, limit)
}
func (ss *stores) Ack(ctx context.Context, sub string, seqs []int64) error {
	return ss.pick().Ack(ctx, sub, seqs)
}

// TestStoresShareADatabase runs storagetest's suite on three Stores, one
// without group commit, sharing one database: its racers for one id find
// one winner, and its concurrent owners of the outbox claim each delivery
// once (FOR UPDATE SKIP LOCKED on PostgreSQL, SQLite's file lock). No
// delivery is left without its event.
func TestStoresShareADatabase(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, be backend) {
		storagetest.Run(t, func(t *testing.T) plantstore.Storage {
			_, dsn := be.newDB(t)
			ss := &stores{}
			// Several Stores contend for one SQLite file lock: a Create
			// may wait long.
			for _, opts := range [][]Option{nil, {WithoutGroupCommit()}, nil} {
				db := openDB(t, be.driver, dsn)
				ss.all = append(ss.all, openStore(t, db, be.dialect, append(opts, WithOutbox(), WithTimeout(time.Minute))...))
			}
			ss.Store = ss.all[0]
			t.Cleanup(func() {
				if n := queryInt(t, ss.db, `SELECT count(*) FROM webhook_deliveries d WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.seq = d.seq)`); n != 0 {
					t.Errorf("%d deliveries left without their event", n)
				}
			})
			return ss
		})
	})
}

// waitForLockWaiter waits, asking db, until a session of the application
// that dsn names waits for a lock.
func waitForLockWaiter(t *testing.T, db *sql.DB, dsn string) {
	t.Helper()
	app := appName(t, dsn)
	testkit.WaitUntil(t, 10*time.Second, "a session to wait for a lock", func() bool {
		return queryInt(t, db, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, app) >= 1
	})
}

// TestCancelStopsBlockedQuery cancels calls while their statements wait for
// a row another transaction holds, so that they can only return by having
// their query cancelled.
func TestCancelStopsBlockedQuery(t *testing.T) {
	t.Parallel()
	db, dsn := postgresBackend.newDB(t)
	s := openStore(t, db, Postgres, WithoutGroupCommit())
	ctx := context.Background()
	mustCreate(t, s, "held", 2)
	holder := holdEventTx(t, openDB(t, "pgx", dsn), 1)
	if _, err := holder.Exec(`UPDATE plants SET name = 'locked' WHERE id = 2`); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Create", func(ctx context.Context) error { return s.Create(ctx, plantstore.Plant{ID: 1, Name: "blocked"}) }},
		{"Delete", func(ctx context.Context) error { return s.Delete(ctx, 2) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- tt.call(ctx) }()
			waitForLockWaiter(t, db, dsn)
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("%s cancelled while blocked = %v, want context.Canceled", tt.name, err)
			}
		})
	}
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Plant(ctx, 1); !errors.Is(err, plantstore.ErrNotFound) {
		t.Errorf("Plant(1) after the cancelled Create = %v, want ErrNotFound", err)
	}
	wantPlant(t, s, plantstore.Plant{ID: 2, Name: "held"}) // after the cancelled Delete
}

// TestCancelBeforeJoiningBatch cancels a Create while the committer is busy
// with an earlier batch: it returns at once and stores nothing, while the
// earlier batch's caller gets the batch's outcome.
func TestCancelBeforeJoiningBatch(t *testing.T) {
	t.Parallel()
	db, dsn := postgresBackend.newDB(t)
	s := openStore(t, db, Postgres)
	ctx := context.Background()
	holder := holdEventTx(t, openDB(t, "pgx", dsn), 1)

	first := make(chan error, 1)
	go func() { first <- s.Create(ctx, plantstore.Plant{ID: 1, Name: "first"}) }()
	waitForLockWaiter(t, db, dsn) // the committer is inside the first batch

	cctx, cancel := context.WithCancel(ctx)
	second := make(chan error, 1)
	go func() { second <- s.Create(cctx, plantstore.Plant{ID: 2, Name: "cancelled"}) }()
	cancel()
	if err := <-second; !errors.Is(err, context.Canceled) {
		t.Errorf("Create cancelled before joining a batch = %v, want context.Canceled", err)
	}
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Errorf("Create in the blocked batch = %v, want nil", err)
	}
	if _, err := s.Plant(ctx, 2); !errors.Is(err, plantstore.ErrNotFound) {
		t.Errorf("Plant(2) after its Create was cancelled = %v, want ErrNotFound", err)
	}
	wantPlant(t, s, plantstore.Plant{ID: 1, Name: "first"})
}

// appName returns the application_name that dsn sets.
func appName(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("application_name")
}

// TestLinger checks that the committer's wait for more Creates ends as soon
// as the batch holds what the pacer expects, when the Store closes, or at
// its bound, and keeps every Create it took.
func TestLinger(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, reason string
		sent, target int // sent: Creates sent during the wait
		until        time.Duration
		close        bool
		wantFull     bool
	}{
		{name: "reaches target", sent: 3, target: 4, until: time.Hour, wantFull: true, reason: "returns once 1+3 are in"},
		{name: "capped by maxBatch", sent: maxBatch - 1, target: maxBatch + 10, until: time.Hour, wantFull: true, reason: "a full batch stops the wait"},
		{name: "store closes", sent: 0, target: 4, until: time.Hour, close: true},
		{name: "time is up", sent: 0, target: 4, until: 10 * time.Millisecond},
		{name: "no time left", sent: 0, target: 4, until: -time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Store{reqs: make(chan *createReq), closed: make(chan struct{})}
			go func() {
				for range tt.sent {
					s.reqs <- &createReq{}
				}
				if tt.close {
					close(s.closed)
				}
			}()
			p := newPacer()
			p.target = tt.target
			tm := time.NewTimer(time.Hour)
			tm.Stop()
			batch, full := s.linger([]*createReq{{}}, &p, time.Now().Add(tt.until), tm)
			wantLen := min(tt.target, maxBatch, 1+tt.sent)
			if diff := cmp.Diff(wantLen, len(batch)); diff != "" {
				t.Errorf("len(linger(...)) (-want +got):\n%s\n%s", diff, tt.reason)
			}
			if full != tt.wantFull {
				t.Errorf("linger(...) full = %v, want %v", full, tt.wantFull)
			}
		})
	}
}

// TestPacer checks how the committer's target follows its callers: it
// rises by the Creates that came during a commit, stays at a full batch,
// and falls to a batch that its bound closed.
func TestPacer(t *testing.T) {
	t.Parallel()
	p := newPacer()
	if !p.full(1) {
		t.Errorf("a new pacer waits for more than one Create: target %d", p.target)
	}
	p.open(1, 31) // 31 came while a batch of 1 committed
	if p.target != 32 {
		t.Errorf("target after a batch of 1 with 31 waiting = %d, want 32", p.target)
	}
	if p.full(31) || !p.full(32) {
		t.Errorf("full(31), full(32) = %v, %v with target 32, want false, true", p.full(31), p.full(32))
	}
	p.closed(32, true)
	p.open(32, 0)
	if p.target != 32 {
		t.Errorf("target after a full batch of 32, none waiting = %d, want 32", p.target)
	}
	p.closed(30, false) // two callers left: the bound closed it
	if p.target != 30 {
		t.Errorf("target after a batch of 30 closed by its bound = %d, want 30", p.target)
	}
	p.closed(0, false)
	if p.target != 1 {
		t.Errorf("target after an empty batch = %d, want 1", p.target)
	}
	p.open(300, 300)
	if p.target != maxBatch {
		t.Errorf("target = %d, want it capped at maxBatch %d", p.target, maxBatch)
	}

	// With a flusher, a batch is half the callers: the other half runs
	// while it is flushed.
	p = newPacer()
	p.lanes = 2
	p.open(0, 33)
	if p.size() != 17 || p.full(16) || !p.full(17) {
		t.Errorf("two lanes, target 33: size %d, full(16) %v, full(17) %v; want 17, false, true", p.size(), p.full(16), p.full(17))
	}
}

package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/testkit"
)

// recorder is Hooks that count what they are told.
type recorder struct {
	mu        sync.Mutex
	done      map[string]int // "op/outcome" → calls
	batches   int
	committed int
	negative  bool // a duration below zero was reported
}

func (r *recorder) hooks() Hooks {
	r.done = map[string]int{}
	return Hooks{
		Done: func(op Op, took time.Duration, o Outcome) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.done[op.String()+"/"+o.String()]++
			r.negative = r.negative || took < 0
		},
		Committed: func(n int, took time.Duration) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.batches++
			r.committed += n
			r.negative = r.negative || took < 0
		},
	}
}

// waitCommitted waits until Committed has been told of n Creates in all.
// The committer calls it after it has answered a batch's Creates, so the
// last Create can return before Committed is told of it.
func (r *recorder) waitCommitted(t *testing.T, n int) {
	t.Helper()
	testkit.WaitUntil(t, 10*time.Second, fmt.Sprintf("Committed to be told of %d Creates", n), func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.committed >= n
	})
}

func TestHooks(t *testing.T) {
	t.Parallel()
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			db, _ := be.newDB(t)
			var rec recorder
			s := openStore(t, db, be.dialect, WithOutbox(), WithHooks(rec.hooks()))
			ctx := context.Background()
			mustBe := func(what string, err, wantErr error) {
				t.Helper()
				if !errors.Is(err, wantErr) || (wantErr == nil && err != nil) {
					t.Fatalf("%s = %v, want %v", what, err, wantErr)
				}
			}
			mustBe("Create", s.Create(ctx, plantstore.Plant{ID: 1, Name: "Fern"}), nil)
			mustBe("Create again", s.Create(ctx, plantstore.Plant{ID: 1, Name: "Fern"}), plantstore.ErrConflict)
			canceled, cancel := context.WithCancel(ctx)
			cancel()
			mustBe("Create with a canceled context", s.Create(canceled, plantstore.Plant{ID: 2, Name: "Aloe"}), context.Canceled)
			_, err := s.Plant(ctx, 1)
			mustBe("Plant", err, nil)
			_, err = s.Plant(ctx, 2)
			mustBe("Plant of a missing id", err, plantstore.ErrNotFound)
			_, err = s.List(ctx, 0, 10)
			mustBe("List", err, nil)
			_, err = s.FanOut(ctx, []string{"sub"}, 10)
			mustBe("FanOut", err, nil)
			deliveries, err := s.Claim(ctx, "sub", "me", time.Now().Add(time.Minute), 10)
			mustBe("Claim", err, nil)
			if len(deliveries) != 1 {
				t.Fatalf("Claim = %v, want one delivery", deliveries)
			}
			mustBe("Ack", s.Ack(ctx, "sub", []int64{deliveries[0].Seq}), nil)
			mustBe("Delete", s.Delete(ctx, 1), nil)
			mustBe("Delete again", s.Delete(ctx, 1), plantstore.ErrNotFound)
			mustBe("ProbeWrite", s.ProbeWrite(ctx), nil)
			mustBe("Ping", s.Ping(ctx), nil)
			// A failure that is neither the database's absence nor the
			// caller's: the table is gone.
			if _, err := db.Exec(`DROP TABLE plants`); err != nil {
				t.Fatal(err)
			}
			_, err = s.Plant(ctx, 1)
			if err == nil || errors.Is(err, plantstore.ErrUnavailable) || errors.Is(err, plantstore.ErrNotFound) {
				t.Fatalf("Plant without a table = %v, want another failure", err)
			}
			db.Close()
			mustBe("Create on a closed database", s.Create(ctx, plantstore.Plant{ID: 3, Name: "Ivy"}), plantstore.ErrUnavailable)
			mustBe("Ping on a closed database", s.Ping(ctx), plantstore.ErrUnavailable)

			want := map[string]int{
				"create/ok": 2, "create/canceled": 1, "create/unavailable": 1,
				"read/ok": 2, "read/other": 1, "list/ok": 1, "delete/ok": 2,
				"ping/ok": 1, "ping/unavailable": 1, "claim_events/ok": 1, "ack_events/ok": 1, "probe_write/ok": 1,
			}
			rec.waitCommitted(t, 3)
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if diff := cmp.Diff(want, rec.done); diff != "" {
				t.Errorf("operations reported (-want +got):\n%s", diff)
			}
			// The canceled Create never reached the committer; the three
			// others were each a batch of one.
			if rec.batches != 3 || rec.committed != 3 {
				t.Errorf("%d batches of %d Creates in all, want 3 of 1", rec.batches, rec.committed)
			}
			if rec.negative {
				t.Error("a negative duration was reported")
			}
		})
	}
}

// TestHooksBatchSizes creates plants from many goroutines at once: the
// batch sizes add up to the number of Creates, whatever the batching.
func TestHooksBatchSizes(t *testing.T) {
	t.Parallel()
	db, _ := sqliteBackend.newDB(t)
	var rec recorder
	s := openStore(t, db, SQLite, WithHooks(rec.hooks()))
	const creates = 64
	var wg sync.WaitGroup
	for i := range creates {
		wg.Go(func() {
			if err := s.Create(context.Background(), plantstore.Plant{ID: int64(i), Name: "x"}); err != nil {
				t.Errorf("Create(%d) = %v", i, err)
			}
		})
	}
	wg.Wait()
	rec.waitCommitted(t, creates)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.committed != creates || rec.batches < 1 || rec.batches > creates {
		t.Errorf("%d batches of %d Creates in all, want %d Creates in 1 to %d batches", rec.batches, rec.committed, creates, creates)
	}
}

// TestHooksWithoutGroupCommit shows that a Store that does not batch
// reports no commits.
func TestHooksWithoutGroupCommit(t *testing.T) {
	t.Parallel()
	db, _ := sqliteBackend.newDB(t)
	var rec recorder
	s := openStore(t, db, SQLite, WithoutGroupCommit(), WithHooks(rec.hooks()))
	if err := s.Create(context.Background(), plantstore.Plant{ID: 1, Name: "x"}); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if diff := cmp.Diff(map[string]int{"create/ok": 1}, rec.done); diff != "" || rec.batches != 0 {
		t.Errorf("reported %d batches and (-want +got):\n%s", rec.batches, diff)
	}
}

func TestOutcomeOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want Outcome
	}{
		{"success", nil, OK},
		{"conflict", fmt.Errorf("sqlstore: x: %w", plantstore.ErrConflict), OK},
		{"not found", plantstore.ErrNotFound, OK},
		{"unavailable", failure(context.Background(), "x", errors.New("connection reset")), Unavailable},
		{"driver timeout", failure(context.Background(), "x", context.DeadlineExceeded), Unavailable},
		{"outcome unknown", fmt.Errorf("sqlstore: commit: %w: %w", plantstore.ErrOutcomeUnknown, plantstore.ErrUnavailable), OutcomeUnknown},
		{"caller canceled", failure(canceledContext(), "x", errors.New("connection reset")), Canceled},
		{"caller deadline", fmt.Errorf("sqlstore: x: %w", context.DeadlineExceeded), Canceled},
		{"other", fmt.Errorf("sqlstore: x: %w", errors.New("syntax error")), Failed},
	}
	for _, tt := range tests {
		if got := outcomeOf(tt.err); got != tt.want {
			t.Errorf("%s: outcomeOf(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

func canceledContext() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

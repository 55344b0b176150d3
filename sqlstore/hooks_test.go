package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
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

// TestHooks makes each call of a Store once or twice, with each outcome
// the Store can tell its Done hook of, until after its Close, and checks
// what Done and Committed are told, in both commit modes: a Store that
// does not batch reports no commits.
func TestHooks(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, be backend) {
		eachMode(t, modes, func(t *testing.T, opts []Option) {
			var rec recorder
			// The committer's own SQLite connection would outlive the
			// db.Close below (see flusher), and Creates with it.
			s := be.open(t, append([]Option{WithOutbox(), WithHooks(rec.hooks()), withoutFlusher()}, opts...)...)
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
			if _, err := s.db.Exec(`DROP TABLE plants`); err != nil {
				t.Fatal(err)
			}
			_, err = s.Plant(ctx, 1)
			if err == nil || errors.Is(err, plantstore.ErrUnavailable) || errors.Is(err, plantstore.ErrNotFound) {
				t.Fatalf("Plant without a table = %v, want another failure", err)
			}
			s.db.Close()
			mustBe("Create on a closed database", s.Create(ctx, plantstore.Plant{ID: 3, Name: "Ivy"}), plantstore.ErrUnavailable)
			mustBe("Ping on a closed database", s.Ping(ctx), plantstore.ErrUnavailable)
			mustBe("Close", s.Close(), nil)
			mustBe("Create after Close", s.Create(ctx, plantstore.Plant{ID: 4, Name: "Moss"}), plantstore.ErrUnavailable)
			mustBe("second Close", s.Close(), nil)

			want := map[string]int{
				"create/ok": 2, "create/canceled": 1, "create/unavailable": 2,
				"read/ok": 2, "read/other": 1, "list/ok": 1, "delete/ok": 2,
				"ping/ok": 1, "ping/unavailable": 1, "claim_events/ok": 1, "ack_events/ok": 1, "probe_write/ok": 1,
			}
			// The canceled Create never reached the committer; the three
			// others were each a batch of one.
			batches := 3
			if opts != nil {
				batches = 0
			}
			rec.waitCommitted(t, batches)
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if diff := cmp.Diff(want, rec.done); diff != "" {
				t.Errorf("operations reported (-want +got):\n%s", diff)
			}
			if rec.batches != batches || rec.committed != batches {
				t.Errorf("%d batches of %d Creates in all, want %d of 1", rec.batches, rec.committed, batches)
			}
			if rec.negative {
				t.Error("a negative duration was reported")
			}
		})
	})
}

func TestOutcomeOf(t *testing.T) {
	t.Parallel()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
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
		{"caller canceled", failure(canceled, "x", errors.New("connection reset")), Canceled},
		{"caller deadline", fmt.Errorf("sqlstore: x: %w", context.DeadlineExceeded), Canceled},
		{"other", fmt.Errorf("sqlstore: x: %w", errors.New("syntax error")), Failed},
	}
	for _, tt := range tests {
		if got := outcomeOf(tt.err); got != tt.want {
			t.Errorf("%s: outcomeOf(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

// TestHooksCompose gives a Store two sets of Hooks and one of nothing, and
// checks that every event reaches both sets, the first set's first; that
// the second Start goes on from the context the first returned, and the
// operation and its batch go on with the second's; and that ends are
// called in the reverse order, the second set's first.
func TestHooksCompose(t *testing.T) {
	t.Parallel()
	type key struct{}
	var mu sync.Mutex
	var events []string
	record := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, s)
	}
	set := func(name string) Hooks {
		return Hooks{
			Done:      func(op Op, _ time.Duration, k Outcome) { record(name + " done " + op.String() + " " + k.String()) },
			Committed: func(n int, _ time.Duration) { record(name + " committed") },
			Start: func(ctx context.Context, op Op) (context.Context, func(Outcome)) {
				before, _ := ctx.Value(key{}).(string)
				record(name + " start " + op.String() + " after " + before)
				return context.WithValue(ctx, key{}, before+name), func(k Outcome) {
					record(name + " end " + op.String() + " " + k.String())
				}
			},
			Batch: func(joined []context.Context) func(Outcome) {
				var seen []string
				for _, ctx := range joined {
					v, _ := ctx.Value(key{}).(string)
					seen = append(seen, v)
				}
				record(name + " batch of " + strings.Join(seen, ","))
				return func(k Outcome) { record(name + " batch end " + k.String()) }
			},
		}
	}
	s := sqliteBackend.open(t, WithHooks(set("A")), WithHooks(Hooks{}), WithHooks(set("B")))
	mustCreate(t, s, "Fern", 1)
	if _, err := s.Plant(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	// Committed is told on the committer's goroutine, after the Create is
	// answered: the read may come before it.
	testkit.WaitUntil(t, 10*time.Second, "Committed to be told of the Create", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(events, "B committed")
	})
	mu.Lock()
	got := slices.Clone(events)
	mu.Unlock()
	want := map[string][]string{
		"create": {"A start create after ", "B start create after A",
			"A done create ok", "B done create ok", "B end create ok", "A end create ok"},
		"batch":     {"A batch of AB", "B batch of AB", "B batch end ok", "A batch end ok"},
		"read":      {"A start read after ", "B start read after A", "A done read ok", "B done read ok", "B end read ok", "A end read ok"},
		"committed": {"A committed", "B committed"},
	}
	// Each group's events, in the order they came: each group's are
	// told on one goroutine, the caller's or the committer's.
	for name := range want {
		var group []string
		for _, e := range got {
			if strings.Contains(e, name) {
				group = append(group, e)
			}
		}
		if diff := cmp.Diff(want[name], group); diff != "" {
			t.Errorf("%s's hook calls (-want +got):\n%s", name, diff)
		}
	}
}

// TestHooksOneSetIsNotWrapped checks that a field only one set of Hooks
// fills is called as it is: composing costs nothing when nothing is
// composed.
func TestHooksOneSetIsNotWrapped(t *testing.T) {
	t.Parallel()
	h := Hooks{Done: doneHook, Committed: committedHook}
	j := Hooks{}.join(h).join(Hooks{Start: startHook, Batch: batchHook}).join(Hooks{})
	for _, f := range []struct {
		name      string
		got, want any
	}{{"Done", j.Done, doneHook}, {"Committed", j.Committed, committedHook}, {"Start", j.Start, startHook}, {"Batch", j.Batch, batchHook}} {
		if reflect.ValueOf(f.got).Pointer() != reflect.ValueOf(f.want).Pointer() {
			t.Errorf("%s is wrapped, want the one set's func itself", f.name)
		}
	}
	if end := joinEnds(nil, nil); end != nil {
		t.Error("joinEnds(nil, nil) is not nil: the Store would call an end for nothing")
	}
}

func doneHook(Op, time.Duration, Outcome)                                  {}
func committedHook(int, time.Duration)                                     {}
func startHook(ctx context.Context, _ Op) (context.Context, func(Outcome)) { return ctx, nil }
func batchHook([]context.Context) func(Outcome)                            { return nil }

// ctxKey keys the value the Start hook of TestContextHooks puts in the
// context it returns.
type ctxKey struct{}

// TestContextHooks checks Start and Batch: each operation goes on with the
// context Start returned, its end is told its outcome once, and every
// Create reaches a batch with that context, each in exactly one batch; and
// that the sizes Committed is told add up to the number of Creates,
// whatever the batching, of Creates from many goroutines at once.
func TestContextHooks(t *testing.T) {
	t.Parallel()
	var rec recorder
	var (
		mu      sync.Mutex
		ends    = map[string]int{} // "op/outcome" → end calls
		joined  = map[int64]int{}  // plant id → batches its Create joined
		batches []Outcome
	)
	s := sqliteBackend.open(t, WithHooks(rec.hooks()), WithHooks(Hooks{
		Start: func(ctx context.Context, op Op) (context.Context, func(Outcome)) {
			id, _ := ctx.Value(ctxKey{}).(int64)
			return context.WithValue(ctx, ctxKey{}, id+1000), func(k Outcome) {
				mu.Lock()
				defer mu.Unlock()
				ends[op.String()+"/"+k.String()]++
			}
		},
		Batch: func(ctxs []context.Context) func(Outcome) {
			mu.Lock()
			defer mu.Unlock()
			for _, ctx := range ctxs {
				id, _ := ctx.Value(ctxKey{}).(int64)
				joined[id-1000]++ // only Start's context holds id+1000
			}
			return func(k Outcome) {
				mu.Lock()
				defer mu.Unlock()
				batches = append(batches, k)
			}
		},
	}))
	const creates = 64
	var wg sync.WaitGroup
	for i := range int64(creates) {
		wg.Go(func() {
			ctx := context.WithValue(context.Background(), ctxKey{}, i)
			if err := s.Create(ctx, plantstore.Plant{ID: i, Name: "x"}); err != nil {
				t.Errorf("Create(%d) = %v", i, err)
			}
		})
	}
	wg.Wait()
	ctx := context.WithValue(context.Background(), ctxKey{}, int64(0))
	if err := s.Create(ctx, plantstore.Plant{ID: 0, Name: "x"}); !errors.Is(err, plantstore.ErrConflict) {
		t.Fatalf("Create of a taken id = %v, want ErrConflict", err)
	}
	if _, err := s.Plant(context.Background(), 5); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(context.Background(), 5); err != nil {
		t.Fatal(err)
	}
	rec.waitCommitted(t, creates+1)
	rec.mu.Lock()
	if rec.committed != creates+1 || rec.batches < 1 || rec.batches > creates+1 {
		t.Errorf("%d batches of %d Creates in all, want %d Creates in 1 to %d batches", rec.batches, rec.committed, creates+1, creates+1)
	}
	rec.mu.Unlock()

	mu.Lock()
	defer mu.Unlock()
	want := map[string]int{"create/ok": creates + 1, "read/ok": 1, "delete/ok": 1}
	if diff := cmp.Diff(want, ends); diff != "" {
		t.Errorf("ends called (-want +got):\n%s", diff)
	}
	for i := int64(1); i < creates; i++ {
		if joined[i] != 1 {
			t.Errorf("Create(%d) joined %d batches with Start's context, want 1", i, joined[i])
		}
	}
	if joined[0] != 1+1 { // the conflicting second Create of 0 joined one too
		t.Errorf("the Creates of id 0 joined %d batches, want 2", joined[0])
	}
	if len(batches) < 2 || len(batches) > creates+1 {
		t.Errorf("%d batches ended, want 2 to %d", len(batches), creates+1)
	}
	for _, k := range batches {
		if k != OK {
			t.Errorf("a batch ended %v, want ok (a conflict is not a failure)", k)
		}
	}
}

package sqlstore

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

// ctxKey keys the value the Start hook of TestContextHooks puts in the
// context it returns.
type ctxKey struct{}

// TestContextHooks checks Start and Batch: each operation goes on with the
// context Start returned, its end is told its outcome once, and every
// Create reaches a batch with that context, each in exactly one batch.
func TestContextHooks(t *testing.T) {
	t.Parallel()
	db, _ := sqliteBackend.newDB(t)
	var (
		mu      sync.Mutex
		ends    = map[string]int{} // "op/outcome" → end calls
		joined  = map[int64]int{}  // plant id → batches its Create joined
		batches []Outcome
	)
	s := openStore(t, db, SQLite, WithHooks(Hooks{
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
	const creates = 32
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

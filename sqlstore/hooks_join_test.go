package sqlstore

import (
	"context"
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

// TestHooksCompose gives a Store two sets of Hooks and one of nothing, and
// checks that every event reaches both sets, the first set's first; that
// the second Start goes on from the context the first returned, and the
// operation and its batch go on with the second's; and that ends are
// called in the reverse order, the second set's first.
func TestHooksCompose(t *testing.T) {
	t.Parallel()
	db, _ := sqliteBackend.newDB(t)
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
	s := openStore(t, db, SQLite, WithHooks(set("A")), WithHooks(Hooks{}), WithHooks(set("B")))
	if err := s.Create(context.Background(), plantstore.Plant{ID: 1, Name: "Fern"}); err != nil {
		t.Fatal(err)
	}
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
	// Each group's events, in the order they came: each group's are
	// told on one goroutine, the caller's or the committer's.
	group := func(words ...string) []string {
		var g []string
		for _, e := range got {
			for _, w := range words {
				if strings.Contains(e, w) {
					g = append(g, e)
					break
				}
			}
		}
		return g
	}
	want := map[string][]string{
		"create": {"A start create after ", "B start create after A",
			"A done create ok", "B done create ok", "B end create ok", "A end create ok"},
		"batch":     {"A batch of AB", "B batch of AB", "B batch end ok", "A batch end ok"},
		"read":      {"A start read after ", "B start read after A", "A done read ok", "B done read ok", "B end read ok", "A end read ok"},
		"committed": {"A committed", "B committed"},
	}
	for name, words := range map[string][]string{"create": {"create"}, "batch": {"batch"}, "read": {"read"}, "committed": {"committed"}} {
		if diff := cmp.Diff(want[name], group(words...)); diff != "" {
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

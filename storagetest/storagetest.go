// Package storagetest checks a storage against the contracts of package
// plantstore, as [testing/fstest.TestFS] checks a file system and the
// optional interfaces it implements.
//
// [Run] checks a [plantstore.Storage], then each optional contract the
// storage implements, found by type assertion, in a subtest named after
// it:
//
//   - Storage: round trips, conflicts, not found, listing and paging,
//     deletes, cancelled contexts, concurrent creates and deletes.
//   - Pinger: Ping succeeds on a working storage, alone and concurrently.
//   - WriteProber: ProbeWrite succeeds, changes no plant, is safe for
//     concurrent use and honours a cancelled context.
//   - Outbox: what [RunOutbox] checks, with the storage's Create recording
//     the events.
//
// A subtest of a contract the storage does not implement is skipped,
// saying so. A storage that implements [plantstore.Outbox] but records no
// event when a plant is created (an outbox that can be turned off) is
// checked to keep it empty, and the rest of the Outbox subtest is skipped,
// saying so.
//
// [RunOutbox] checks a [plantstore.Outbox] that is fed apart from the
// storage, such as a webhook.MemoryOutbox that [plantstore.OnCreate]
// feeds: fan-out (each event once per subscriber, oldest first, within the
// limit), claims (due deliveries only, ascending Seq, leased apart per
// subscriber), leases (Extend, expiry letting another owner claim),
// retries and their due times, release to other owners, acks and the
// removal of ended events, Depth, cancelled contexts, and concurrent
// owners that never claim a delivery twice; and, for an outbox that is a
// [plantstore.OutboxRuns], the records of runs (an instance's expired runs
// taken back, a live one of the same instance and another instance's left
// alone, a run ended handing back its leases). The Outbox contract takes no
// clock: the suite sets the times it passes (leases and due times in the
// past or an hour ahead) and polls with a deadline where it waits for a
// lease to expire.
//
// A new storage's tests call Run with a function that returns an empty
// storage, closed by a cleanup of its own:
//
//	func TestStorage(t *testing.T) {
//		storagetest.Run(t, func(t *testing.T) plantstore.Storage {
//			s := mystore.New()
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// An outbox fed by [plantstore.OnCreate] is checked with the Create of a
// [plantstore.PlantStore] that feeds it:
//
//	storagetest.RunOutbox(t, func(t *testing.T) (plantstore.Outbox, storagetest.CreateFunc) {
//		o := myoutbox.New()
//		ps := plantstore.New(memstore.New(), plantstore.OnCreate(o.Add))
//		return o, func(ctx context.Context, p plantstore.Plant) error {
//			_, err := ps.Create(ctx, plantstore.NewPlant(p))
//			return err
//		}
//	})
package storagetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

// Run runs the Storage contract, then the optional contracts the storage
// implements (Pinger, WriteProber, Outbox), as subtests of t named after
// each contract. newStorage returns an empty storage for each subtest,
// and one more that Run asks which contracts it implements and whether it
// records outbox events; it registers its own cleanup with t.Cleanup.
// In -short mode the checks that race many concurrent calls make fewer.
func Run(t *testing.T, newStorage func(t *testing.T) plantstore.Storage) {
	t.Helper()
	probe := newStorage(t)
	t.Run("Storage", func(t *testing.T) { runStorage(t, newStorage) })
	t.Run("Pinger", func(t *testing.T) { runPinger(t, probe, newStorage) })
	t.Run("WriteProber", func(t *testing.T) { runWriteProber(t, probe, newStorage) })
	t.Run("Outbox", func(t *testing.T) { runStorageOutbox(t, probe, newStorage) })
}

// runStorage runs the Storage contract as subtests of t.
func runStorage(t *testing.T, newStorage func(t *testing.T) plantstore.Storage) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s plantstore.Storage)
	}{
		{"RoundTrip", testRoundTrip},
		{"Conflict", testConflict},
		{"NotFound", testNotFound},
		{"ConcurrentCreatesOfOneID", testConcurrentOneID},
		{"ConcurrentCreatesOfManyIDs", testConcurrentManyIDs},
		{"CancelledContext", testCancelledContext},
		{"ListOrderAndLimit", testListOrder},
		{"ListPaging", testListPaging},
		{"Delete", testDelete},
		{"DeleteRacingCreate", testDeleteRacingCreate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, newStorage(t))
		})
	}
}

func mustCreate(t *testing.T, s plantstore.Storage, p plantstore.Plant) {
	t.Helper()
	if err := s.Create(context.Background(), p); err != nil {
		t.Fatalf("Create(%+v) = %v, want nil", p, err)
	}
}

func wantPlant(t *testing.T, s plantstore.Storage, want plantstore.Plant) {
	t.Helper()
	got, err := s.Plant(context.Background(), want.ID)
	if err != nil {
		t.Fatalf("Plant(%d) = %v, want the plant", want.ID, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Plant(%d) mismatch (-want +got):\n%s", want.ID, diff)
	}
}

func wantNotFound(t *testing.T, s plantstore.Storage, id int64) {
	t.Helper()
	if p, err := s.Plant(context.Background(), id); !errors.Is(err, plantstore.ErrNotFound) {
		t.Fatalf("Plant(%d) = %+v, %v, want ErrNotFound", id, p, err)
	}
}

func testRoundTrip(t *testing.T, s plantstore.Storage) {
	tests := []struct {
		name   string
		plant  plantstore.Plant
		reason string
	}{
		{"no tag", plantstore.Plant{ID: 1, Name: "Monstera"}, "absent tag stays absent"},
		{"empty tag", plantstore.Plant{ID: 2, Name: "Fern", HasTag: true}, "empty tag is not absent"},
		{"tag", plantstore.Plant{ID: 3, Name: "Aloe", Tag: "succulent", HasTag: true}, ""},
		{"empty name", plantstore.Plant{ID: 4}, "the contract sets no minimum length"},
		{"zero id", plantstore.Plant{ID: 0, Name: "zero"}, ""},
		{"negative id", plantstore.Plant{ID: -7, Name: "negative"}, ""},
		{"min id", plantstore.Plant{ID: math.MinInt64, Name: "min"}, ""},
		{"max id", plantstore.Plant{ID: math.MaxInt64, Name: "max"}, ""},
		{"unicode", plantstore.Plant{ID: 5, Name: "Café 🌵 e\u0301 \u2028 \U0010FFFF", Tag: "日本語", HasTag: true}, "kept byte for byte"},
		{"spaces kept", plantstore.Plant{ID: 6, Name: "  padded  ", Tag: " ", HasTag: true}, "no trimming"},
		{"long", plantstore.Plant{ID: 8, Name: strings.Repeat("n", 100_000), Tag: strings.Repeat("t", 50_000), HasTag: true}, ""},
		{"control", plantstore.Plant{ID: 9, Name: "tab\tnew\nline\x7f\x01"}, ""},
	}
	for _, tt := range tests {
		mustCreate(t, s, tt.plant)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantPlant(t, s, tt.plant)
		})
	}
}

func testConflict(t *testing.T, s plantstore.Storage) {
	first := plantstore.Plant{ID: 42, Name: "first", Tag: "a", HasTag: true}
	mustCreate(t, s, first)
	err := s.Create(context.Background(), plantstore.Plant{ID: 42, Name: "second"})
	if !errors.Is(err, plantstore.ErrConflict) {
		t.Fatalf("second Create of id 42 = %v, want ErrConflict", err)
	}
	wantPlant(t, s, first)
}

func testNotFound(t *testing.T, s plantstore.Storage) {
	wantNotFound(t, s, 1)
	mustCreate(t, s, plantstore.Plant{ID: 1, Name: "one"})
	wantNotFound(t, s, 2)
	wantNotFound(t, s, math.MinInt64)
}

func testConcurrentOneID(t *testing.T, s plantstore.Storage) {
	const n = 64
	for round := range orShort(5, 2) {
		id := int64(1000 + round)
		var wg sync.WaitGroup
		errs := make([]error, n)
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				errs[i] = s.Create(context.Background(), plantstore.Plant{ID: id, Name: fmt.Sprint("racer ", i)})
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil:
				if winner >= 0 {
					t.Fatalf("id %d: racers %d and %d both won", id, winner, i)
				}
				winner = i
			case !errors.Is(err, plantstore.ErrConflict):
				t.Fatalf("id %d: racer %d got %v, want nil or ErrConflict", id, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("id %d: no racer won", id)
		}
		wantPlant(t, s, plantstore.Plant{ID: id, Name: fmt.Sprint("racer ", winner)})
	}
}

func testConcurrentManyIDs(t *testing.T, s plantstore.Storage) {
	const workers = 16
	each := orShort(50, 12)
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				id := int64(w*each + i)
				if err := s.Create(context.Background(), plantstore.Plant{ID: id, Name: fmt.Sprint(id)}); err != nil {
					errs <- fmt.Errorf("Create(%d) = %w", id, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for id := range int64(workers * each) {
		wantPlant(t, s, plantstore.Plant{ID: id, Name: fmt.Sprint(id)})
	}
}

func testCancelledContext(t *testing.T, s plantstore.Storage) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Create(ctx, plantstore.Plant{ID: 1, Name: "never"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Create with a cancelled context = %v, want context.Canceled", err)
	}
	wantNotFound(t, s, 1)

	mustCreate(t, s, plantstore.Plant{ID: 2, Name: "kept"})
	if _, err := s.Plant(ctx, 2); !errors.Is(err, context.Canceled) {
		t.Errorf("Plant with a cancelled context = %v, want context.Canceled", err)
	}
	if _, err := s.List(ctx, math.MinInt64, 10); !errors.Is(err, context.Canceled) {
		t.Errorf("List with a cancelled context = %v, want context.Canceled", err)
	}
	if err := s.Delete(ctx, 2); !errors.Is(err, context.Canceled) {
		t.Errorf("Delete with a cancelled context = %v, want context.Canceled", err)
	}
	wantPlant(t, s, plantstore.Plant{ID: 2, Name: "kept"})
}

func ids(plants []plantstore.Plant) []int64 {
	out := make([]int64, len(plants))
	for i, p := range plants {
		out[i] = p.ID
	}
	return out
}

// listPlant is the plant testListOrder stores under id: tagged when id is
// even, so that listing is seen to keep tag presence.
func listPlant(id int64) plantstore.Plant {
	p := plantstore.Plant{ID: id, Name: fmt.Sprint("p", id)}
	if id%2 == 0 {
		p.Tag, p.HasTag = "t", true
	}
	return p
}

func testListOrder(t *testing.T, s plantstore.Storage) {
	ctx := context.Background()
	got, err := s.List(ctx, math.MinInt64, 10)
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("List on empty storage = %#v, %v, want an empty non-nil slice", got, err)
	}
	stored := []int64{5, -3, math.MaxInt64, 0, math.MinInt64, 17, 2, -100}
	for _, id := range stored {
		mustCreate(t, s, listPlant(id))
	}
	tests := []struct {
		name  string
		from  int64
		limit int
		want  []int64
	}{
		{"all", math.MinInt64, 100, []int64{math.MinInt64, -100, -3, 0, 2, 5, 17, math.MaxInt64}},
		{"limit", math.MinInt64, 3, []int64{math.MinInt64, -100, -3}},
		{"from is inclusive", 2, 2, []int64{2, 5}},
		{"from between ids", 3, 100, []int64{5, 17, math.MaxInt64}},
		{"from max", math.MaxInt64, 5, []int64{math.MaxInt64}},
		{"limit one", -99, 1, []int64{-3}},
		{"max limit", math.MinInt64, plantstore.MaxListLimit, []int64{math.MinInt64, -100, -3, 0, 2, 5, 17, math.MaxInt64}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.List(ctx, tt.from, tt.limit)
			if err != nil {
				t.Fatalf("List(%d, %d) = %v", tt.from, tt.limit, err)
			}
			if diff := cmp.Diff(tt.want, ids(got)); diff != "" {
				t.Errorf("List(%d, %d) ids mismatch (-want +got):\n%s", tt.from, tt.limit, diff)
			}
			for _, p := range got {
				if diff := cmp.Diff(listPlant(p.ID), p); diff != "" {
					t.Errorf("listed plant mismatch (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func testListPaging(t *testing.T, s plantstore.Storage) {
	ctx := context.Background()
	const n = 300
	var want []int64
	for i := range n {
		id := int64(i*7919%n)*3 - 450 // a scrambled insertion order
		want = append(want, id)
		mustCreate(t, s, plantstore.Plant{ID: id, Name: "x"})
	}
	var got []int64
	from := int64(math.MinInt64)
	for pages := 0; ; pages++ {
		if pages > n {
			t.Fatal("paging does not end")
		}
		page, err := s.List(ctx, from, 64)
		if err != nil {
			t.Fatalf("List(%d, 64) = %v", from, err)
		}
		if len(page) == 0 {
			break
		}
		got = append(got, ids(page)...)
		from = page[len(page)-1].ID + 1
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ids seen paging through 64 at a time (-want +got):\n%s", diff)
	}
}

func testDelete(t *testing.T, s plantstore.Storage) {
	ctx := context.Background()
	if err := s.Delete(ctx, 1); !errors.Is(err, plantstore.ErrNotFound) {
		t.Fatalf("Delete of a missing id = %v, want ErrNotFound", err)
	}
	mustCreate(t, s, plantstore.Plant{ID: 1, Name: "old", Tag: "x", HasTag: true})
	mustCreate(t, s, plantstore.Plant{ID: 2, Name: "neighbour"})
	if err := s.Delete(ctx, 1); err != nil {
		t.Fatalf("Delete(1) = %v, want nil", err)
	}
	wantNotFound(t, s, 1)
	wantPlant(t, s, plantstore.Plant{ID: 2, Name: "neighbour"})
	if got, err := s.List(ctx, math.MinInt64, 10); err != nil || !cmp.Equal(ids(got), []int64{2}) {
		t.Errorf("List after Delete = %v, %v, want ids [2]", ids(got), err)
	}
	if err := s.Delete(ctx, 1); !errors.Is(err, plantstore.ErrNotFound) {
		t.Fatalf("second Delete(1) = %v, want ErrNotFound", err)
	}
	mustCreate(t, s, plantstore.Plant{ID: 1, Name: "new"})
	wantPlant(t, s, plantstore.Plant{ID: 1, Name: "new"})
}

func testDeleteRacingCreate(t *testing.T, s plantstore.Storage) {
	const id, workers = 77, 8
	rounds := orShort(25, 8)
	var mu sync.Mutex
	created, deleted := 0, 0
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range rounds {
				if w%2 == 0 {
					err := s.Create(context.Background(), plantstore.Plant{ID: id, Name: "racer"})
					switch {
					case err == nil:
						mu.Lock()
						created++
						mu.Unlock()
					case !errors.Is(err, plantstore.ErrConflict):
						t.Errorf("Create = %v, want nil or ErrConflict", err)
					}
				} else {
					err := s.Delete(context.Background(), id)
					switch {
					case err == nil:
						mu.Lock()
						deleted++
						mu.Unlock()
					case !errors.Is(err, plantstore.ErrNotFound):
						t.Errorf("Delete = %v, want nil or ErrNotFound", err)
					}
				}
			}
		})
	}
	wg.Wait()
	_, err := s.Plant(context.Background(), id)
	present := 0
	switch {
	case err == nil:
		present = 1
	case !errors.Is(err, plantstore.ErrNotFound):
		t.Fatalf("Plant(%d) = %v", id, err)
	}
	if created-deleted != present {
		t.Errorf("%d creates and %d deletes succeeded, and the plant is present %d times: each delete must remove exactly one create", created, deleted, present)
	}
}

// orShort returns n, or quick in -short mode: the concurrent checks race
// fewer operations there, and keep their full counts otherwise.
func orShort(n, quick int) int {
	if testing.Short() {
		return quick
	}
	return n
}

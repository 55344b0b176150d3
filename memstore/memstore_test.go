package memstore_test

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/memstore"
	"github.com/plantstore/plantstore/storagetest"
)

func TestMemoryStorage(t *testing.T) {
	t.Parallel()
	storagetest.Run(t, func(t *testing.T) plantstore.Storage {
		return memstore.New()
	})
}

// TestMemoryStorageListMerge spreads plants over every shard, extreme
// ids included, deletes some, and pages through them with limits from 1
// to MaxListLimit, so that List merges and refills as many runs as there
// are shards, checking every read and every page against a map. How a
// shard's tree splits and merges under creates and deletes is
// TestBTreeAgainstMap; conflicts and missing ids are storagetest's.
func TestMemoryStorageListMerge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 4))
	s := memstore.New()
	model := map[int64]plantstore.Plant{}
	for i := range 6000 {
		id := r.Int64N(1<<20) - 1<<19
		switch i % 1000 {
		case 0:
			id = math.MinInt64 + int64(i/1000)
		case 1:
			id = math.MaxInt64 - int64(i/1000)
		}
		p := plantstore.Plant{ID: id, Name: fmt.Sprint("plant ", i)}
		if i%3 == 0 {
			p.Tag, p.HasTag = fmt.Sprint("tag ", i%7), true
		}
		if _, had := model[id]; had {
			continue
		}
		if err := s.Create(ctx, p); err != nil {
			t.Fatalf("Create(%d) = %v", id, err)
		}
		model[id] = p
		if i%4 == 0 {
			if err := s.Delete(ctx, id); err != nil {
				t.Fatalf("Delete(%d) = %v", id, err)
			}
			delete(model, id)
		}
	}
	for _, limit := range []int{1, 7, 100, plantstore.MaxListLimit} {
		checkAgainstMap(t, s, model, limit)
	}
}

// checkAgainstMap reads every plant of model from s and pages through s
// with limit, comparing the pages with model.
func checkAgainstMap(t *testing.T, s plantstore.Storage, model map[int64]plantstore.Plant, limit int) {
	t.Helper()
	ctx := context.Background()
	for id, want := range model {
		got, err := s.Plant(ctx, id)
		if err != nil {
			t.Fatalf("Plant(%d) = %v", id, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("Plant(%d) mismatch (-want +got):\n%s", id, diff)
		}
	}
	var want, got []plantstore.Plant
	for _, id := range slices.Sorted(maps.Keys(model)) {
		want = append(want, model[id])
	}
	from := int64(math.MinInt64)
	for {
		page, err := s.List(ctx, from, limit)
		if err != nil {
			t.Fatalf("List(%d, %d) = %v", from, limit, err)
		}
		if len(page) > limit {
			t.Fatalf("List(%d, %d) returned %d plants", from, limit, len(page))
		}
		got = append(got, page...)
		if len(page) < limit || page[len(page)-1].ID == math.MaxInt64 {
			break
		}
		from = page[len(page)-1].ID + 1
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("paging with limit %d mismatch (-want +got):\n%s", limit, diff)
	}
}

// TestMemoryStorageListDuringCompaction lists while plants are created
// and deleted fast enough that the shards' arenas are compacted again and
// again, and checks that every plant in every page has the name it was
// created with: List reads names from arena chunks after it has let go of
// the shard's lock.
func TestMemoryStorageListDuringCompaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := memstore.New()
	// A kilobyte a name: each shard writes past the 1 MB from which its
	// arena is compacted after some 1,000 creates, most of them deleted.
	name := func(id int64) string { return fmt.Sprintf("%d %0990d", id, 0) }
	const creates, window = 60_000, 256
	done := make(chan struct{})
	go func() {
		defer close(done)
		for id := range int64(creates) {
			if err := s.Create(ctx, plantstore.Plant{ID: id, Name: name(id)}); err != nil {
				t.Errorf("Create(%d) = %v", id, err)
				return
			}
			if id >= window {
				if err := s.Delete(ctx, id-window); err != nil {
					t.Errorf("Delete(%d) = %v", id-window, err)
					return
				}
			}
		}
	}()
	defer func() { <-done }() // the writer reports to t: the test waits for it
	pages := 0
	for running := true; running; pages++ {
		select {
		case <-done:
			running = false
		default:
		}
		page, err := s.List(ctx, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range page {
			if p.Name != name(p.ID) {
				t.Fatalf("List: plant %d has name %.20q..., want %.20q...", p.ID, p.Name, name(p.ID))
			}
			if i > 0 && p.ID <= page[i-1].ID {
				t.Fatalf("List: id %d after %d", p.ID, page[i-1].ID)
			}
		}
	}
	t.Logf("%d pages listed", pages)
}

package memstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/plantstore/plantstore"
)

// TestArenaRoundTrip puts plants of every shape into one arena and reads
// each back.
func TestArenaRoundTrip(t *testing.T) {
	t.Parallel()
	long := string(make([]byte, 300))
	tests := []struct {
		name   string
		plant  plantstore.Plant
		reason string
	}{
		{"no tag", plantstore.Plant{ID: 1, Name: "Monstera"}, ""},
		{"empty", plantstore.Plant{ID: 2}, ""},
		{"empty tag", plantstore.Plant{ID: 3, Name: "Fern", HasTag: true}, ""},
		{"empty name and tag", plantstore.Plant{ID: 4, HasTag: true}, ""},
		{"tag", plantstore.Plant{ID: 5, Name: "Aloe", Tag: "succulent", HasTag: true}, ""},
		{"long name", plantstore.Plant{ID: 6, Name: long, Tag: "t", HasTag: true}, "a length of two uvarint bytes"},
		{"own chunk", plantstore.Plant{ID: 9, Name: string(make([]byte, 3*chunkSize)), Tag: "big", HasTag: true}, "larger than a chunk"},
		{"NUL kept", plantstore.Plant{ID: 7, Name: "a\x00b", Tag: "\x00", HasTag: true}, "the packing does not rely on validation"},
		{"high bytes", plantstore.Plant{ID: 8, Name: "\x80\xff", Tag: "\x81", HasTag: true}, "the length's bytes are not confused with text"},
	}
	var a arena
	refs := make([]ref, len(tests))
	for i, tt := range tests {
		refs[i] = a.put(tt.plant)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := a.plant(tt.plant.ID, refs[i], tt.plant.HasTag)
			if diff := cmp.Diff(tt.plant, got); diff != "" {
				t.Errorf("plant after put mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestArenaCompaction deletes most of a store's plants, which makes the
// shards compact their arenas, and checks that every remaining plant reads
// back exactly while the arenas shrink to what is live.
func TestArenaCompaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := New()
	plant := func(id int64) plantstore.Plant {
		p := plantstore.Plant{ID: id, Name: fmt.Sprintf("%d %s", id, strings.Repeat("n", 4000))}
		if id%3 == 0 {
			p.Tag, p.HasTag = fmt.Sprint("tag ", id), true
		}
		return p
	}
	const n = 8000
	for id := range int64(n) {
		if err := m.Create(ctx, plant(id)); err != nil {
			t.Fatal(err)
		}
	}
	// A conflicting create leaves nothing behind in the arena.
	before := m.arenaBytes()
	if err := m.Create(ctx, plant(5)); !errors.Is(err, plantstore.ErrConflict) {
		t.Fatalf("Create of a taken id = %v, want plantstore.ErrConflict", err)
	}
	if after := m.arenaBytes(); after != before {
		t.Errorf("a conflicting create grew the arenas from %d to %d bytes", before, after)
	}
	kept, _ := m.Plant(ctx, 4) // handed out before compaction
	for id := range int64(n) {
		if id%8 != 0 {
			if err := m.Delete(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
	}
	// That deleted plants are gone is storagetest's Storage/Delete.
	for id := int64(0); id < n; id += 8 {
		got, err := m.Plant(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(plant(id), got); diff != "" {
			t.Fatalf("Plant(%d) after compaction mismatch (-want +got):\n%s", id, diff)
		}
	}
	if diff := cmp.Diff(plant(4), kept); diff != "" {
		t.Errorf("a plant read before compaction changed (-want +got):\n%s", diff)
	}
	live := n / 8 * (len(plant(8).Name) + 8)
	if total := m.arenaBytes(); total > 3*live {
		t.Errorf("arenas hold %d bytes for about %d live ones: dead bytes were not reclaimed", total, live)
	}
	page, err := m.List(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range page {
		if diff := cmp.Diff(plant(int64(i*8)), p); diff != "" {
			t.Fatalf("listed plant %d mismatch (-want +got):\n%s", i, diff)
		}
	}
}

// arenaBytes returns the bytes written to all shards' arenas.
func (m *Store) arenaBytes() int {
	total := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		total += s.a.total
		s.mu.Unlock()
	}
	return total
}

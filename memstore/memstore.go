// Package memstore keeps plants in memory: a [plantstore.Storage] for
// tests, examples and a server whose plants need not outlive it.
package memstore

import (
	"context"
	"math"
	"math/bits"
	"runtime"
	"sync"

	"github.com/plantstore/plantstore"
)

// Store is a [plantstore.Storage] that keeps plants in memory: they are lost
// when the process exits. The zero value is not usable; call
// [New].
//
// Plants are spread over shards by a hash of their id, so that creates of
// different ids seldom wait for one another. Each shard keeps its plants in
// a B+ tree ordered by id, and List merges the shards' ordered runs, so the
// cost of a page grows with its length and the number of shards, not with
// the number of plants stored. Names and tags are copied into each shard's
// arena, large chunks without pointers, so that storing a plant seldom
// allocates and the garbage collector has nothing per plant to scan.
//
// List does not read a snapshot: a plant created or deleted while List runs
// may or may not be in the page. Every plant in the page was stored at some
// moment during the call, and the page is in ascending id order.
type Store struct {
	shards []shard
	shift  uint
}

// A shard is one lock and the plants whose ids hash to it.
type shard struct {
	mu sync.Mutex
	t  btree
	a  arena
	_  [64]byte // keeps neighbouring shards' locks off one cache line
}

var _ plantstore.Storage = (*Store)(nil)

// New returns an empty Store.
func New() *Store {
	// Eight shards per processor keep lock collisions among parallel
	// creates rare, even when the OS preempts a goroutine holding a lock;
	// more would only make List merge more runs.
	k := bits.Len(uint(min(max(8*runtime.GOMAXPROCS(0), 16), 256) - 1))
	m := &Store{
		shards: make([]shard, 1<<k),
		shift:  uint(64 - k), // the top k bits of a hash pick a shard
	}
	for i := range m.shards {
		m.shards[i].t.init()
	}
	return m
}

// shard returns the shard that keeps id. Runs of 64 consecutive ids share
// a shard, so that a client creating ascending ids works in one shard's
// index for a while, out of other clients' way; the run number is mixed so
// that runs, and ids that differ only in high bits, spread evenly.
func (m *Store) shard(id int64) *shard {
	x := uint64(id) >> 6
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	return &m.shards[x>>m.shift]
}

// Create implements [plantstore.Storage.Create].
func (m *Store) Create(ctx context.Context, p plantstore.Plant) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s := m.shard(p.ID)
	s.mu.Lock()
	slot := s.t.insert(p.ID, p.HasTag)
	if slot != nil {
		*slot = s.a.put(p)
	}
	s.mu.Unlock()
	if slot == nil {
		return plantstore.ErrConflict
	}
	return nil
}

// Plant implements [plantstore.Storage.Plant].
func (m *Store) Plant(ctx context.Context, id int64) (plantstore.Plant, error) {
	if err := ctx.Err(); err != nil {
		return plantstore.Plant{}, err
	}
	s := m.shard(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	r, tagged, ok := s.t.get(id)
	if !ok {
		return plantstore.Plant{}, plantstore.ErrNotFound
	}
	return s.a.plant(id, r, tagged), nil
}

// Delete implements [plantstore.Storage.Delete].
func (m *Store) Delete(ctx context.Context, id int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s := m.shard(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	r, tagged, ok := s.t.get(id)
	if !ok {
		return plantstore.ErrNotFound
	}
	s.t.delete(id)
	if s.a.free(r, tagged) {
		s.compact()
	}
	return nil
}

// compact copies the plants s stores into a new arena, leaving the dead
// bytes of deleted plants behind with the old one. Plants already handed
// out keep the old chunks they point into alive until they are dropped.
func (s *shard) compact() {
	var a arena
	for l := s.t.findLeaf(math.MinInt64); l != nil; l = l.next {
		for i := range l.n {
			l.vals[i] = a.put(s.a.plant(l.keys[i], l.vals[i], l.tagged[i]))
		}
	}
	s.a = a
}

// List implements [plantstore.Storage.List]. It takes a short run of plants from each
// shard and merges the runs, refilling a run from its shard when it is used
// up, so that its cost grows with limit and the number of shards only.
func (m *Store) List(ctx context.Context, from int64, limit int) ([]plantstore.Plant, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return []plantstore.Plant{}, nil
	}
	// A run half as long again as each shard's expected share, plus a
	// few, seldom needs a refill.
	share := limit / len(m.shards)
	run := min(share+share/2+4, limit, plantstore.MaxListLimit)
	sc := listScratchPool.Get().(*listScratch)
	defer listScratchPool.Put(sc)
	if need := len(m.shards) * run; len(sc.slab) < need {
		sc.slab = make([]entry, need)
		sc.chunks = make([][]byte, need)
	}
	slab, chunks := sc.slab, sc.chunks
	runs := sc.runs[:0]
	for i := range m.shards {
		r := listRun{s: &m.shards[i],
			raw:    slab[i*run : i*run : (i+1)*run],
			chunks: chunks[i*run : i*run : (i+1)*run]}
		if r.fill(from) {
			runs = append(runs, r)
		}
	}
	sc.runs = runs
	h := runHeap(runs)
	h.init()
	out := make([]plantstore.Plant, 0, min(limit, plantstore.MaxListLimit))
	for len(h) > 0 && len(out) < limit {
		r := &h[0]
		e := r.raw[r.pos]
		out = append(out, plantIn(r.chunks[r.pos], e.key, e.val, e.tagged))
		r.pos++
		if r.pos == len(r.raw) && (r.done || e.key == math.MaxInt64 || !r.fill(e.key+1)) {
			h = h.pop()
			continue
		}
		h.down(0)
	}
	return out, nil
}

// A listScratch is the memory one List call merges in, kept in
// listScratchPool for the next call. It is not cleared: the arena chunks it
// still refers to are at most one page's worth per shard, and the pool
// drops it within two garbage collections.
type listScratch struct {
	slab   []entry
	chunks [][]byte
	runs   []listRun
}

var listScratchPool = sync.Pool{New: func() any { return new(listScratch) }}

// A listRun is a shard's plants from some id on, taken a few at a time.
// It keeps their refs and chunks and reads a plant's name and tag only
// when the plant goes into the page: a run holds more plants than the
// page takes from it, and in a store filled in random id order each
// plant's bytes are a cache miss of their own.
type listRun struct {
	s      *shard
	raw    []entry  // the refs of the run's plants
	chunks [][]byte // the chunk holding each of raw's plants
	pos    int
	done   bool // the shard holds nothing after raw
}

// fill replaces r's entries with the shard's next ones from id from on and
// reports whether it found any.
func (r *listRun) fill(from int64) bool {
	n := cap(r.raw)
	r.s.mu.Lock()
	r.raw = r.s.t.appendFrom(r.raw[:0], from, n)
	r.chunks = r.chunks[:0]
	for _, e := range r.raw {
		r.chunks = append(r.chunks, r.s.a.chunk(e.val))
	}
	r.s.mu.Unlock()
	r.pos = 0
	r.done = len(r.raw) < n
	return len(r.raw) > 0
}

// A runHeap is a min-heap of runs ordered by their next id.
type runHeap []listRun

func (h runHeap) key(i int) int64 { return h[i].raw[h[i].pos].key }

func (h runHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h runHeap) down(i int) {
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && h.key(c+1) < h.key(c) {
			c++
		}
		if h.key(i) <= h.key(c) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// pop removes the least run.
func (h runHeap) pop() runHeap {
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	h.down(0)
	return h
}

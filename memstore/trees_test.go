package memstore_test

// This file compares the index behind memstore.Store with the same store
// built on github.com/google/btree and github.com/tidwall/btree, in one
// process, the three taking turns round by round. The other trees are
// linked by this test only. Run
//
//	go test ./memstore -run 'TestTreeComparison$' -trees.rounds 5 -v -timeout 30m |
//		tee trees.txt
//	go run golang.org/x/perf/cmd/benchstat -col /impl trees.txt
//
// Each round fills each store with 1M plants (ten-byte names, ids
// scrambled over the int64 range), reads, lists, runs a steady load of
// creates and deletes at 1M, and deletes them all; see compareTrees.

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"testing"
	"time"

	gbtree "github.com/google/btree"
	tbtree "github.com/tidwall/btree"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/memstore"
	"github.com/plantstore/plantstore/storagetest"
)

var treeRounds = flag.Int("trees.rounds", 0, "rounds of TestTreeComparison; 0 skips it")

// treeImpls are the stores TestTreeComparison compares.
var treeImpls = []struct {
	name string
	new  func() plantstore.Storage
}{
	{"memstore", func() plantstore.Storage { return memstore.New() }},
	{"google", func() plantstore.Storage { return newTreeStore(newGoogleIndex) }},
	{"tidwall", func() plantstore.Storage { return newTreeStore(newTidwallIndex) }},
}

// TestTreeStores runs the storage contract on the stores built on other
// trees, so that what TestTreeComparison measures is a correct store.
func TestTreeStores(t *testing.T) {
	t.Parallel()
	for _, impl := range treeImpls[1:] {
		t.Run(impl.name, func(t *testing.T) {
			t.Parallel()
			storagetest.Run(t, func(t *testing.T) plantstore.Storage { return impl.new() })
		})
	}
}

// A treeIndex is one shard's ordered plants on some tree. It is guarded
// by its shard's lock.
type treeIndex interface {
	// insert stores p and reports true, or reports false and changes
	// nothing when p's id is taken.
	insert(p plantstore.Plant) bool
	get(id int64) (plantstore.Plant, bool)
	delete(id int64) bool
	// appendFrom appends at most n plants with ids from on, ascending.
	appendFrom(dst []plantstore.Plant, from int64, n int) []plantstore.Plant
}

// googleIndex keeps plants by value in a google/btree BTreeG of degree
// 32: nodes of up to 63 plants, the degree its documentation suggests and
// its benchmarks use.
type googleIndex struct {
	t *gbtree.BTreeG[plantstore.Plant]
}

func newGoogleIndex() googleIndex {
	return googleIndex{gbtree.NewG(32, func(a, b plantstore.Plant) bool { return a.ID < b.ID })}
}

func (x googleIndex) insert(p plantstore.Plant) bool {
	if old, replaced := x.t.ReplaceOrInsert(p); replaced {
		x.t.ReplaceOrInsert(old)
		return false
	}
	return true
}

func (x googleIndex) get(id int64) (plantstore.Plant, bool) {
	return x.t.Get(plantstore.Plant{ID: id})
}

func (x googleIndex) delete(id int64) bool {
	_, ok := x.t.Delete(plantstore.Plant{ID: id})
	return ok
}

func (x googleIndex) appendFrom(dst []plantstore.Plant, from int64, n int) []plantstore.Plant {
	x.t.AscendGreaterOrEqual(plantstore.Plant{ID: from}, func(p plantstore.Plant) bool {
		dst = append(dst, p)
		n--
		return n > 0
	})
	return dst
}

// tidwallIndex keeps plants in a tidwall/btree Map keyed by id, which
// compares keys with < rather than through a function; its default degree
// (32) gives nodes of up to 63 plants.
type tidwallIndex struct {
	m *tbtree.Map[int64, plantValue]
}

// plantValue is a plant without its id, which is the key.
type plantValue struct {
	name, tag string
	hasTag    bool
}

func newTidwallIndex() tidwallIndex { return tidwallIndex{new(tbtree.Map[int64, plantValue])} }

func (x tidwallIndex) insert(p plantstore.Plant) bool {
	if old, replaced := x.m.Set(p.ID, plantValue{p.Name, p.Tag, p.HasTag}); replaced {
		x.m.Set(p.ID, old)
		return false
	}
	return true
}

func (x tidwallIndex) get(id int64) (plantstore.Plant, bool) {
	v, ok := x.m.Get(id)
	return plantstore.Plant{ID: id, Name: v.name, Tag: v.tag, HasTag: v.hasTag}, ok
}

func (x tidwallIndex) delete(id int64) bool {
	_, ok := x.m.Delete(id)
	return ok
}

func (x tidwallIndex) appendFrom(dst []plantstore.Plant, from int64, n int) []plantstore.Plant {
	x.m.Ascend(from, func(id int64, v plantValue) bool {
		dst = append(dst, plantstore.Plant{ID: id, Name: v.name, Tag: v.tag, HasTag: v.hasTag})
		n--
		return n > 0
	})
	return dst
}

// A treeStore is memstore.Store with its shards' index replaced: the same
// shard count, hash and locking, and the same merge of per-shard runs in
// List, so that only the tree differs.
type treeStore[I treeIndex] struct {
	shards  []treeShard[I]
	shift   uint
	scratch sync.Pool // of *treeScratch[I]
}

type treeShard[I treeIndex] struct {
	mu sync.Mutex
	x  I
	_  [64]byte
}

func newTreeStore[I treeIndex](newIndex func() I) *treeStore[I] {
	k := bits.Len(uint(min(max(8*runtime.GOMAXPROCS(0), 16), 256) - 1))
	m := &treeStore[I]{shards: make([]treeShard[I], 1<<k), shift: uint(64 - k)}
	for i := range m.shards {
		m.shards[i].x = newIndex()
	}
	return m
}

func (m *treeStore[I]) shard(id int64) *treeShard[I] {
	x := uint64(id) >> 6
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	return &m.shards[x>>m.shift]
}

func (m *treeStore[I]) Create(ctx context.Context, p plantstore.Plant) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s := m.shard(p.ID)
	s.mu.Lock()
	ok := s.x.insert(p)
	s.mu.Unlock()
	if !ok {
		return plantstore.ErrConflict
	}
	return nil
}

func (m *treeStore[I]) Plant(ctx context.Context, id int64) (plantstore.Plant, error) {
	if err := ctx.Err(); err != nil {
		return plantstore.Plant{}, err
	}
	s := m.shard(id)
	s.mu.Lock()
	p, ok := s.x.get(id)
	s.mu.Unlock()
	if !ok {
		return plantstore.Plant{}, plantstore.ErrNotFound
	}
	return p, nil
}

func (m *treeStore[I]) Delete(ctx context.Context, id int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s := m.shard(id)
	s.mu.Lock()
	ok := s.x.delete(id)
	s.mu.Unlock()
	if !ok {
		return plantstore.ErrNotFound
	}
	return nil
}

func (m *treeStore[I]) List(ctx context.Context, from int64, limit int) ([]plantstore.Plant, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if limit <= 0 {
		return []plantstore.Plant{}, nil
	}
	share := limit / len(m.shards)
	run := min(share+share/2+4, limit, plantstore.MaxListLimit)
	sc, _ := m.scratch.Get().(*treeScratch[I])
	if sc == nil {
		sc = new(treeScratch[I])
	}
	defer m.scratch.Put(sc)
	if need := len(m.shards) * run; len(sc.plants) < need {
		sc.plants = make([]plantstore.Plant, need)
	}
	runs := sc.runs[:0]
	for i := range m.shards {
		r := treeRun[I]{s: &m.shards[i], buf: sc.plants[i*run : i*run : (i+1)*run]}
		if r.refill(from) {
			runs = append(runs, r)
		}
	}
	sc.runs = runs
	h := treeHeap[I](runs)
	h.init()
	out := make([]plantstore.Plant, 0, min(limit, plantstore.MaxListLimit))
	for len(h) > 0 && len(out) < limit {
		r := &h[0]
		p := r.buf[r.pos]
		out = append(out, p)
		r.pos++
		if r.pos == len(r.buf) && (r.done || p.ID == math.MaxInt64 || !r.refill(p.ID+1)) {
			h = h.pop()
			continue
		}
		h.down(0)
	}
	return out, nil
}

type treeScratch[I treeIndex] struct {
	plants []plantstore.Plant
	runs   []treeRun[I]
}

type treeRun[I treeIndex] struct {
	s    *treeShard[I]
	buf  []plantstore.Plant
	pos  int
	done bool
}

func (r *treeRun[I]) refill(from int64) bool {
	n := cap(r.buf)
	r.s.mu.Lock()
	r.buf = r.s.x.appendFrom(r.buf[:0], from, n)
	r.s.mu.Unlock()
	r.pos = 0
	r.done = len(r.buf) < n
	return len(r.buf) > 0
}

type treeHeap[I treeIndex] []treeRun[I]

func (h treeHeap[I]) key(i int) int64 { return h[i].buf[h[i].pos].ID }

func (h treeHeap[I]) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h treeHeap[I]) down(i int) {
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

func (h treeHeap[I]) pop() treeHeap[I] {
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	h.down(0)
	return h
}

// TestTreeComparison prints, for -trees.rounds rounds, one line per store
// and measure in the benchmark format, for benchstat; see the top of this
// file. In each round the stores take turns, in an order that rotates
// from round to round.
func TestTreeComparison(t *testing.T) {
	if *treeRounds <= 0 {
		t.Skip("a measurement, not a test: run it with -trees.rounds N")
	}
	fmt.Printf("goos: %s\ngoarch: %s\npkg: github.com/plantstore/plantstore/memstore\ncpu: %d procs\n",
		runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0))
	for round := range *treeRounds {
		for k := range treeImpls {
			impl := treeImpls[(round+k)%len(treeImpls)]
			for _, line := range compareTrees(t, impl.new) {
				fmt.Printf("BenchmarkTrees/impl=%s/%s\n", impl.name, line)
			}
		}
	}
}

// touch reads the first byte of p's name and returns it: whoever reads a
// plant reads its name (an answer encodes it), and where the name's bytes
// lie, in an arena or an allocation of their own, decides whether that
// misses the cache.
func touch(p plantstore.Plant) int { return int(p.Name[0]) }

var touchSink int

// sink keeps the garbage the steady load makes from being optimised away.
var sink []byte

// compareTrees measures one store at 1M plants and returns its result
// lines, each "op=NAME N VALUE UNIT...". A timed op is given in wall time
// (ns/op) and in the process's CPU time (cpu-ns/op, garbage collection
// included), the figure to read on a machine shared with other work:
//
//   - create-seq: ns per create, filling a store with ascending ids;
//   - create: ns per create, filling with scrambled ids (the store that
//     the rest use);
//   - memory: live heap per plant after that fill;
//   - read: ns per read of a random stored plant, and of its name's first
//     byte (see touch);
//   - list-walk: ns per page of 100 plants, walking the whole store page
//     after page, each starting after the last id of the one before, and
//     touching each plant's name as a read does;
//   - list-spread: the same per page of 100 starting at random stored ids;
//   - steady: 1M creates of new ids, each followed by the delete of the
//     oldest plant, with 2 KB of garbage per create as a request makes, so
//     that the collector runs some 30 times at 1M plants: ns per create
//     and delete, the 99th percentile of one create's time, and the
//     longest and the 99th percentile of the collector's stop-the-world
//     pauses (runtime/metrics /sched/pauses/total/gc:seconds) and the
//     cycles they came from;
//   - delete: ns per delete, emptying the store in scrambled order.
func compareTrees(t *testing.T, newStore func() plantstore.Storage) []string {
	const n = 1_000_000
	ctx := context.Background()
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
	create := func(s plantstore.Storage, id int64) {
		if err := s.Create(ctx, plantstore.Plant{ID: id, Name: freshName()}); err != nil {
			t.Fatalf("Create(%d) = %v", id, err)
		}
	}

	runtime.GC()
	s := newStore()
	c := startClock()
	for i := range n {
		create(s, int64(i))
	}
	add("op=create-seq %d %s", n, c.per(n))
	s = nil

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s = newStore()
	c = startClock()
	for i := range n {
		create(s, scramble(i))
	}
	add("op=create %d %s", n, c.per(n))
	runtime.GC()
	runtime.ReadMemStats(&after)
	add("op=memory 1 %.1f B/plant", float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/n)

	r := rand.New(rand.NewPCG(1, 2))
	var touched int
	defer func() { touchSink = touched }()
	c = startClock()
	for range n {
		id := scramble(r.IntN(n))
		p, err := s.Plant(ctx, id)
		if err != nil || p.ID != id {
			t.Fatalf("Plant(%d) = %v, %v", id, p, err)
		}
		touched += touch(p)
	}
	add("op=read %d %s", n, c.per(n))

	const page = 100
	pages := 0
	c = startClock()
	for from := int64(math.MinInt64); ; pages++ {
		ps, err := s.List(ctx, from, page)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			touched += touch(p)
		}
		if len(ps) < page {
			break
		}
		from = ps[len(ps)-1].ID + 1
	}
	add("op=list-walk %d %s", pages, c.per(pages))
	if pages != n/page {
		t.Fatalf("walked %d full pages, want %d", pages, n/page)
	}
	const spread = 20_000
	c = startClock()
	for range spread {
		ps, err := s.List(ctx, scramble(r.IntN(n)), page)
		if err != nil || len(ps) == 0 {
			t.Fatalf("List = %d plants, %v", len(ps), err)
		}
		for _, p := range ps {
			touched += touch(p)
		}
	}
	add("op=list-spread %d %s", spread, c.per(spread))

	createTimes := make([]time.Duration, n)
	pauses := []metrics.Sample{{Name: "/sched/pauses/total/gc:seconds"}, {Name: "/gc/cycles/total:gc-cycles"}}
	runtime.GC()
	metrics.Read(pauses)
	pausesBefore := pauses[0].Value.Float64Histogram()
	pausesBefore = &metrics.Float64Histogram{Counts: slices.Clone(pausesBefore.Counts), Buckets: pausesBefore.Buckets}
	cyclesBefore := pauses[1].Value.Uint64()
	c = startClock()
	for i := range n {
		sink = make([]byte, 2048)
		t0 := time.Now()
		create(s, scramble(n+i))
		createTimes[i] = time.Since(t0)
		if err := s.Delete(ctx, scramble(i)); err != nil {
			t.Fatalf("Delete(%d) = %v", scramble(i), err)
		}
	}
	steady := c.per(n)
	metrics.Read(pauses)
	h := pauses[0].Value.Float64Histogram()
	counts := make([]uint64, len(h.Counts))
	for i := range counts {
		counts[i] = h.Counts[i] - pausesBefore.Counts[i]
	}
	slices.Sort(createTimes)
	add("op=steady %d %s %d p99-create-ns %.0f max-pause-ns %.0f p99-pause-ns %d gc-cycles",
		n, steady, createTimes[n*99/100].Nanoseconds(),
		histQuantile(h.Buckets, counts, 1)*1e9, histQuantile(h.Buckets, counts, 0.99)*1e9,
		pauses[1].Value.Uint64()-cyclesBefore)

	c = startClock()
	for i := range n {
		if err := s.Delete(ctx, scramble(n+i)); err != nil {
			t.Fatalf("Delete(%d) = %v", scramble(n+i), err)
		}
	}
	add("op=delete %d %s", n, c.per(n))
	return lines
}

// A clock measures the wall time and, with a cpuClock, the CPU time of the
// whole process from its start.
type clock struct {
	wall time.Time
	cpu  cpuClock
}

func startClock() *clock {
	c := &clock{wall: time.Now()}
	c.cpu.start()
	return c
}

// per returns the time since c started per op, as "W ns/op C cpu-ns/op",
// without the CPU time when the platform cannot tell it.
func (c *clock) per(ops int) string {
	wall := float64(time.Since(c.wall)) / float64(ops)
	c.cpu.stop()
	if !c.cpu.ok {
		return fmt.Sprintf("%.1f ns/op", wall)
	}
	return fmt.Sprintf("%.1f ns/op %.1f cpu-ns/op", wall, float64(c.cpu.spent)/float64(ops))
}

// histQuantile returns the upper bound of the bucket of counts, a
// runtime/metrics histogram, that holds quantile q of its values: for q =
// 1, the bucket of the largest. It returns 0 when counts are all zero.
func histQuantile(buckets []float64, counts []uint64, q float64) float64 {
	var total uint64
	for _, c := range counts {
		total += c
	}
	if total == 0 {
		return 0
	}
	want := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= want && c > 0 {
			if math.IsInf(buckets[i+1], 1) {
				return buckets[i]
			}
			return buckets[i+1]
		}
	}
	return buckets[len(buckets)-1]
}

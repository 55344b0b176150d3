package memstore_test

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/memstore"
)

// benchName is a typical ten-byte plant name.
const benchName = "Monstera 1"

// freshName returns benchName in a new allocation of its own, as a request
// decoder hands it over: MemoryStorage keeps the string it is given, so a
// store filled by fill holds a name per plant, as a real one does.
func freshName() string {
	return string([]byte(benchName))
}

// A cpuClock adds up the CPU time the whole process spends while it runs,
// garbage collection included, and reports it as cpu-ns/op. It moves much
// less than ns/op when other processes compete for the cores. Under
// RunParallel it is the CPU time per op summed over all goroutines, so it
// stays flat while ns/op falls if creates scale with cores.
type cpuClock struct {
	spent, since time.Duration
	ok           bool
}

func (c *cpuClock) start() { c.since, c.ok = testkit.ProcessCPU() }

func (c *cpuClock) stop() {
	if now, ok := testkit.ProcessCPU(); ok && c.ok {
		c.spent += now - c.since
	}
}

// pause stops b's timer and c; resume starts them again.
func (c *cpuClock) pause(b *testing.B)  { c.stop(); b.StopTimer() }
func (c *cpuClock) resume(b *testing.B) { b.StartTimer(); c.start() }

// report stops c and reports the CPU time per op, unless the platform
// cannot tell it.
func (c *cpuClock) report(b *testing.B) {
	c.stop()
	if c.ok && b.N > 0 {
		b.ReportMetric(float64(c.spent.Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
}

// An idOrder turns the i-th create of a benchmark into an id.
type idOrder struct {
	name string
	id   func(i int) int64
}

var idOrders = []idOrder{
	{"sequential", func(i int) int64 { return int64(i) }},
	{"scrambled", scramble},
}

// scramble maps i to an id one-to-one, spreading consecutive i over the
// whole int64 range: every create lands at a random place in the index.
func scramble(i int) int64 {
	x := uint64(i) * 0x9e3779b97f4a7c15
	x ^= x >> 29
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 32
	return int64(x)
}

// fill creates the plants order gives for i in [0, n).
func fill(b *testing.B, ps *plantstore.PlantStore, order idOrder, n int) {
	b.Helper()
	ctx := context.Background()
	for i := range n {
		if _, err := ps.Create(ctx, plantstore.NewPlant{ID: order.id(i), Name: freshName()}); err != nil {
			b.Fatalf("Create(%d) = %v", order.id(i), err)
		}
	}
}

// BenchmarkCreate measures PlantStore.Create of untagged plants with
// ascending ids on memory storage, on one goroutine. The storage is
// replaced every 1M plants so that memory stays bounded however long the
// benchmark runs.
func BenchmarkCreate(b *testing.B) {
	b.ReportAllocs()
	ctx := context.Background()
	ps := plantstore.New(memstore.New())
	var id int64
	var cpu cpuClock
	cpu.start()
	for b.Loop() {
		if id == 1<<20 {
			cpu.pause(b)
			ps, id = plantstore.New(memstore.New()), 0
			cpu.resume(b)
		}
		if _, err := ps.Create(ctx, plantstore.NewPlant{ID: id, Name: benchName}); err != nil {
			b.Fatal(err)
		}
		id++
	}
	cpu.report(b)
}

// BenchmarkCreateParallel measures PlantStore.Create from GOMAXPROCS
// goroutines; run it with -cpu 1,2 to see how it scales. Each goroutine
// takes ascending ids of a range of its own, so that handing out ids is
// not what is measured.
func BenchmarkCreateParallel(b *testing.B) { benchmarkCreateParallel(b, 0) }

// BenchmarkCreateParallelSteady is BenchmarkCreateParallel at a steady
// size: each goroutine deletes its plant created 4096 creates earlier, so
// the store stays small and the figure shows how creates from several
// cores contend, not how the garbage collector copes with a store growing
// by millions. An op is one Create and one Delete.
func BenchmarkCreateParallelSteady(b *testing.B) { benchmarkCreateParallel(b, 4096) }

// benchmarkCreateParallel creates from GOMAXPROCS goroutines, each
// deleting its plant created window creates earlier unless window is 0.
func benchmarkCreateParallel(b *testing.B, window int64) {
	b.ReportAllocs()
	ps := plantstore.New(memstore.New())
	var next atomic.Int64
	var cpu cpuClock
	cpu.start()
	defer cpu.report(b)
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		base := next.Add(1) << 40
		for i := int64(0); pb.Next(); i++ {
			if _, err := ps.Create(ctx, plantstore.NewPlant{ID: base + i, Name: benchName}); err != nil {
				b.Error(err)
				return
			}
			if window > 0 && i >= window {
				if err := ps.Delete(ctx, base+i-window); err != nil {
					b.Error(err)
					return
				}
			}
		}
	})
}

type benchSize struct {
	name string
	n    int
}

var sizes = []benchSize{
	{"1K", 1_000},
	{"100K", 100_000},
	{"1M", 1_000_000},
	{"10M", 10_000_000},
}

// BenchmarkCreateAtSize measures PlantStore.Create on storage already
// holding a given number of plants, for ids in ascending and in scrambled
// order. To keep the size near its mark, the plants created are deleted,
// with the timer stopped, each time they reach a tenth of it (at least 100,
// at most 65536).
func BenchmarkCreateAtSize(b *testing.B) {
	for _, size := range sizes {
		b.Run(size.name, func(b *testing.B) {
			if size.n >= 10_000_000 && testing.Short() {
				b.Skip("filling 10M plants takes seconds and about 1 GB; run without -short")
			}
			for _, order := range idOrders {
				b.Run(order.name, func(b *testing.B) {
					benchmarkCreateAtSize(b, size.n, order)
				})
			}
		})
	}
}

func benchmarkCreateAtSize(b *testing.B, size int, order idOrder) {
	b.ReportAllocs()
	ctx := context.Background()
	ps := plantstore.New(memstore.New())
	fill(b, ps, order, size)
	runtime.GC()
	batch := min(max(size/10, 100), 65536)
	next, pending := size, 0
	var cpu cpuClock
	cpu.start()
	for b.Loop() {
		if pending == batch {
			cpu.pause(b)
			for i := next - batch; i < next; i++ {
				if err := ps.Delete(ctx, order.id(i)); err != nil {
					b.Fatal(err)
				}
			}
			pending = 0
			cpu.resume(b)
		}
		if _, err := ps.Create(ctx, plantstore.NewPlant{ID: order.id(next), Name: benchName}); err != nil {
			b.Fatal(err)
		}
		next++
		pending++
	}
	cpu.report(b)
}

// BenchmarkMemoryLatency measures the machine, not plantstore: one read
// of a random cache line in a table as large as the live heap a memory
// store of each size of BenchmarkCreateAtSize takes (37 bytes a plant with
// scrambled ids), each read's address coming from the one before, as a
// descent of an index does. A create with a scrambled id cannot cost less
// than one such read on top of its cost at 1K, where everything is in
// cache.
func BenchmarkMemoryLatency(b *testing.B) {
	const bytesPerPlant, lineWords = 37, 8 // lineWords int64s make a 64-byte line
	for _, size := range sizes {
		b.Run(size.name, func(b *testing.B) {
			if size.n >= 10_000_000 && testing.Short() {
				b.Skip("builds a 370 MB table; run without -short")
			}
			lines := max(size.n*bytesPerPlant/64, 2)
			// table holds one cycle through every line, in random order:
			// the first word of a line is the index of the next line's.
			table := make([]int64, lines*lineWords)
			order := rand.Perm(lines)
			for i, line := range order {
				table[line*lineWords] = int64(order[(i+1)%lines] * lineWords)
			}
			var at int64
			for b.Loop() {
				at = table[at]
			}
			latencySink = at
		})
	}
}

var latencySink int64

// BenchmarkMemoryPerPlant fills a memory storage with 1M untagged plants
// with ten-byte names and reports the live heap they take, in bytes per
// plant (B/plant). Its ns/op is the time to fill the storage, two garbage
// collections included.
func BenchmarkMemoryPerPlant(b *testing.B) {
	const n = 1_000_000
	for _, order := range idOrders {
		b.Run(order.name, func(b *testing.B) {
			b.ReportAllocs()
			var perPlant float64
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				ps := plantstore.New(memstore.New())
				fill(b, ps, order, n)
				runtime.GC()
				runtime.ReadMemStats(&after)
				perPlant = float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / n
				runtime.KeepAlive(ps)
			}
			b.ReportMetric(perPlant, "B/plant")
		})
	}
}

// BenchmarkListPage measures PlantStore.List of full 100-plant pages on
// storage holding 1K and 1M plants: pages starting at spread-out ids, whose
// leaves are seldom in the CPU cache at 1M, and consecutive pages, as a
// client paging through the store reads them.
func BenchmarkListPage(b *testing.B) {
	for _, size := range []benchSize{sizes[0], sizes[2]} {
		b.Run(size.name, func(b *testing.B) {
			ps := plantstore.New(memstore.New())
			fill(b, ps, idOrders[0], size.n)
			pages := []struct {
				name  string
				after func(i int, last int64) int64
			}{
				{"spread", func(i int, _ int64) int64 { return int64(i*7919%(size.n-100)) - 1 }},
				{"next", func(_ int, last int64) int64 { return (last + 1) % int64(size.n-100) }},
			}
			for _, pg := range pages {
				b.Run(pg.name, func(b *testing.B) {
					b.ReportAllocs()
					ctx := context.Background()
					var i int
					last := int64(-1)
					var cpu cpuClock
					cpu.start()
					for b.Loop() {
						after := pg.after(i, last)
						page, err := ps.List(ctx, plantstore.ListOptions{Limit: 100, After: after, HasAfter: true})
						if err != nil || len(page) != 100 {
							b.Fatalf("List after %d = %d plants, %v", after, len(page), err)
						}
						last = page[len(page)-1].ID
						i++
					}
					cpu.report(b)
				})
			}
		})
	}
}

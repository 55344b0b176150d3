package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/testkit"
)

// BenchmarkCreate measures durable Creates with 1, 8 and 64 concurrent
// callers, with group commit and with one transaction per Create. Compare
// the modes with
//
//	go test -run '^$' -bench Create -count 5 ./sqlstore > bench.txt
//	benchstat -col /mode bench.txt
func BenchmarkCreate(b *testing.B) {
	for _, be := range backends {
		for _, mode := range modes {
			for _, clients := range []int{1, 8, 64} {
				name := fmt.Sprintf("%s/mode=%s/clients=%d", be.name, mode.name, clients)
				b.Run(name, func(b *testing.B) {
					createLoad(b, be.open(b, mode.opts...), clients, 0)
				})
			}
		}
	}
}

// BenchmarkCreateLoaded is BenchmarkCreate/mode=group with a fixed
// number of callers that each spend some CPU time between Creates, as the
// connections of an HTTP server do decoding and answering requests. Run
// it with -cpu 1 to model a server on one core:
//
//	go test -run '^$' -bench CreateLoaded -cpu 1 -count 8 ./sqlstore
//
// It reports the commits per Create besides the rate: how well group
// commit shares a flush among those callers.
func BenchmarkCreateLoaded(b *testing.B) {
	for _, be := range backends {
		for _, work := range []time.Duration{0, 20 * time.Microsecond} {
			b.Run(fmt.Sprintf("%s/clients=32/work=%v", be.name, work), func(b *testing.B) {
				var commits atomic.Int64
				s := be.open(b, WithHooks(Hooks{
					Committed: func(int, time.Duration) { commits.Add(1) },
				}))
				createLoad(b, s, 32, work)
				b.ReportMetric(float64(commits.Load())/float64(b.N), "commits/op")
			})
		}
	}
}

// createLoad makes at least b.N Creates of distinct ids from clients
// goroutines, each busy for work before each Create, reports the rate
// and returns each Create's latency.
func createLoad(b *testing.B, s *Store, clients int, work time.Duration) []time.Duration {
	b.ReportAllocs()
	n := max(b.N, clients)
	lat := make([]time.Duration, n)
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	cpu0, cpuOK := testkit.ProcessCPU()
	for range clients {
		wg.Go(func() {
			for {
				id := next.Add(1) - 1
				if id >= int64(n) {
					return
				}
				for start := time.Now(); time.Since(start) < work; {
				}
				start := time.Now()
				if err := s.Create(ctx, plantstore.Plant{ID: id, Name: "bench", Tag: "t", HasTag: true}); err != nil {
					b.Error(err)
					return
				}
				lat[id] = time.Since(start)
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "creates/s")
	if cpu1, ok := testkit.ProcessCPU(); ok && cpuOK {
		// The process's CPU time moves much less than the rate when other
		// processes compete for the cores; on PostgreSQL it leaves out the
		// server's.
		b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(n), "cpu-ns/op")
	}
	return lat
}

// BenchmarkListPage reads a 100-plant page from the middle of 1K and 1M
// stored plants: the cost follows the page, not the table.
func BenchmarkListPage(b *testing.B) {
	for _, be := range backends {
		for _, size := range []int{1_000, 1_000_000} {
			b.Run(fmt.Sprintf("%s/plants=%d", be.name, size), func(b *testing.B) {
				s := be.open(b)
				fill(b, s.db, size)
				ctx := context.Background()
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					from := int64(i*7919) % int64(size-100)
					page, err := s.List(ctx, from, 100)
					if err != nil || len(page) != 100 {
						b.Fatalf("List(%d, 100) = %d plants, %v", from, len(page), err)
					}
				}
			})
		}
	}
}

// fill stores plants 0..n-1 directly, a large batch per statement, which is
// far quicker than n Creates.
func fill(b *testing.B, db *sql.DB, n int) {
	b.Helper()
	const per = 500
	for start := 0; start < n; start += 5000 * per {
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		for lo := start; lo < min(start+5000*per, n); lo += per {
			var q strings.Builder
			q.WriteString("INSERT INTO plants (id, name, tag) VALUES ")
			for id := lo; id < min(lo+per, n); id++ {
				if id > lo {
					q.WriteByte(',')
				}
				fmt.Fprintf(&q, "(%d,'plant %d',NULL)", id, id)
			}
			if _, err := tx.Exec(q.String()); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOutboxDeliveries measures the outbox work of one delivery: its
// share of a FanOut, a Claim and an Ack, each over batches of 256, for one
// subscriber. The events are written before the timer starts.
//
//	go test -run '^$' -bench OutboxDeliveries -count 5 ./sqlstore
func BenchmarkOutboxDeliveries(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			b.ReportAllocs()
			s := be.open(b, WithOutbox())
			ctx := context.Background()
			q := newQueries(be.dialect)
			tx, err := s.db.BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			for done := 0; done < b.N; {
				n := min(b.N-done, batchRows)
				args := make([]any, 0, 4*n)
				for i := range n {
					args = append(args, int64(done+i), "bench", nil, int64(1))
				}
				if _, err := tx.ExecContext(ctx, q.insertEvents(n), args...); err != nil {
					b.Fatal(err)
				}
				done += n
			}
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			subs := []string{"sub"}
			until := time.Now().Add(time.Hour)
			for delivered := 0; delivered < b.N; {
				if _, err := s.FanOut(ctx, subs, batchRows); err != nil {
					b.Fatal(err)
				}
				ds, err := s.Claim(ctx, "sub", "bench", until, batchRows)
				if err != nil {
					b.Fatal(err)
				}
				seqs := make([]int64, len(ds))
				for i, d := range ds {
					seqs[i] = d.Seq
				}
				if err := s.Ack(ctx, "sub", seqs); err != nil {
					b.Fatal(err)
				}
				delivered += len(ds)
			}
		})
	}
}

// BenchmarkInsertBatch measures what the committer spends on one batch of
// plants (insert and commit, in one transaction), by its size, per plant:
// on SQLite a batch beyond maxPreparedBatch goes in prepared chunks. Run
// it with -cpu 1:
//
//	go test -run '^$' -bench InsertBatch -cpu 1 -count 5 ./sqlstore
func BenchmarkInsertBatch(b *testing.B) {
	for _, be := range backends {
		for _, size := range []int{16, 64, 65, 128, 256} {
			for _, outbox := range []bool{false, true} {
				b.Run(fmt.Sprintf("%s/outbox=%v/size=%d", be.name, outbox, size), func(b *testing.B) {
					var opts []Option
					if outbox {
						opts = append(opts, WithOutbox())
					}
					s := be.open(b, opts...)
					ctx := context.Background()
					reqs := make([]*createReq, size)
					for i := range reqs {
						reqs[i] = &createReq{}
					}
					b.ReportAllocs()
					id := int64(0)
					for b.Loop() {
						for _, r := range reqs {
							id++
							r.plant = plantstore.Plant{ID: id, Name: "bench", Tag: "t", HasTag: id%2 == 0}
						}
						errs, _ := s.insert(ctx, ctx, reqs)
						if err := errors.Join(errs...); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size), "ns/plant")
				})
			}
		}
	}
}

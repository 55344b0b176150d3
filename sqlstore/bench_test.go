package sqlstore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/plantstore/plantstore"
)

// BenchmarkCreate measures durable Creates with 1, 8 and 64 concurrent
// callers, with group commit and with one transaction per Create. Compare
// the modes with
//
//	go test -run '^$' -bench Create -count 5 ./sqlstore > bench.txt
//	benchstat -col /mode bench.txt
func BenchmarkCreate(b *testing.B) {
	for _, be := range backends {
		for _, mode := range []struct {
			name string
			opts []Option
		}{
			{"group", nil},
			{"single", []Option{WithoutGroupCommit()}},
		} {
			for _, clients := range []int{1, 8, 64} {
				name := fmt.Sprintf("%s/mode=%s/clients=%d", be.name, mode.name, clients)
				b.Run(name, func(b *testing.B) {
					db, _ := be.newDB(b)
					s := openStore(b, db, be.dialect, mode.opts...)
					benchmarkCreates(b, s, clients)
				})
			}
		}
	}
}

// benchmarkCreates makes b.N Creates of distinct ids from clients
// goroutines and reports the rate.
func benchmarkCreates(b *testing.B, s *Store, clients int) {
	b.ReportAllocs()
	ctx := context.Background()
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range clients {
		wg.Go(func() {
			for {
				id := next.Add(1) - 1
				if id >= int64(b.N) {
					return
				}
				if err := s.Create(ctx, plantstore.Plant{ID: id, Name: "bench", Tag: "t", HasTag: true}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
}

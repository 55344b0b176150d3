package sqlstore

import (
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// withFlushDelay makes every flush of a group commit wait d first, as a
// disk whose flush takes d longer would.
func withFlushDelay(d time.Duration) Option {
	return func(c *config) { c.flushDelay = d }
}

// withoutFlusher leaves the flush of group commits to SQLite, inside COMMIT.
func withoutFlusher() Option {
	return func(c *config) { c.noFlusher = true }
}

// withFlushBeside makes the committer hand every batch to the flusher,
// however quick its flushes.
func withFlushBeside() Option {
	return func(c *config) { c.beside = true }
}

// withFlushFile makes the flusher flush the WAL file with f.
func withFlushFile(f func(*os.File) error) Option {
	return func(c *config) { c.flushFile = f }
}

// BenchmarkGroupCommitSweep measures the group commit as its callers grow
// (8, 32, 128, 512) on the disk as it is (flush=disk) and on one whose
// flush takes 1 ms more (flush=1ms), each caller spending 20 µs of CPU
// between Creates as an HTTP server's connection does decoding and
// answering a request. It reports creates/s, creates/commit and the
// Creates' p50 and p99 in milliseconds. Run it with -cpu 1 to model a
// server on one core, as the binary is measured:
//
//	go test ./sqlstore -run '^$' -bench GroupCommitSweep -cpu 1 -benchtime 3s
//
// scripts/groupcommit-sweep.sh measures the same over HTTP, and compares
// two builds.
func BenchmarkGroupCommitSweep(b *testing.B) {
	for _, be := range backends {
		for _, flush := range []time.Duration{0, time.Millisecond} {
			for _, clients := range []int{8, 32, 128, 512} {
				name := "disk"
				if flush > 0 {
					name = flush.String()
				}
				b.Run(fmt.Sprintf("%s/flush=%s/clients=%d", be.name, name, clients), func(b *testing.B) {
					var commits, stored atomic.Int64
					s := be.open(b, withFlushDelay(flush), WithHooks(Hooks{
						Committed: func(n int, _ time.Duration) { commits.Add(1); stored.Add(int64(n)) },
					}))
					lat := createLoad(b, s, clients, 20*time.Microsecond)
					if n := commits.Load(); n > 0 {
						b.ReportMetric(float64(stored.Load())/float64(n), "creates/commit")
					}
					slices.Sort(lat)
					b.ReportMetric(float64(lat[len(lat)/2])/1e6, "p50-ms")
					b.ReportMetric(float64(lat[len(lat)*99/100])/1e6, "p99-ms")
				})
			}
		}
	}
}

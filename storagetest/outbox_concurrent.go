package storagetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

// concurrentDeadline bounds the concurrent outbox tests' loops, which end
// once the outbox has been worked through: a deadline, so that an outbox
// that loses a delivery fails the test instead of hanging it.
const concurrentDeadline = 2 * time.Minute

// idlePoll is how long an owner of the concurrent tests that found
// nothing to claim waits before it polls again, as a Dispatcher does,
// instead of holding a storage's write lock in a loop.
const idlePoll = 2 * time.Millisecond

// createConcurrently creates the plants 0 … n-1 from creators goroutines,
// so that a storage that batches creates batches them, and closes done
// once every create has returned.
func (b box) createConcurrently(n, creators int64, done chan<- struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for c := range creators {
		wg.Go(func() {
			for id := c; id < n; id += creators {
				if err := b.create(context.Background(), plant(id)); err != nil {
					b.t.Errorf("create(%d) = %v", id, err)
					return
				}
			}
		})
	}
	go func() { wg.Wait(); close(done) }()
	return &wg
}

// testConcurrentFanOuts fans out from several goroutines while plants are
// created, and checks that every event is fanned out exactly once: the
// counts FanOut returns add up to the events, and each subscriber gets one
// delivery of each.
func testConcurrentFanOuts(b box) {
	const creators, fanners = 4, 6
	events := orShort(200, 60)
	subs := []string{"a", "b"}
	done := make(chan struct{})
	created := b.createConcurrently(int64(events), creators, done)
	var fanned atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(concurrentDeadline)
	for range fanners {
		wg.Go(func() {
			for {
				finished := isClosed(done)
				n, err := b.o.FanOut(context.Background(), subs, 7)
				if err != nil {
					b.t.Errorf("FanOut() = %v", err)
					return
				}
				fanned.Add(int64(n))
				if n == 0 && (finished || time.Now().After(deadline)) {
					return
				}
			}
		})
	}
	created.Wait()
	wg.Wait()
	if n, err := b.o.FanOut(context.Background(), subs, events); err != nil {
		b.t.Fatalf("last FanOut() = %v", err)
	} else {
		fanned.Add(int64(n))
	}
	if got := fanned.Load(); got != int64(events) {
		b.t.Errorf("FanOut() calls fanned out %d events in all, want %d: each once", got, events)
	}
	want := make([]int64, events)
	for i := range want {
		want[i] = int64(i)
	}
	for _, sub := range subs {
		var got []int64
		for {
			ids := b.claimIDs(sub, "one", hour(), 64)
			if len(ids) == 0 {
				break
			}
			got = append(got, ids...)
		}
		if diff := cmp.Diff(want, slices.Sorted(slices.Values(got))); diff != "" {
			b.t.Errorf("plants claimed for %s: each once (-want +got):\n%s", sub, diff)
		}
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// testAckMany acks more deliveries in one call than a storage may name in
// one statement, and checks that every one is ended.
func testAckMany(b box) {
	const n = 600
	done := make(chan struct{})
	b.createConcurrently(n, 16, done).Wait()
	if b.t.Failed() {
		b.t.FailNow()
	}
	b.fanOut([]string{"a"}, 2*n, n, "every event")
	var seqs []int64 // a claim may take fewer than asked
	for {
		got := b.claimSeqs("a", "one", hour(), n)
		if len(got) == 0 {
			break
		}
		seqs = append(seqs, got...)
	}
	if len(seqs) != n {
		b.t.Fatalf("Claim() took %d deliveries, want %d", len(seqs), n)
	}
	b.ack("a", seqs...)
	b.wantDepth(0, "every delivery acked in one call")
	if got := b.claimSeqs("a", "two", past(), n); len(got) != 0 {
		b.t.Errorf("Claim() after acking every delivery = %d deliveries, want none", len(got))
	}
}

// testConcurrentOwners has several owners fan out, claim and ack the same
// outbox at once while plants are created, and checks that each delivery
// is claimed exactly once and that the outbox ends empty.
func testConcurrentOwners(b box) {
	const owners, creators = 3, 16
	events := orShort(300, 90)
	subs := []string{"a", "b"}
	var (
		mu      sync.Mutex
		claimed = map[string]int{} // "sub/seq" → claims
		wg      sync.WaitGroup
	)
	done := make(chan struct{})
	created := b.createConcurrently(int64(events), creators, done)
	deadline := time.Now().Add(concurrentDeadline)
	for i := range owners {
		for _, sub := range subs {
			wg.Go(func() {
				b.own(sub, fmt.Sprint("owner-", i), subs, done, deadline, func(ds []plantstore.Delivery) {
					mu.Lock()
					defer mu.Unlock()
					for _, d := range ds {
						claimed[fmt.Sprint(sub, "/", d.Seq)]++
					}
				})
			})
		}
	}
	created.Wait()
	wg.Wait()
	dups := 0
	for k, n := range claimed {
		if n != 1 {
			dups++
			b.t.Errorf("delivery %s claimed %d times", k, n)
		}
	}
	if len(claimed) != events*len(subs) {
		b.t.Errorf("%d deliveries claimed, want %d", len(claimed), events*len(subs))
	}
	b.wantDepth(0, "every delivery acked")
	b.t.Logf("%d owners, %d events, %d subscribers: %d deliveries claimed, %d more than once", owners, events, len(subs), len(claimed), dups)
}

// own is one owner's loop in testConcurrentOwners: fan out, claim for sub,
// report the claims, ack them, until the creates are done and the outbox
// is empty, or the deadline passes.
func (b box) own(sub, owner string, subs []string, done <-chan struct{}, deadline time.Time, report func([]plantstore.Delivery)) {
	ctx := context.Background()
	for {
		finished := isClosed(done)
		if _, err := b.o.FanOut(ctx, subs, 50); err != nil {
			b.t.Errorf("FanOut() = %v", err)
			return
		}
		ds, err := b.o.Claim(ctx, sub, owner, hour(), 20)
		if err != nil {
			b.t.Errorf("Claim() = %v", err)
			return
		}
		report(ds)
		if err := b.o.Ack(ctx, sub, seqsOf(ds)); err != nil {
			b.t.Errorf("Ack() = %v", err)
			return
		}
		if len(ds) > 0 {
			continue
		}
		if finished {
			if n, err := b.o.Depth(ctx); err != nil || n == 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			b.t.Errorf("%s: deliveries to %s left %v after the creates", owner, sub, concurrentDeadline)
			return
		}
		time.Sleep(idlePoll)
	}
}

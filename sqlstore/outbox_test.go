package sqlstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

// The Outbox contract itself (fan-out, claims, leases, retries, acks,
// Depth, concurrent owners on one Store, runs), and that a Store without
// WithOutbox records no event, are checked by storagetest.Run, in
// TestStorage. The tests here check what is this package's own: several
// Stores on separate *sql.DBs sharing one outbox as processes do (FOR
// UPDATE SKIP LOCKED on PostgreSQL, SQLite's file lock), the rows left,
// and WithOutboxMaxPending.

// allEvents returns every event in s's outbox, by ascending seq.
func allEvents(t *testing.T, s *Store) []plantstore.Event {
	t.Helper()
	seqs := queryInts(t, s.db, `SELECT seq FROM events ORDER BY seq`)
	if len(seqs) == 0 {
		return nil
	}
	byseq, err := readEvents(context.Background(), s.db, s.q.events(len(seqs)), seqs)
	if err != nil {
		t.Fatalf("read events: %v", err)
	}
	events := make([]plantstore.Event, 0, len(seqs))
	for _, seq := range seqs {
		events = append(events, byseq[seq])
	}
	return events
}

// claim claims for owner and returns the seqs claimed and their plants' ids.
func claim(t *testing.T, s *Store, sub, owner string, until time.Time, limit int) (seqs, ids []int64) {
	t.Helper()
	ds, err := s.Claim(context.Background(), sub, owner, until, limit)
	if err != nil {
		t.Fatalf("Claim(%s, %s) = %v", sub, owner, err)
	}
	seqs = []int64{}
	for _, d := range ds {
		seqs, ids = append(seqs, d.Seq), append(ids, d.Plant.ID)
	}
	return seqs, ids
}

// TestOutboxConcurrentOwners has several owners on separate *sql.DBs, as
// separate processes would be, fan out, claim and ack the same outbox at
// once, and checks that each delivery is claimed exactly once.
//
// It is one piece: the owners' loops and the count of claims share the one outbox and its state.
func TestOutboxConcurrentOwners(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, be backend) {
		_, dsn := be.newDB(t)
		const owners, events = 3, 300
		stores := make([]*Store, owners)
		// Six claimers in tight loops contend for one SQLite file
		// lock with the creates; the test is about claims, not about
		// how long a create waits, so it waits long.
		for i := range stores {
			stores[i] = openStore(t, openDB(t, be.driver, dsn), be.dialect, WithOutbox(), WithTimeout(time.Minute))
		}
		ctx := context.Background()
		subs := []string{"a", "b"}
		var (
			mu      sync.Mutex
			claimed = map[string]int{} // "sub/seq" → claims
			wg      sync.WaitGroup
			created sync.WaitGroup
		)
		// Creates come from several goroutines, so that group commit
		// batches them as it would a server's.
		const creators = 16
		created.Add(creators)
		for c := range int64(creators) {
			wg.Go(func() {
				defer created.Done()
				for id := c; id < events; id += creators {
					if err := stores[id%owners].Create(ctx, plantstore.Plant{ID: id, Name: "p"}); err != nil {
						t.Errorf("Create(%d) = %v", id, err)
						return
					}
				}
			})
		}
		done := make(chan struct{})
		go func() { created.Wait(); close(done) }()
		for i, s := range stores {
			for _, sub := range subs {
				wg.Go(func() {
					owner := fmt.Sprint("owner-", i)
					for {
						finished := false
						select {
						case <-done:
							finished = true
						default:
						}
						if _, err := s.FanOut(ctx, subs, 50); err != nil {
							t.Errorf("FanOut() = %v", err)
							return
						}
						ds, err := s.Claim(ctx, sub, owner, time.Now().Add(time.Hour), 20)
						if err != nil {
							t.Errorf("Claim() = %v", err)
							return
						}
						var seqs []int64
						mu.Lock()
						for _, d := range ds {
							claimed[fmt.Sprint(sub, "/", d.Seq)]++
							seqs = append(seqs, d.Seq)
						}
						mu.Unlock()
						if err := s.Ack(ctx, sub, seqs); err != nil {
							t.Errorf("Ack() = %v", err)
							return
						}
						if len(ds) == 0 {
							if finished {
								if n, err := s.Depth(ctx); err != nil || n == 0 {
									return
								}
							}
							// An idle owner polls, as a Dispatcher does,
							// instead of holding SQLite's write lock in a
							// loop.
							time.Sleep(10 * time.Millisecond)
						}
					}
				})
			}
		}
		wg.Wait()
		dups := 0
		for k, n := range claimed {
			if n != 1 {
				dups++
				t.Errorf("delivery %s claimed %d times", k, n)
			}
		}
		if len(claimed) != events*len(subs) {
			t.Errorf("%d deliveries claimed, want %d", len(claimed), events*len(subs))
		}
		if n, err := stores[0].Depth(ctx); err != nil || n != 0 {
			t.Errorf("Depth() at the end = %d, %v, want 0", n, err)
		}
		if left := queryInt(t, stores[0].db, `SELECT count(*) FROM webhook_deliveries`); left != 0 {
			t.Errorf("%d delivery rows left, want 0", left)
		}
		t.Logf("%d owners, %d events, %d subscribers: %d deliveries claimed, %d more than once", owners, events, len(subs), len(claimed), dups)
	})
}

// TestOutboxMaxPending bounds the outbox to three events and checks that
// FanOut drops the oldest events past it, fanned out or not, for every
// subscriber, counts them, and leaves alone the events that ended.
func TestOutboxMaxPending(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, be backend) {
		s := be.open(t, WithOutbox(), WithOutboxMaxPending(3))
		ctx := context.Background()
		subs := []string{"a", "b"}
		fanOut := func(want int) {
			t.Helper()
			if n, err := s.FanOut(ctx, subs, 100); err != nil || n != want {
				t.Fatalf("FanOut() = %d, %v; want %d, nil", n, err, want)
			}
		}

		mustCreate(t, s, "p", 1, 2)
		fanOut(2)
		mustCreate(t, s, "p", 3, 4, 5, 6, 7)
		// Events 1 to 4 are more than three behind event 7: 1 and 2
		// fanned out, 3 and 4 not.
		fanOut(3)
		if got := s.Dropped(); got != 4 {
			t.Errorf("Dropped() = %d, want 4", got)
		}
		for _, sub := range subs {
			_, got := claim(t, s, sub, "o", time.Now().Add(time.Hour), 100)
			if diff := cmp.Diff([]int64{5, 6, 7}, got); diff != "" {
				t.Errorf("plants claimed for %s (-want +got):\n%s", sub, diff)
			}
		}

		// Event 5 ends for both subscribers: it is not counted again
		// when event 8 pushes it out of the bound.
		seq5 := allEvents(t, s)[0].Seq
		for _, sub := range subs {
			if err := s.Ack(ctx, sub, []int64{seq5}); err != nil {
				t.Fatal(err)
			}
		}
		mustCreate(t, s, "p", 8)
		fanOut(1)
		if got := s.Dropped(); got != 4 {
			t.Errorf("Dropped() = %d after an ended event left the bound, want still 4", got)
		}
		if n, err := s.Depth(ctx); err != nil || n != 3 {
			t.Errorf("Depth() = %d, %v; want 3, nil", n, err)
		}
	})
}

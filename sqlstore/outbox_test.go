package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

// allEvents returns every event in s's outbox, by ascending seq.
func allEvents(t *testing.T, s *Store) []plantstore.Event {
	t.Helper()
	rows, err := s.db.Query(`SELECT seq FROM events ORDER BY seq`)
	if err != nil {
		t.Fatalf("read events: %v", err)
	}
	var seqs []int64
	for rows.Next() {
		var seq int64
		if err := rows.Scan(&seq); err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, seq)
	}
	rows.Close()
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

func TestOutboxRecordsEvents(t *testing.T) {
	t.Parallel()
	for _, be := range backends {
		for _, mode := range []struct {
			name string
			opts []Option
		}{
			{"group", []Option{WithOutbox()}},
			{"single", []Option{WithOutbox(), WithoutGroupCommit()}},
		} {
			t.Run(be.name+"/mode="+mode.name, func(t *testing.T) {
				db, _ := be.newDB(t)
				s := openStore(t, db, be.dialect, mode.opts...)
				ctx := context.Background()
				before := time.Now().Add(-time.Second)
				plants := []plantstore.Plant{
					{ID: 3, Name: "Fern"},
					{ID: 1, Name: "Aloe", Tag: "succulent", HasTag: true},
					{ID: 2, Name: "Ivy", HasTag: true},
				}
				for _, p := range plants {
					if err := s.Create(ctx, p); err != nil {
						t.Fatalf("Create(%+v) = %v", p, err)
					}
				}
				if err := s.Create(ctx, plantstore.Plant{ID: 1, Name: "taken"}); !errors.Is(err, plantstore.ErrConflict) {
					t.Fatalf("Create of a taken id = %v, want ErrConflict", err)
				}
				cancelled, cancel := context.WithCancel(ctx)
				cancel()
				if err := s.Create(cancelled, plantstore.Plant{ID: 4, Name: "cancelled"}); !errors.Is(err, context.Canceled) {
					t.Fatalf("Create with a cancelled context = %v, want context.Canceled", err)
				}

				events := allEvents(t, s)
				var got []plantstore.Plant
				for i, e := range events {
					got = append(got, e.Plant)
					if i > 0 && e.Seq <= events[i-1].Seq {
						t.Errorf("events out of order: seq %d after %d", e.Seq, events[i-1].Seq)
					}
					if e.Time.Before(before) || e.Time.After(time.Now().Add(time.Second)) {
						t.Errorf("event %d time %v is not around now", e.Seq, e.Time)
					}
				}
				if diff := cmp.Diff(plants, got); diff != "" {
					t.Fatalf("events mismatch: one per created plant, none for the failed Creates (-want +got):\n%s", diff)
				}
				if n, err := s.Depth(ctx); err != nil || n != len(plants) {
					t.Errorf("Depth() = %d, %v, want %d", n, err, len(plants))
				}
			})
		}
	}
}

func TestNoOutboxRecordsNoEvents(t *testing.T) {
	t.Parallel()
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			db, _ := be.newDB(t)
			s := openStore(t, db, be.dialect)
			ctx := context.Background()
			if err := s.Create(ctx, plantstore.Plant{ID: 1, Name: "quiet"}); err != nil {
				t.Fatal(err)
			}
			if n, err := s.FanOut(ctx, []string{"a"}, 10); err != nil || n != 0 {
				t.Errorf("FanOut() without the outbox = %d, %v, want 0", n, err)
			}
			if n, err := s.Depth(ctx); err != nil || n != 0 {
				t.Errorf("Depth() without the outbox = %d, %v, want 0", n, err)
			}
		})
	}
}

// claimSeqs claims for owner and returns the seqs claimed.
func claimSeqs(t *testing.T, s *Store, sub, owner string, until time.Time, limit int) []int64 {
	t.Helper()
	ds, err := s.Claim(context.Background(), sub, owner, until, limit)
	if err != nil {
		t.Fatalf("Claim(%s, %s) = %v", sub, owner, err)
	}
	seqs := []int64{}
	for _, d := range ds {
		seqs = append(seqs, d.Seq)
	}
	return seqs
}

// TestOutboxClaimLeaseAck walks the delivery state of five events to two
// subscribers through fan-out, claims, leases, retries and acks.
//
// It is one piece: each step acts on what the steps before it left, on one outbox.
func TestOutboxClaimLeaseAck(t *testing.T) {
	t.Parallel()
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			db, _ := be.newDB(t)
			s := openStore(t, db, be.dialect, WithOutbox())
			ctx := context.Background()
			for id := range int64(5) {
				if err := s.Create(ctx, plantstore.Plant{ID: id + 1, Name: fmt.Sprint("p", id+1)}); err != nil {
					t.Fatal(err)
				}
			}
			events := allEvents(t, s)
			seq := func(i int) int64 { return events[i].Seq }
			subs := []string{"a", "b"}
			if n, err := s.FanOut(ctx, subs, 3); err != nil || n != 3 {
				t.Fatalf("FanOut(limit 3) = %d, %v, want 3", n, err)
			}
			if n, err := s.FanOut(ctx, subs, 10); err != nil || n != 2 {
				t.Fatalf("second FanOut() = %d, %v, want the 2 left", n, err)
			}
			if n, err := s.FanOut(ctx, subs, 10); err != nil || n != 0 {
				t.Fatalf("third FanOut() = %d, %v, want 0: each event is fanned out once", n, err)
			}

			hour := time.Now().Add(time.Hour)
			ds, err := s.Claim(ctx, "a", "one", hour, 3)
			if err != nil {
				t.Fatal(err)
			}
			want := []plantstore.Delivery{{Event: events[0]}, {Event: events[1]}, {Event: events[2]}}
			if diff := cmp.Diff(want, ds); diff != "" {
				t.Errorf("Claim(a, one, 3) mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]int64{seq(3), seq(4)}, claimSeqs(t, s, "a", "two", hour, 10)); diff != "" {
				t.Errorf("Claim(a, two) while one holds the first three: seqs mismatch (-want +got):\n%s", diff)
			}
			if got := claimSeqs(t, s, "a", "three", hour, 10); len(got) != 0 {
				t.Errorf("Claim(a) with every delivery leased = %v, want none", got)
			}
			if diff := cmp.Diff([]int64{seq(0), seq(1), seq(2), seq(3), seq(4)}, claimSeqs(t, s, "b", "three", hour, 10)); diff != "" {
				t.Errorf("Claim(b): seqs mismatch: subscribers are leased apart (-want +got):\n%s", diff)
			}

			kept, err := s.Extend(ctx, "a", "one", []int64{seq(0), seq(1), seq(2), seq(3)}, hour.Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]int64{seq(0), seq(1), seq(2)}, kept); diff != "" {
				t.Errorf("Extend() kept mismatch: only what one holds (-want +got):\n%s", diff)
			}

			// A failed attempt: seq 0 is due again at once with its
			// attempts, seq 1 only in an hour; a retry by an owner that
			// does not hold the delivery changes nothing.
			err = s.Retry(ctx, "a", "one", []plantstore.Retry{
				{Seq: seq(0), Attempts: 1, Due: time.Now().Add(-time.Second)},
				{Seq: seq(1), Attempts: 2, Due: hour},
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Retry(ctx, "a", "two", []plantstore.Retry{{Seq: seq(2), Attempts: 9, Due: time.Now()}}); err != nil {
				t.Fatal(err)
			}
			ds, err = s.Claim(ctx, "a", "two", hour, 10)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]plantstore.Delivery{{Event: events[0], Attempts: 1}}, ds); diff != "" {
				t.Errorf("Claim(a, two) after the retries mismatch (-want +got):\n%s", diff)
			}

			// A lease that has expired lets another owner claim, and the
			// first owner's Extend then finds it gone.
			if _, err := s.Extend(ctx, "a", "two", []int64{seq(0)}, time.Now().Add(-time.Second)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]int64{seq(0)}, claimSeqs(t, s, "a", "four", hour, 10)); diff != "" {
				t.Errorf("Claim(a, four) after two's lease expired mismatch (-want +got):\n%s", diff)
			}
			if kept, err := s.Extend(ctx, "a", "two", []int64{seq(0)}, hour); err != nil || len(kept) != 0 {
				t.Errorf("Extend() by the owner whose lease expired = %v, %v, want none kept", kept, err)
			}

			// Acks end deliveries; an event goes once both subscribers
			// are done with it.
			all := []int64{seq(0), seq(1), seq(2), seq(3), seq(4)}
			if err := s.Ack(ctx, "a", all); err != nil {
				t.Fatal(err)
			}
			if err := s.Ack(ctx, "b", all[:4]); err != nil {
				t.Fatal(err)
			}
			if n, err := s.Depth(ctx); err != nil || n != 1 {
				t.Errorf("Depth() with b's last delivery left = %d, %v, want 1", n, err)
			}
			for range 2 { // acking twice is not an error
				if err := s.Ack(ctx, "b", all[4:]); err != nil {
					t.Fatalf("Ack() = %v", err)
				}
			}
			if n, err := s.Depth(ctx); err != nil || n != 0 {
				t.Errorf("Depth() with every delivery ended = %d, %v, want 0", n, err)
			}

			// Seq only grows, and a new event is fanned out although every
			// earlier one is gone.
			if err := s.Create(ctx, plantstore.Plant{ID: 9, Name: "later"}); err != nil {
				t.Fatal(err)
			}
			if n, err := s.FanOut(ctx, subs, 10); err != nil || n != 1 {
				t.Fatalf("FanOut() after the outbox emptied = %d, %v, want 1", n, err)
			}
			ds, err = s.Claim(ctx, "b", "one", hour, 10)
			if err != nil || len(ds) != 1 || ds[0].Seq <= seq(4) || ds[0].Plant.ID != 9 {
				t.Errorf("Claim(b) = %+v, %v, want plant 9 with a seq above %d", ds, err, seq(4))
			}
		})
	}
}

// TestOutboxAckManyInOneCall acks more deliveries in one call than one
// statement names, and checks that every one is ended.
func TestOutboxAckManyInOneCall(t *testing.T) {
	t.Parallel()
	const n = 600 // over two batches of batchRows
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			db, _ := be.newDB(t)
			s := openStore(t, db, be.dialect, WithOutbox())
			ctx := context.Background()
			var wg sync.WaitGroup
			errs := make(chan error, n)
			for id := range int64(n) {
				wg.Go(func() { errs <- s.Create(ctx, plantstore.Plant{ID: id + 1, Name: "p"}) })
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatalf("Create() = %v", err)
				}
			}
			if got, err := s.FanOut(ctx, []string{"a"}, 2*n); err != nil || got != n {
				t.Fatalf("FanOut() = %d, %v, want %d", got, err, n)
			}
			var seqs []int64 // a claim takes at most batchRows
			for {
				got := claimSeqs(t, s, "a", "one", time.Now().Add(time.Hour), n)
				if len(got) == 0 {
					break
				}
				seqs = append(seqs, got...)
			}
			if len(seqs) != n {
				t.Fatalf("Claim() took %d deliveries, want %d", len(seqs), n)
			}
			if err := s.Ack(ctx, "a", seqs); err != nil {
				t.Fatalf("Ack(%d seqs) = %v", n, err)
			}
			if got, err := s.Depth(ctx); err != nil || got != 0 {
				t.Errorf("Depth() after acking every delivery in one call = %d, %v, want 0", got, err)
			}
		})
	}
}

// TestOutboxConcurrentOwners has several owners on separate *sql.DBs, as
// separate processes would be, fan out, claim and ack the same outbox at
// once, and checks that each delivery is claimed exactly once.
//
// It is one piece: the owners' loops and the count of claims share the one outbox and its state.
func TestOutboxConcurrentOwners(t *testing.T) {
	t.Parallel()
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
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
			var left int
			if err := stores[0].db.QueryRow(`SELECT count(*) FROM webhook_deliveries`).Scan(&left); err != nil || left != 0 {
				t.Errorf("%d delivery rows left (%v), want 0", left, err)
			}
			t.Logf("%d owners, %d events, %d subscribers: %d deliveries claimed, %d more than once", owners, events, len(subs), len(claimed), dups)
		})
	}
}

// TestOutboxMaxPending bounds the outbox to three events and checks that
// FanOut drops the oldest events past it, fanned out or not, for every
// subscriber, counts them, and leaves alone the events that ended.
func TestOutboxMaxPending(t *testing.T) {
	t.Parallel()
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			db, _ := be.newDB(t)
			s := openStore(t, db, be.dialect, WithOutbox(), WithOutboxMaxPending(3))
			ctx := context.Background()
			subs := []string{"a", "b"}
			until := time.Now().Add(time.Hour)
			create := func(ids ...int64) {
				t.Helper()
				for _, id := range ids {
					if err := s.Create(ctx, plantstore.Plant{ID: id, Name: "p"}); err != nil {
						t.Fatalf("Create(%d) = %v", id, err)
					}
				}
			}
			fanOut := func(want int) {
				t.Helper()
				if n, err := s.FanOut(ctx, subs, 100); err != nil || n != want {
					t.Fatalf("FanOut() = %d, %v; want %d, nil", n, err, want)
				}
			}
			plantIDs := func(seqs []int64) []int64 {
				t.Helper()
				byseq := map[int64]int64{}
				for _, e := range allEvents(t, s) {
					byseq[e.Seq] = e.Plant.ID
				}
				ids := []int64{}
				for _, seq := range seqs {
					ids = append(ids, byseq[seq])
				}
				return ids
			}

			create(1, 2)
			fanOut(2)
			create(3, 4, 5, 6, 7)
			// Events 1 to 4 are more than three behind event 7: 1 and 2
			// fanned out, 3 and 4 not.
			fanOut(3)
			if got := s.Dropped(); got != 4 {
				t.Errorf("Dropped() = %d, want 4", got)
			}
			for _, sub := range subs {
				if diff := cmp.Diff([]int64{5, 6, 7}, plantIDs(claimSeqs(t, s, sub, "o", until, 100))); diff != "" {
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
			create(8)
			fanOut(1)
			if got := s.Dropped(); got != 4 {
				t.Errorf("Dropped() = %d after an ended event left the bound, want still 4", got)
			}
			if n, err := s.Depth(ctx); err != nil || n != 3 {
				t.Errorf("Depth() = %d, %v; want 3, nil", n, err)
			}
		})
	}
}

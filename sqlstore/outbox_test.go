package sqlstore

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

// The Outbox contract itself (fan-out, claims, leases, retries, acks,
// Depth, concurrent owners on one Store, runs), and that a Store without
// WithOutbox records no event, are checked by storagetest.Run, in
// TestStorage, and on several Stores on separate *sql.DBs sharing one
// outbox as processes do, in TestStoresShareADatabase. The tests here
// check what is this package's own: WithOutboxMaxPending.

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

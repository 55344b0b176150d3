package storagetest

import (
	"context"
	"errors"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

// testClaimLeaseAck walks the delivery state of five events to two
// subscribers through fan-out, claims, leases, retries and acks.
//
// It is one piece: each step acts on what the steps before it left, on one outbox.
func testClaimLeaseAck(b box) {
	t := b.t
	b.mustCreate(1, 2, 3, 4, 5)
	subs := []string{"a", "b"}
	b.fanOut(subs, 3, 3, "limit 3")
	b.fanOut(subs, 10, 2, "the 2 left")
	b.fanOut(subs, 10, 0, "each event is fanned out once")

	ds := b.claim("a", "one", hour(), 3)
	aTwo := b.claimSeqs("a", "two", hour(), 10)
	if got := b.claimSeqs("a", "three", hour(), 10); len(got) != 0 {
		t.Errorf("Claim(a) with every delivery leased = %v, want none", got)
	}
	events := b.claim("b", "three", hour(), 10) // subscribers are leased apart
	if diff := cmp.Diff([]int64{1, 2, 3, 4, 5}, idsOf(events)); diff != "" {
		t.Fatalf("Claim(b): plant ids mismatch: subscribers are leased apart (-want +got):\n%s", diff)
	}
	seq := func(i int) int64 { return events[i].Seq }
	if diff := cmp.Diff(events[:3], ds); diff != "" {
		t.Errorf("Claim(a, one, 3): the first three events, as b's (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int64{seq(3), seq(4)}, aTwo); diff != "" {
		t.Errorf("Claim(a, two) while one holds the first three: seqs mismatch (-want +got):\n%s", diff)
	}

	kept := b.extend("a", "one", []int64{seq(0), seq(1), seq(2), seq(3)}, hour().Add(time.Hour))
	if diff := cmp.Diff([]int64{seq(0), seq(1), seq(2)}, kept); diff != "" {
		t.Errorf("Extend() kept mismatch: only what one holds (-want +got):\n%s", diff)
	}

	// A failed attempt: seq 0 is due again at once with its attempts, seq
	// 1 only in an hour; a retry by an owner that does not hold the
	// delivery changes nothing.
	b.retry("a", "one",
		plantstore.Retry{Seq: seq(0), Attempts: 1, Due: past()},
		plantstore.Retry{Seq: seq(1), Attempts: 2, Due: hour()})
	b.retry("a", "two", plantstore.Retry{Seq: seq(2), Attempts: 9, Due: time.Now()})
	got := b.claim("a", "two", hour(), 10)
	if diff := cmp.Diff([]plantstore.Delivery{{Event: events[0].Event, Attempts: 1}}, got); diff != "" {
		t.Errorf("Claim(a, two) after the retries mismatch (-want +got):\n%s", diff)
	}

	// A lease that has expired lets another owner claim, and the first
	// owner's Extend then finds it gone.
	b.extend("a", "two", []int64{seq(0)}, past())
	if diff := cmp.Diff([]int64{seq(0)}, b.claimSeqs("a", "four", hour(), 10)); diff != "" {
		t.Errorf("Claim(a, four) after two's lease expired mismatch (-want +got):\n%s", diff)
	}
	if kept := b.extend("a", "two", []int64{seq(0)}, hour()); len(kept) != 0 {
		t.Errorf("Extend() by the owner whose lease expired = %v, want none kept", kept)
	}

	// Acks end deliveries, whoever holds them; an event goes once both
	// subscribers are done with it.
	all := []int64{seq(0), seq(1), seq(2), seq(3), seq(4)}
	b.ack("a", all...)
	b.ack("b", all[:4]...)
	b.wantDepth(1, "b's last delivery left")
	for range 2 { // acking twice is not an error
		b.ack("b", all[4:]...)
	}
	b.wantDepth(0, "every delivery ended")
	if got := b.claimSeqs("a", "five", past(), 10); len(got) != 0 {
		t.Errorf("Claim(a) after every delivery ended = %v, want none", got)
	}

	// Seq only grows, and a new event is fanned out although every
	// earlier one is gone.
	b.mustCreate(9)
	b.fanOut(subs, 10, 1, "after the outbox emptied")
	got = b.claim("b", "one", hour(), 10)
	if len(got) != 1 || got[0].Seq <= seq(4) || got[0].Plant.ID != 9 {
		t.Errorf("Claim(b) = %+v, want plant 9 with a seq above %d", got, seq(4))
	}
}

func idsOf(ds []plantstore.Delivery) []int64 {
	ids := []int64{}
	for _, d := range ds {
		ids = append(ids, d.Plant.ID)
	}
	return ids
}

// testLeaseExpiry checks that an owner keeps a delivery whose lease
// expired until another owner claims it, and that a lease ends when its
// time passes on the outbox's clock: the test polls, with a deadline,
// until another owner can claim it.
func testLeaseExpiry(b box) {
	t := b.t
	b.mustCreate(1, 2)
	b.fanOut([]string{"a"}, 10, 2, "two events")
	first := b.claimSeqs("a", "one", hour(), 1)
	if len(first) != 1 {
		t.Fatalf("Claim(a, one, 1) = %v, want one delivery", first)
	}
	if kept := b.extend("a", "one", first, past()); !cmp.Equal(kept, first) {
		t.Errorf("Extend() into the past by the owner = %v, want %v kept", kept, first)
	}
	if kept := b.extend("a", "one", first, hour()); !cmp.Equal(kept, first) {
		t.Errorf("Extend() of an expired lease nobody else claimed = %v, want %v kept", kept, first)
	}
	if got := b.claimSeqs("a", "two", hour(), 1); len(got) != 1 || got[0] == first[0] {
		t.Fatalf("Claim(a, two, 1) = %v, want the other delivery: %v is leased again", got, first)
	}

	const lease = 200 * time.Millisecond
	b.mustCreate(3)
	b.fanOut([]string{"a"}, 10, 1, "one more event")
	until := time.Now().Add(lease)
	leased := b.claimSeqs("a", "three", until, 10)
	if len(leased) != 1 {
		t.Fatalf("Claim(a, three) = %v, want the new delivery", leased)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := b.claimSeqs("a", "four", hour(), 10)
		if len(got) > 0 {
			if time.Now().Before(until) {
				t.Fatalf("Claim(a, four) = %v before three's lease ended", got)
			}
			if !cmp.Equal(got, leased) {
				t.Fatalf("Claim(a, four) after three's lease ended = %v, want %v", got, leased)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no other owner could claim %v 30 s after its lease of %v ended", leased, lease)
		}
		time.Sleep(max(time.Until(until), 5*time.Millisecond))
	}
	if kept := b.extend("a", "three", leased, hour()); len(kept) != 0 {
		t.Errorf("Extend() by the owner whose lease expired and was claimed = %v, want none kept", kept)
	}
}

// testRelease checks that a retry releases a delivery to other owners
// once due, with its attempts, even while the lease it had runs, as a
// Dispatcher that stops releases what it holds; and that a retry by an
// owner that no longer holds a delivery leaves it as it is.
func testRelease(b box) {
	t := b.t
	b.mustCreate(1, 2)
	b.fanOut([]string{"a"}, 10, 2, "two events")
	ds := b.claim("a", "one", hour(), 10)
	if len(ds) != 2 {
		t.Fatalf("Claim(a, one) = %+v, want two", ds)
	}
	seq0, seq1 := ds[0].Seq, ds[1].Seq

	b.retry("a", "one", plantstore.Retry{Seq: seq0, Attempts: 3, Due: past()})
	got := b.claim("a", "four", hour(), 10)
	if diff := cmp.Diff([]plantstore.Delivery{{Event: ds[0].Event, Attempts: 3}}, got); diff != "" {
		t.Errorf("Claim() after a retry due already mismatch (-want +got):\n%s", diff)
	}
	if kept := b.extend("a", "one", []int64{seq0, seq1}, hour()); !cmp.Equal(kept, []int64{seq1}) {
		t.Errorf("Extend() = %v, want only %d: another owner holds %d now", kept, seq1, seq0)
	}
	b.retry("a", "one", plantstore.Retry{Seq: seq0, Attempts: 7, Due: past()})
	if got := b.claimSeqs("a", "five", hour(), 10); len(got) != 0 {
		t.Errorf("Claim() after a retry by an owner that no longer holds the delivery = %v, want none", got)
	}

	// Released due now, as a Dispatcher hands back what it holds when it
	// stops: another owner claims it at once, its attempts unchanged.
	b.retry("a", "one", plantstore.Retry{Seq: seq1, Attempts: 0, Due: time.Now()})
	got = b.claim("a", "five", hour(), 10)
	if diff := cmp.Diff([]plantstore.Delivery{{Event: ds[1].Event}}, got); diff != "" {
		t.Errorf("Claim() after a release mismatch (-want +got):\n%s", diff)
	}

	// Due in an hour: not claimable before then, by anyone.
	b.retry("a", "five", plantstore.Retry{Seq: seq1, Attempts: 1, Due: hour()})
	if got := b.claimSeqs("a", "six", past(), 10); len(got) != 0 {
		t.Errorf("Claim() of a delivery due in an hour = %v, want none", got)
	}
	b.wantDepth(2, "no delivery ended")
}

// testOutboxCancelled calls every method with a cancelled context: each
// returns the context's error, and the delivery is left as it was.
func testOutboxCancelled(b box) {
	t := b.t
	b.mustCreate(1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := b.o.FanOut(ctx, []string{"a"}, 10); !errors.Is(err, context.Canceled) {
		t.Errorf("FanOut() with a cancelled context = %v, want context.Canceled", err)
	}
	b.fanOut([]string{"a"}, 10, 1, "the cancelled FanOut fanned out nothing")
	seq := b.claimSeqs("a", "one", past(), 10)
	if len(seq) != 1 {
		t.Fatalf("Claim(a, one) = %v, want one delivery", seq)
	}
	if _, err := b.o.Claim(ctx, "a", "two", hour(), 10); !errors.Is(err, context.Canceled) {
		t.Errorf("Claim() with a cancelled context = %v, want context.Canceled", err)
	}
	if _, err := b.o.Extend(ctx, "a", "one", seq, hour()); !errors.Is(err, context.Canceled) {
		t.Errorf("Extend() with a cancelled context = %v, want context.Canceled", err)
	}
	if err := b.o.Retry(ctx, "a", "one", []plantstore.Retry{{Seq: seq[0], Attempts: 1, Due: hour()}}); !errors.Is(err, context.Canceled) {
		t.Errorf("Retry() with a cancelled context = %v, want context.Canceled", err)
	}
	if err := b.o.Ack(ctx, "a", seq); !errors.Is(err, context.Canceled) {
		t.Errorf("Ack() with a cancelled context = %v, want context.Canceled", err)
	}
	if _, err := b.o.Depth(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Depth() with a cancelled context = %v, want context.Canceled", err)
	}
	ds := b.claim("a", "three", hour(), 10)
	if len(ds) != 1 || ds[0].Seq != seq[0] || ds[0].Attempts != 0 {
		t.Errorf("Claim() after the cancelled calls = %+v, want seq %d, unchanged", ds, seq[0])
	}
}

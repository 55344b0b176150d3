package storagetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

// A CreateFunc creates the plant p the way the users of an outbox do, so
// that an event of it is recorded when, and only when, the create
// succeeds: the Create of a [plantstore.Storage] that implements the
// outbox, or, for an outbox fed by [plantstore.OnCreate], the Create of a
// [plantstore.PlantStore] that feeds it. It returns the create's error.
type CreateFunc func(ctx context.Context, p plantstore.Plant) error

// RunOutbox runs the Outbox contract as subtests of t. newOutbox returns,
// for each subtest, an empty outbox and the function that creates plants
// whose events it records; it registers its own cleanup with t.Cleanup.
// [Run] calls it for a storage that implements [plantstore.Outbox].
func RunOutbox(t *testing.T, newOutbox func(t *testing.T) (plantstore.Outbox, CreateFunc)) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(b box)
	}{
		{"RecordsEvents", testRecordsEvents},
		{"FanOutOncePerSubscriber", testFanOut},
		{"FanOutOldestFirst", testFanOutOrder},
		{"ConcurrentFanOuts", testConcurrentFanOuts},
		{"ClaimLeaseAck", testClaimLeaseAck},
		{"LeaseExpiry", testLeaseExpiry},
		{"RetryAndRelease", testRelease},
		{"AckManyInOneCall", testAckMany},
		{"ConcurrentOwners", testConcurrentOwners},
		{"CancelledContext", testOutboxCancelled},
		{"Runs", testRuns},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, create := newOutbox(t)
			tt.fn(box{t: t, o: o, create: create})
		})
	}
}

// runStorageOutbox runs the Outbox contract on the storage's own outbox,
// or skips t when the storage does not implement it or records no events,
// which it asks probe, an empty storage.
func runStorageOutbox(t *testing.T, probe plantstore.Storage, newStorage func(t *testing.T) plantstore.Storage) {
	s := probe
	o, ok := s.(plantstore.Outbox)
	if !ok {
		t.Skip("the storage does not implement plantstore.Outbox: not checked")
	}
	if !recordsEvents(t, s, o) {
		t.Skip("the storage implements plantstore.Outbox but recorded no event of a Create (its outbox is off): checked that it stays empty, the rest not checked")
	}
	RunOutbox(t, func(t *testing.T) (plantstore.Outbox, CreateFunc) {
		s := newStorage(t)
		return s.(plantstore.Outbox), s.Create
	})
}

// recordsEvents creates a plant in s and reports whether its outbox o
// recorded the event. When it did not, it checks that o is consistently
// empty; when it recorded more than one, it fails t.
func recordsEvents(t *testing.T, s plantstore.Storage, o plantstore.Outbox) bool {
	t.Helper()
	ctx := context.Background()
	mustCreate(t, s, plantstore.Plant{ID: 1, Name: "one"})
	n, err := o.Depth(ctx)
	switch {
	case err != nil:
		t.Fatalf("Depth() = %v", err)
	case n == 1:
		return true
	case n != 0:
		t.Fatalf("Depth() after one Create = %d, want 1 (or 0 from an outbox that is off)", n)
	}
	if n, err := o.FanOut(ctx, []string{"a"}, 10); err != nil || n != 0 {
		t.Errorf("FanOut() of an outbox whose Depth is 0 = %d, %v, want 0, nil", n, err)
	}
	if ds, err := o.Claim(ctx, "a", "one", time.Now().Add(time.Hour), 10); err != nil || len(ds) != 0 {
		t.Errorf("Claim() of an outbox whose Depth is 0 = %+v, %v, want none", ds, err)
	}
	return false
}

// A box is an outbox under test, with the subtest's t and the function
// that records its events.
type box struct {
	t      *testing.T
	o      plantstore.Outbox
	create CreateFunc
}

// hour is a lease or due time that does not pass during a test.
func hour() time.Time { return time.Now().Add(time.Hour) }

// past is a lease or due time that has passed.
func past() time.Time { return time.Now().Add(-time.Second) }

// plant is the plant the outbox tests create under id.
func plant(id int64) plantstore.Plant {
	return plantstore.Plant{ID: id, Name: fmt.Sprint("p", id)}
}

// mustCreate creates the plants of ids, in order.
func (b box) mustCreate(ids ...int64) {
	b.t.Helper()
	for _, id := range ids {
		if err := b.create(context.Background(), plant(id)); err != nil {
			b.t.Fatalf("create(%d) = %v", id, err)
		}
	}
}

// fanOut fans out to subs and checks how many events it fanned out.
func (b box) fanOut(subs []string, limit, want int, why string) {
	b.t.Helper()
	if n, err := b.o.FanOut(context.Background(), subs, limit); err != nil || n != want {
		b.t.Fatalf("FanOut(%q, %d) = %d, %v, want %d: %s", subs, limit, n, err, want, why)
	}
}

// claim claims for owner and checks that the deliveries come in
// ascending Seq order.
func (b box) claim(sub, owner string, until time.Time, limit int) []plantstore.Delivery {
	b.t.Helper()
	ds, err := b.o.Claim(context.Background(), sub, owner, until, limit)
	if err != nil {
		b.t.Fatalf("Claim(%s, %s) = %v", sub, owner, err)
	}
	if len(ds) > limit {
		b.t.Errorf("Claim(%s, %s, limit %d) returned %d deliveries", sub, owner, limit, len(ds))
	}
	for i := 1; i < len(ds); i++ {
		if ds[i].Seq <= ds[i-1].Seq {
			b.t.Errorf("Claim(%s, %s) seqs %v, want ascending", sub, owner, seqsOf(ds))
			break
		}
	}
	return ds
}

// claimSeqs claims for owner and returns the seqs claimed.
func (b box) claimSeqs(sub, owner string, until time.Time, limit int) []int64 {
	b.t.Helper()
	return seqsOf(b.claim(sub, owner, until, limit))
}

// claimIDs claims for owner and returns the plant ids claimed.
func (b box) claimIDs(sub, owner string, until time.Time, limit int) []int64 {
	b.t.Helper()
	ids := []int64{}
	for _, d := range b.claim(sub, owner, until, limit) {
		ids = append(ids, d.Plant.ID)
	}
	return ids
}

func seqsOf(ds []plantstore.Delivery) []int64 {
	seqs := []int64{}
	for _, d := range ds {
		seqs = append(seqs, d.Seq)
	}
	return seqs
}

// extend extends owner's leases and returns the seqs kept.
func (b box) extend(sub, owner string, seqs []int64, until time.Time) []int64 {
	b.t.Helper()
	kept, err := b.o.Extend(context.Background(), sub, owner, seqs, until)
	if err != nil {
		b.t.Fatalf("Extend(%s, %s, %v) = %v", sub, owner, seqs, err)
	}
	return kept
}

func (b box) retry(sub, owner string, retries ...plantstore.Retry) {
	b.t.Helper()
	if err := b.o.Retry(context.Background(), sub, owner, retries); err != nil {
		b.t.Fatalf("Retry(%s, %s, %+v) = %v", sub, owner, retries, err)
	}
}

func (b box) ack(sub string, seqs ...int64) {
	b.t.Helper()
	if err := b.o.Ack(context.Background(), sub, seqs); err != nil {
		b.t.Fatalf("Ack(%s, %v) = %v", sub, seqs, err)
	}
}

func (b box) wantDepth(want int, why string) {
	b.t.Helper()
	if n, err := b.o.Depth(context.Background()); err != nil || n != want {
		b.t.Errorf("Depth() = %d, %v, want %d: %s", n, err, want, why)
	}
}

// testRecordsEvents checks that each successful create records one event,
// with its plant and time, in the order of the creates, and that failed
// creates record none.
func testRecordsEvents(b box) {
	t := b.t
	ctx := context.Background()
	before := time.Now().Add(-time.Second)
	plants := []plantstore.Plant{
		{ID: 3, Name: "Fern"},
		{ID: 1, Name: "Aloe", Tag: "succulent", HasTag: true},
		{ID: 2, Name: "Ivy", HasTag: true},
	}
	for _, p := range plants {
		if err := b.create(ctx, p); err != nil {
			t.Fatalf("create(%+v) = %v", p, err)
		}
	}
	if err := b.create(ctx, plantstore.Plant{ID: 1, Name: "taken"}); !errors.Is(err, plantstore.ErrConflict) {
		t.Fatalf("create of a taken id = %v, want ErrConflict", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := b.create(cancelled, plantstore.Plant{ID: 4, Name: "cancelled"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("create with a cancelled context = %v, want context.Canceled", err)
	}
	b.wantDepth(len(plants), "one event per create that succeeded, none fanned out yet")
	b.fanOut([]string{"a"}, 10, len(plants), "one event per create that succeeded")
	ds := b.claim("a", "one", hour(), 10)
	var got []plantstore.Plant
	for i, d := range ds {
		got = append(got, d.Plant)
		if i > 0 && d.Seq <= ds[i-1].Seq {
			t.Errorf("events out of order: seq %d after %d", d.Seq, ds[i-1].Seq)
		}
		if d.Time.Before(before) || d.Time.After(time.Now().Add(time.Second)) {
			t.Errorf("event %d time %v is not around now", d.Seq, d.Time)
		}
		if d.Attempts != 0 {
			t.Errorf("event %d claimed for the first time with %d attempts, want 0", d.Seq, d.Attempts)
		}
	}
	if diff := cmp.Diff(plants, got); diff != "" {
		t.Fatalf("events mismatch: one per created plant, none for the failed creates (-want +got):\n%s", diff)
	}
	b.wantDepth(len(plants), "claimed, not ended")
}

// testFanOut checks FanOut's limit and count, that each event is fanned
// out once, oldest first, with one delivery per subscriber however often
// the subscriber is named, and that Depth counts events fanned out or
// not.
func testFanOut(b box) {
	b.mustCreate(1, 2, 3, 4, 5, 6)
	b.wantDepth(6, "nothing fanned out yet")
	b.fanOut([]string{"a", "b"}, 0, 0, "limit 0")
	b.fanOut([]string{"a", "b", "a"}, 4, 4, "events are counted, not deliveries")
	b.wantDepth(6, "fanned out or not, no event has ended")
	if diff := cmp.Diff([]int64{1, 2, 3, 4}, b.claimIDs("a", "one", hour(), 10)); diff != "" {
		b.t.Errorf("Claim(a) after FanOut(limit 4): the oldest four, once each (-want +got):\n%s", diff)
	}
	b.fanOut([]string{"a", "b"}, 10, 2, "the two left")
	b.fanOut([]string{"a", "b"}, 10, 0, "each event is fanned out once")
	tests := []struct {
		name  string
		sub   string
		owner string
		want  []int64
	}{
		{"the rest of a's, leased apart", "a", "two", []int64{5, 6}},
		{"nothing left unleased", "a", "three", []int64{}},
		{"b's own deliveries", "b", "two", []int64{1, 2, 3, 4, 5, 6}},
		{"a subscriber nobody fanned out to", "c", "two", []int64{}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, b.claimIDs(tt.sub, tt.owner, hour(), 10)); diff != "" {
			b.t.Errorf("%s: Claim(%s, %s) plant ids mismatch (-want +got):\n%s", tt.name, tt.sub, tt.owner, diff)
		}
	}
	if kept := b.extend("a", "three", []int64{1, 2, 3}, hour()); len(kept) != 0 {
		b.t.Errorf("Extend() by an owner that holds nothing = %v, want none kept", kept)
	}
}

// testFanOutOrder fans out events created one after the other one at a
// time, and checks that they come oldest first, and that Seq only grows,
// so that an event created once the outbox emptied is fanned out too.
func testFanOutOrder(b box) {
	b.mustCreate(5, 3, 4, 1, 2)
	var seqs []int64
	for _, id := range []int64{5, 3, 4, 1, 2} {
		b.fanOut([]string{"a"}, 1, 1, "one event at a time")
		ds := b.claim("a", "one", hour(), 10)
		if len(ds) != 1 || ds[0].Plant.ID != id {
			b.t.Fatalf("Claim() after fanning out one more event = %+v, want plant %d, the oldest left", ds, id)
		}
		if len(seqs) > 0 && ds[0].Seq <= seqs[len(seqs)-1] {
			b.t.Errorf("seq %d fanned out after %d", ds[0].Seq, seqs[len(seqs)-1])
		}
		seqs = append(seqs, ds[0].Seq)
	}
	b.fanOut([]string{"a"}, 1, 0, "every event fanned out")
	b.ack("a", seqs...)
	b.wantDepth(0, "every delivery ended")
	b.mustCreate(9)
	b.fanOut([]string{"a"}, 10, 1, "an event created after the outbox emptied")
	ds := b.claim("a", "one", hour(), 10)
	if len(ds) != 1 || ds[0].Plant.ID != 9 || ds[0].Seq <= seqs[len(seqs)-1] {
		b.t.Errorf("Claim() = %+v, want plant 9 with a seq above %d", ds, seqs[len(seqs)-1])
	}
}

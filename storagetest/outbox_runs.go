package storagetest

import (
	"context"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

// testRuns checks the records of runs of an outbox that keeps them
// ([plantstore.OutboxRuns]): TakeBack ends the leases of an instance's
// other runs whose records expired, on every subscriber, and never those
// of a live run of the same instance, of another instance's expired runs,
// or of the caller; a run taken back can no longer extend its leases and
// finds its record gone; EndRun hands back what a run holds. Records are
// given times to live that have already passed rather than waited for.
func testRuns(b box) {
	t := b.t
	runs, ok := b.o.(plantstore.OutboxRuns)
	if !ok {
		t.Skip("the outbox does not implement plantstore.OutboxRuns: not checked")
	}
	ctx := context.Background()
	beat := func(instance, owner string, ttl time.Duration) bool {
		t.Helper()
		renewed, err := runs.Beat(ctx, instance, owner, ttl)
		if err != nil {
			t.Fatalf("Beat(%s, %s) = %v", instance, owner, err)
		}
		return renewed
	}
	b.mustCreate(1, 2, 3, 4)
	b.fanOut([]string{"a", "b"}, 10, 4, "four events")
	const inst, gone, twin, restarted, other = "host 10.0.0.1:8080", "gone run", "twin run", "restarted run", "other run"
	if beat(inst, gone, time.Hour) {
		t.Errorf("first Beat(%s) renewed a record, want a new one", gone)
	}
	if !beat(inst, gone, -time.Second) {
		t.Errorf("second Beat(%s) found no record", gone)
	}
	beat(inst, twin, time.Hour)
	beat(inst, restarted, time.Hour)
	beat("host 10.0.0.2:8080", other, -time.Second)
	goneSeqs := append(b.claimSeqs("a", gone, hour(), 2), b.claimSeqs("b", gone, hour(), 1)...)
	twinSeqs := b.claimSeqs("a", twin, hour(), 2)
	otherSeqs := b.claimSeqs("b", other, hour(), 2)
	if len(goneSeqs) != 3 || len(twinSeqs) != 2 || len(otherSeqs) != 2 {
		t.Fatalf("claimed %v, %v and %v, want 3, 2 and 2", goneSeqs, twinSeqs, otherSeqs)
	}

	n, others, err := runs.TakeBack(ctx, inst, restarted)
	if err != nil || n != 3 || others != 1 {
		t.Errorf("TakeBack() = %d, %d, %v, want the 3 leases of the run whose record expired, and 1 other run, the live twin", n, others, err)
	}
	got := append(b.claimSeqs("a", restarted, hour(), 10), b.claimSeqs("b", restarted, hour(), 10)...)
	if diff := cmp.Diff(append(goneSeqs, 4), got); diff != "" {
		t.Errorf("after TakeBack, the restarted run claims (-taken back and the one left +claimed):\n%s", diff)
	}
	if kept := b.extend("a", gone, goneSeqs[:2], hour()); len(kept) != 0 {
		t.Errorf("Extend() by the run taken back = %v, want none kept", kept)
	}
	if beat(inst, gone, time.Hour) {
		t.Errorf("Beat() of the run taken back renewed a record, want it gone")
	}
	if kept := b.extend("a", twin, twinSeqs, hour()); !cmp.Equal(kept, twinSeqs) {
		t.Errorf("Extend() by the live twin = %v, want %v kept", kept, twinSeqs)
	}
	if kept := b.extend("b", other, otherSeqs, hour()); !cmp.Equal(kept, otherSeqs) {
		t.Errorf("Extend() by another instance's run whose record expired = %v, want %v kept: its leases expire", kept, otherSeqs)
	}
	if n, _, err := runs.TakeBack(ctx, inst, restarted); err != nil || n != 0 {
		t.Errorf("TakeBack() again = %d, %v, want 0", n, err)
	}

	if n, err := runs.EndRun(ctx, twin); err != nil || n != 2 {
		t.Fatalf("EndRun() = %d, %v, want the twin's 2 leases", n, err)
	}
	if got := b.claimSeqs("a", restarted, hour(), 10); !cmp.Equal(got, twinSeqs) {
		t.Errorf("after EndRun, another run claims %v, want %v", got, twinSeqs)
	}
	if beat(inst, twin, time.Hour) {
		t.Errorf("Beat() after EndRun renewed a record, want it gone")
	}
}

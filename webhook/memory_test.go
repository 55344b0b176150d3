package webhook_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/webhook"
)

// claimIDs claims for owner and returns the plant ids claimed.
func claimIDs(t *testing.T, o plantstore.Outbox, sub, owner string, until time.Time, limit int) []int64 {
	t.Helper()
	ds, err := o.Claim(context.Background(), sub, owner, until, limit)
	if err != nil {
		t.Fatalf("Claim(%s, %s) = %v", sub, owner, err)
	}
	ids := []int64{}
	for _, d := range ds {
		ids = append(ids, d.Plant.ID)
	}
	return ids
}

func TestMemoryOutbox(t *testing.T) {
	t.Parallel()
	start := time.Now()
	ctx := context.Background()
	mo := webhook.NewMemoryOutbox()
	for id := range int64(6) {
		mo.Add(plantstore.Plant{ID: id, Name: "p"})
	}
	if n, err := mo.FanOut(ctx, []string{"a", "b", "a"}, 4); err != nil || n != 4 {
		t.Fatalf("FanOut(limit 4) = %d, %v, want 4", n, err)
	}
	if got := mo.Len(); got != 6 {
		t.Errorf("Len() = %d, want 6: fanned out or not, no event has ended", got)
	}
	hour := time.Now().Add(time.Hour)
	ds, err := mo.Claim(ctx, "a", "one", hour, 2)
	if err != nil || len(ds) != 2 {
		t.Fatalf("Claim(a, one, 2) = %v, %v, want two", ds, err)
	}
	if ds[0].Seq <= start.UnixNano() {
		t.Errorf("first Seq = %d, want above the clock at start, %d, so that a restart never reuses one", ds[0].Seq, start.UnixNano())
	}
	if ds[1].Seq <= ds[0].Seq || ds[0].Time.Before(start) {
		t.Errorf("Claim() = %+v, want ascending Seqs and times after the start", ds)
	}
	tests := []struct {
		name  string
		sub   string
		owner string
		want  []int64
	}{
		{"the rest of a's, leased apart", "a", "two", []int64{2, 3}},
		{"nothing left unleased", "a", "three", []int64{}},
		{"b's own deliveries", "b", "two", []int64{0, 1, 2, 3}},
		{"a subscriber nobody fanned out to", "c", "two", []int64{}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, claimIDs(t, mo, tt.sub, tt.owner, hour, 10)); diff != "" {
			t.Errorf("%s: Claim(%s, %s) plant ids mismatch (-want +got):\n%s", tt.name, tt.sub, tt.owner, diff)
		}
	}

	seq0, seq1 := ds[0].Seq, ds[1].Seq
	if kept, err := mo.Extend(ctx, "a", "two", []int64{seq0, seq1}, hour); err != nil || len(kept) != 0 {
		t.Errorf("Extend() by an owner that holds nothing = %v, %v, want none kept", kept, err)
	}
	if err := mo.Retry(ctx, "a", "one", []plantstore.Retry{{Seq: seq0, Attempts: 3, Due: time.Now().Add(-time.Second)}}); err != nil {
		t.Fatal(err)
	}
	ds, err = mo.Claim(ctx, "a", "four", hour, 10)
	if err != nil || len(ds) != 1 || ds[0].Seq != seq0 || ds[0].Attempts != 3 {
		t.Errorf("Claim() after a retry = %+v, %v, want plant 0 with 3 attempts", ds, err)
	}
	if kept, err := mo.Extend(ctx, "a", "one", []int64{seq0, seq1}, hour); err != nil || !cmp.Equal(kept, []int64{seq1}) {
		t.Errorf("Extend() = %v, %v, want only %d: another owner holds %d now", kept, err, seq1, seq0)
	}

	if err := mo.Ack(ctx, "a", []int64{seq0, seq1}); err != nil {
		t.Fatal(err)
	}
	if err := mo.Ack(ctx, "b", []int64{seq0}); err != nil {
		t.Fatal(err)
	}
	if err := mo.Ack(ctx, "b", []int64{seq0}); err != nil {
		t.Errorf("Ack() of an ended delivery = %v, want nil", err)
	}
	if n, err := mo.Depth(ctx); err != nil || n != 5 {
		t.Errorf("Depth() = %d, %v, want 5: only plant 0 ended for both subscribers", n, err)
	}
}

func TestMemoryOutboxZeroValue(t *testing.T) {
	t.Parallel()
	var mo webhook.MemoryOutbox
	mo.Add(plantstore.Plant{ID: 7, Name: "Fern"})
	if _, err := mo.FanOut(context.Background(), []string{"a"}, 10); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{7}, claimIDs(t, &mo, "a", "one", time.Now().Add(time.Hour), 10)); diff != "" {
		t.Errorf("Claim() plant ids mismatch (-want +got):\n%s", diff)
	}
}

func TestMemoryOutboxCancelledContext(t *testing.T) {
	t.Parallel()
	mo := webhook.NewMemoryOutbox()
	mo.Add(plantstore.Plant{ID: 1, Name: "Fern"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := mo.FanOut(ctx, []string{"a"}, 10); err == nil {
		t.Errorf("FanOut() with a cancelled context = nil, want an error")
	}
	if _, err := mo.Claim(ctx, "a", "one", time.Now(), 10); err == nil {
		t.Errorf("Claim() with a cancelled context = nil, want an error")
	}
	if err := mo.Ack(ctx, "a", []int64{1}); err == nil {
		t.Errorf("Ack() with a cancelled context = nil, want an error")
	}
}

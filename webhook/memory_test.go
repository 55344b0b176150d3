package webhook_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/memstore"
	"github.com/plantstore/plantstore/storagetest"
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

// TestMemoryOutbox runs storagetest's Outbox contract on a MemoryOutbox
// fed as the package doc shows, by plantstore.OnCreate, and on its zero
// value.
func TestMemoryOutbox(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		new  func() *webhook.MemoryOutbox
	}{
		{"NewMemoryOutbox", func() *webhook.MemoryOutbox { return webhook.NewMemoryOutbox() }},
		{"ZeroValue", func() *webhook.MemoryOutbox { return new(webhook.MemoryOutbox) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			storagetest.RunOutbox(t, func(t *testing.T) (plantstore.Outbox, storagetest.CreateFunc) {
				mo := tt.new()
				ps := plantstore.New(memstore.New(), plantstore.OnCreate(mo.Add))
				return mo, func(ctx context.Context, p plantstore.Plant) error {
					_, err := ps.Create(ctx, plantstore.NewPlant(p))
					return err
				}
			})
		})
	}
}

// TestMemoryOutboxSeqsAndLen checks what is the MemoryOutbox's own: Seqs
// start above the clock, so that a restarted process does not reuse one,
// and Len counts the events not ended, fanned out or not.
func TestMemoryOutboxSeqsAndLen(t *testing.T) {
	t.Parallel()
	start := time.Now()
	ctx := context.Background()
	mo := webhook.NewMemoryOutbox()
	for id := range int64(6) {
		mo.Add(plantstore.Plant{ID: id, Name: "p"})
	}
	if n, err := mo.FanOut(ctx, []string{"a", "b"}, 4); err != nil || n != 4 {
		t.Fatalf("FanOut(limit 4) = %d, %v, want 4", n, err)
	}
	if got := mo.Len(); got != 6 {
		t.Errorf("Len() = %d, want 6: fanned out or not, no event has ended", got)
	}
	ds, err := mo.Claim(ctx, "a", "one", time.Now().Add(time.Hour), 2)
	if err != nil || len(ds) != 2 {
		t.Fatalf("Claim(a, one, 2) = %v, %v, want two", ds, err)
	}
	if ds[0].Seq <= start.UnixNano() {
		t.Errorf("first Seq = %d, want above the clock at start, %d, so that a restart never reuses one", ds[0].Seq, start.UnixNano())
	}
	if ds[0].Time.Before(start) {
		t.Errorf("Claim() = %+v, want times after the start", ds)
	}
	for _, sub := range []string{"a", "b"} {
		if err := mo.Ack(ctx, sub, []int64{ds[0].Seq}); err != nil {
			t.Fatal(err)
		}
	}
	if got := mo.Len(); got != 5 {
		t.Errorf("Len() = %d, want 5: only plant 0 ended for both subscribers", got)
	}
	if diff := cmp.Diff([]int64{2, 3}, claimIDs(t, mo, "a", "two", time.Now().Add(time.Hour), 10)); diff != "" {
		t.Errorf("Claim(a, two) plant ids mismatch (-want +got):\n%s", diff)
	}
}

package webhook_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/webhook"
)

func pendingIDs(t *testing.T, o plantstore.Outbox, after int64, limit int) []int64 {
	t.Helper()
	evs, err := o.PendingEvents(context.Background(), after, limit)
	if err != nil {
		t.Fatalf("PendingEvents(%d, %d) = %v", after, limit, err)
	}
	ids := []int64{}
	for _, ev := range evs {
		ids = append(ids, ev.Plant.ID)
	}
	return ids
}

func TestMemoryOutbox(t *testing.T) {
	start := time.Now()
	mo := webhook.NewMemoryOutbox()
	for id := range int64(200) {
		mo.Add(plantstore.Plant{ID: id, Name: "p"})
	}
	evs, err := mo.PendingEvents(context.Background(), 0, 1000)
	if err != nil {
		t.Fatalf("PendingEvents() = %v", err)
	}
	if len(evs) != 200 {
		t.Fatalf("PendingEvents() returned %d events, want 200", len(evs))
	}
	if evs[0].Seq <= start.UnixNano() {
		t.Errorf("first Seq = %d, want above the clock at start, %d, so that a restart never reuses one", evs[0].Seq, start.UnixNano())
	}
	for i, ev := range evs {
		if i > 0 && ev.Seq <= evs[i-1].Seq {
			t.Fatalf("Seq %d follows %d, want ascending", ev.Seq, evs[i-1].Seq)
		}
		if ev.Time.Before(start) {
			t.Errorf("event %d Time = %v, before the test started", i, ev.Time)
		}
	}

	// Delete every odd plant, in descending order, then the first ten.
	ctx := context.Background()
	for i := len(evs) - 1; i >= 0; i-- {
		if i%2 == 1 || i < 10 {
			if err := mo.DeleteEvent(ctx, evs[i].Seq); err != nil {
				t.Fatalf("DeleteEvent() = %v", err)
			}
		}
	}
	if err := mo.DeleteEvent(ctx, evs[0].Seq); err != nil {
		t.Errorf("DeleteEvent() of a deleted event = %v, want nil", err)
	}
	if got, want := mo.Len(), 95; got != want {
		t.Errorf("Len() = %d, want %d", got, want)
	}
	tests := []struct {
		name  string
		after int64
		limit int
		want  []int64
	}{
		{"from the start", 0, 3, []int64{10, 12, 14}},
		{"after a deleted event", evs[11].Seq, 2, []int64{12, 14}},
		{"after a kept event", evs[12].Seq, 2, []int64{14, 16}},
		{"after the last", evs[199].Seq, 5, []int64{}},
		{"tail", evs[193].Seq, 5, []int64{194, 196, 198}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, pendingIDs(t, mo, tt.after, tt.limit)); diff != "" {
				t.Errorf("PendingEvents() plant ids mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMemoryOutboxZeroValue(t *testing.T) {
	var mo webhook.MemoryOutbox
	mo.Add(plantstore.Plant{ID: 7, Name: "Fern"})
	if diff := cmp.Diff([]int64{7}, pendingIDs(t, &mo, 0, 10)); diff != "" {
		t.Errorf("PendingEvents() plant ids mismatch (-want +got):\n%s", diff)
	}
}

func TestMemoryOutboxCancelledContext(t *testing.T) {
	mo := webhook.NewMemoryOutbox()
	mo.Add(plantstore.Plant{ID: 1, Name: "Fern"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := mo.PendingEvents(ctx, 0, 10); err == nil {
		t.Errorf("PendingEvents() with a cancelled context = nil, want an error")
	}
	if err := mo.DeleteEvent(ctx, 1); err == nil {
		t.Errorf("DeleteEvent() with a cancelled context = nil, want an error")
	}
}

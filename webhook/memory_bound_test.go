package webhook_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/webhook"
)

// TestMemoryOutboxBound checks that a full MemoryOutbox drops its oldest
// pending events, fanned out or not, for every subscriber, keeps the
// event being added, and counts what it dropped.
//
// Most of its length is its table of cases; the checks are one loop.
func TestMemoryOutboxBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hour := time.Now().Add(time.Hour)
	name := strings.Repeat("n", 488) // 488 + 512 counted bytes: 1,000 an event
	tests := []struct {
		name        string
		opts        []webhook.MemoryOption
		fanOutFirst int      // events added and fanned out before the rest
		ackFirst    []int    // of those, the ones acknowledged by both subscribers
		names       []string // the names of the events added after
		wantIDs     []int64  // claimed by each subscriber at the end
		wantDropped uint64
		reason      string
	}{
		{name: "under both bounds", opts: []webhook.MemoryOption{webhook.WithMaxPending(5), webhook.WithMaxPendingBytes(5000)},
			names: []string{name, name, name}, wantIDs: []int64{0, 1, 2}},
		{name: "count", opts: []webhook.MemoryOption{webhook.WithMaxPending(3), webhook.WithMaxPendingBytes(-1)},
			names: []string{"a", "b", "c", "d", "e"}, wantIDs: []int64{2, 3, 4}, wantDropped: 2},
		{name: "bytes", opts: []webhook.MemoryOption{webhook.WithMaxPending(-1), webhook.WithMaxPendingBytes(3000)},
			names: []string{name, name, name, name, name}, wantIDs: []int64{2, 3, 4}, wantDropped: 2},
		{name: "fanned out events are the oldest", opts: []webhook.MemoryOption{webhook.WithMaxPending(3)},
			fanOutFirst: 2, names: []string{"c", "d"}, wantIDs: []int64{1, 2, 3}, wantDropped: 1,
			reason: "event 0, fanned out and claimed, goes before event 2, still waiting"},
		{name: "ended events are not counted", opts: []webhook.MemoryOption{webhook.WithMaxPending(3)},
			fanOutFirst: 3, ackFirst: []int{0, 1}, names: []string{"d", "e", "f"}, wantIDs: []int64{3, 4, 5}, wantDropped: 1,
			reason: "events 0 and 1 ended, so only event 2 must go"},
		{name: "acked out of order", opts: []webhook.MemoryOption{webhook.WithMaxPending(3)},
			fanOutFirst: 3, ackFirst: []int{1}, names: []string{"d", "e"}, wantIDs: []int64{2, 3, 4}, wantDropped: 1,
			reason: "event 0 is the oldest pending; event 1 ended behind it"},
		{name: "one event larger than the bound is kept", opts: []webhook.MemoryOption{webhook.WithMaxPendingBytes(100)},
			names: []string{"a", "b", name}, wantIDs: []int64{2}, wantDropped: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs bytes.Buffer
			mo := webhook.NewMemoryOutbox(append(tt.opts, webhook.WithDropLogger(testkit.NewLogger(&logs, slog.LevelInfo)))...)
			subs := []string{"a", "b"}
			var seqs []int64
			for i := range tt.fanOutFirst {
				mo.Add(plantstore.Plant{ID: int64(i), Name: "early"})
			}
			if _, err := mo.FanOut(ctx, subs, 100); err != nil {
				t.Fatal(err)
			}
			for _, sub := range subs {
				ds, err := mo.Claim(ctx, sub, "one", hour, 100)
				if err != nil {
					t.Fatal(err)
				}
				seqs = seqs[:0]
				for _, d := range ds {
					seqs = append(seqs, d.Seq)
				}
				var acks []int64
				for _, i := range tt.ackFirst {
					acks = append(acks, seqs[i])
				}
				if err := mo.Ack(ctx, sub, acks); err != nil {
					t.Fatal(err)
				}
			}
			for i, n := range tt.names {
				mo.Add(plantstore.Plant{ID: int64(tt.fanOutFirst + i), Name: n})
			}
			if _, err := mo.FanOut(ctx, subs, 100); err != nil {
				t.Fatal(err)
			}
			for _, sub := range subs {
				// A Retry makes the early deliveries, claimed by "one", due again.
				var retries []plantstore.Retry
				for _, seq := range seqs {
					retries = append(retries, plantstore.Retry{Seq: seq, Attempts: 1, Due: time.Now().Add(-time.Second)})
				}
				if err := mo.Retry(ctx, sub, "one", retries); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.wantIDs, claimIDs(t, mo, sub, "two", hour, 100)); diff != "" {
					t.Errorf("Claim(%s) plant ids (-want +got):\n%s%s", sub, diff, tt.reason)
				}
			}
			if got := mo.Dropped(); got != tt.wantDropped {
				t.Errorf("Dropped() = %d, want %d", got, tt.wantDropped)
			}
			if n, err := mo.Depth(ctx); err != nil || n != len(tt.wantIDs) {
				t.Errorf("Depth() = %d, %v, want %d", n, err, len(tt.wantIDs))
			}
			wantLines := 0
			if tt.wantDropped > 0 {
				wantLines = 1
			}
			if got := testkit.Logged(logs.String(), "webhook: memory outbox full: dropped the oldest pending events, undelivered"); got != wantLines {
				t.Errorf("%d lines about drops, want %d: the first drop is logged at once, later ones once a minute:\n%s", got, wantLines, &logs)
			}
		})
	}
}

// BenchmarkMemoryOutboxAddFull measures Add on a full outbox, which drops
// an event on every call: the work of a drop is a constant, whatever the
// number of events kept.
func BenchmarkMemoryOutboxAddFull(b *testing.B) {
	mo := webhook.NewMemoryOutbox(webhook.WithMaxPending(10_000), webhook.WithDropLogger(slog.New(slog.DiscardHandler)))
	ctx := context.Background()
	for id := range int64(10_000) {
		mo.Add(plantstore.Plant{ID: id, Name: "p"})
	}
	if _, err := mo.FanOut(ctx, []string{"a", "b"}, 10_000); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		mo.Add(plantstore.Plant{ID: int64(i), Name: "p"})
	}
}

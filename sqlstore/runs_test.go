package sqlstore

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// beat records run owner of instance for ttl and returns whether its
// record was there.
func beat(t *testing.T, s *Store, instance, owner string, ttl time.Duration) bool {
	t.Helper()
	renewed, err := s.Beat(context.Background(), instance, owner, ttl)
	if err != nil {
		t.Fatalf("Beat(%s, %s) = %v", instance, owner, err)
	}
	return renewed
}

// The records of runs themselves (TakeBack of an instance's expired runs,
// a live run of the same instance and another instance's left alone,
// EndRun) are checked by storagetest.Run's Outbox/Runs subtest, in
// TestStorage. The tests here check what is this package's own.

// TestOutboxRunsForgetsOldRecords checks that TakeBack drops the record
// of any instance's run that expired over an hour ago, leaving its leases
// to expire, and keeps the others; and that Beat, TakeBack and EndRun
// refuse an empty instance or owner.
func TestOutboxRunsForgetsOldRecords(t *testing.T) {
	t.Parallel()
	eachBackend(t, func(t *testing.T, be backend) {
		s := be.open(t, WithOutbox())
		ctx := context.Background()
		mustCreate(t, s, "p", 1)
		if _, err := s.FanOut(ctx, []string{"a"}, 10); err != nil {
			t.Fatal(err)
		}
		beat(t, s, "gone", "gone run", -2*time.Hour)
		beat(t, s, "recent", "recent run", -time.Minute)
		seqs, _ := claim(t, s, "a", "gone run", time.Now().Add(time.Hour), 1)
		if _, _, err := s.TakeBack(ctx, "mine", "mine run"); err != nil {
			t.Fatal(err)
		}
		owners, err := column(ctx, s.db, `SELECT owner FROM webhook_runs ORDER BY owner`)
		if diff := cmp.Diff([]string{"recent run"}, owners); err != nil || diff != "" {
			t.Errorf("records left (%v) (-want +got):\n%s", err, diff)
		}
		if n, _, err := s.TakeBack(ctx, "gone", "gone restarted"); err != nil || n != 0 {
			t.Errorf("TakeBack() of an instance whose record was dropped = %d, %v, want 0", n, err)
		}
		if kept, err := s.Extend(ctx, "a", "gone run", seqs, time.Now().Add(time.Hour)); err != nil || !cmp.Equal(kept, seqs) {
			t.Errorf("Extend() by the run whose record was dropped = %v, %v, want %v kept: its leases expire", kept, err, seqs)
		}

		for _, c := range []struct{ instance, owner string }{{"", "x"}, {"x", ""}} {
			if _, err := s.Beat(ctx, c.instance, c.owner, time.Hour); err == nil {
				t.Errorf("Beat(%q, %q) = nil, want an error", c.instance, c.owner)
			}
			if _, _, err := s.TakeBack(ctx, c.instance, c.owner); err == nil {
				t.Errorf("TakeBack(%q, %q) = nil, want an error", c.instance, c.owner)
			}
		}
		if _, err := s.EndRun(ctx, ""); err == nil {
			t.Errorf("EndRun(\"\") = nil, want an error")
		}
	})
}

package sqlstore

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/testkit"
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

// TestOutboxRuns checks that TakeBack ends the leases of an instance's
// other runs once their records expire, on every subscriber, and never
// those of a live run of the same instance, of another instance's runs,
// or of the caller; that a run taken for gone can no longer extend its
// leases and finds its record gone; and that EndRun hands back what a run
// holds.
func TestOutboxRuns(t *testing.T) {
	t.Parallel()
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			db, _ := be.newDB(t)
			s := openStore(t, db, be.dialect, WithOutbox())
			ctx := context.Background()
			for id := range int64(4) {
				if err := s.Create(ctx, plantstore.Plant{ID: id + 1, Name: "p"}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.FanOut(ctx, []string{"a", "b"}, 10); err != nil {
				t.Fatal(err)
			}
			const inst, old, twin, restarted, other = "host 10.0.0.1:8080", "old run", "twin run", "restarted run", "other run"
			if beat(t, s, inst, old, 300*time.Millisecond) {
				t.Errorf("first Beat(%s) renewed a record, want a new one", old)
			}
			if !beat(t, s, inst, old, 300*time.Millisecond) {
				t.Errorf("second Beat(%s) found no record", old)
			}
			beat(t, s, inst, twin, time.Hour)
			beat(t, s, "host 10.0.0.2:8080", other, 300*time.Millisecond)
			beat(t, s, inst, restarted, time.Hour)
			hour := time.Now().Add(time.Hour)
			oldSeqs := append(claimSeqs(t, s, "a", old, hour, 2), claimSeqs(t, s, "b", old, hour, 1)...)
			twinSeqs := claimSeqs(t, s, "a", twin, hour, 2)
			otherSeqs := claimSeqs(t, s, "b", other, hour, 2)
			if len(oldSeqs) != 3 || len(twinSeqs) != 2 || len(otherSeqs) != 2 {
				t.Fatalf("claimed %v, %v and %v, want 3, 2 and 2", oldSeqs, twinSeqs, otherSeqs)
			}

			// Before its record expires, the old run may be alive.
			if n, others, err := s.TakeBack(ctx, inst, restarted); err != nil || n != 0 || others != 2 {
				t.Errorf("TakeBack() while every run is recorded = %d, %d, %v, want 0 leases, 2 others", n, others, err)
			}
			var n, others int
			testkit.WaitUntil(t, 30*time.Second, "the old run's record to expire", func() bool {
				var err error
				n, others, err = s.TakeBack(ctx, inst, restarted)
				if err != nil {
					t.Fatalf("TakeBack() = %v", err)
				}
				return others < 2
			})
			if n != 3 || others != 1 {
				t.Errorf("TakeBack() once the old run's record expired = %d leases, %d others, want 3 and the live twin", n, others)
			}
			got := append(claimSeqs(t, s, "a", restarted, hour, 10), claimSeqs(t, s, "b", restarted, hour, 10)[:1]...)
			if diff := cmp.Diff(oldSeqs, got); diff != "" {
				t.Errorf("after TakeBack, the restarted run claims (-taken back +claimed):\n%s", diff)
			}
			if kept, err := s.Extend(ctx, "a", old, oldSeqs[:2], hour); err != nil || len(kept) != 0 {
				t.Errorf("Extend() by the run taken for gone = %v, %v, want none kept", kept, err)
			}
			if beat(t, s, inst, old, time.Hour) {
				t.Errorf("Beat() of the run taken for gone renewed a record, want it gone")
			}
			if kept, err := s.Extend(ctx, "a", twin, twinSeqs, hour); err != nil || !cmp.Equal(kept, twinSeqs) {
				t.Errorf("Extend() by the live twin = %v, %v, want %v kept", kept, err, twinSeqs)
			}
			if kept, err := s.Extend(ctx, "b", other, otherSeqs, hour); err != nil || !cmp.Equal(kept, otherSeqs) {
				t.Errorf("Extend() by another instance's run whose record expired = %v, %v, want %v kept: its leases expire", kept, err, otherSeqs)
			}

			// A run that stops hands back what it holds.
			if n, err := s.EndRun(ctx, twin); err != nil || n != 2 {
				t.Fatalf("EndRun() = %d, %v, want the twin's 2 leases", n, err)
			}
			if got := claimSeqs(t, s, "a", restarted, hour, 10); !cmp.Equal(got, twinSeqs) {
				t.Errorf("after EndRun, another run claims %v, want %v", got, twinSeqs)
			}
			if _, others, err := s.TakeBack(ctx, inst, restarted); err != nil || others != 1 {
				t.Errorf("TakeBack() after EndRun(twin) = %d others, %v, want 1, the old run recorded again", others, err)
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
}

// TestOutboxRunsForgetsOldRecords checks that TakeBack drops the record
// of any instance's run that expired over an hour ago, leaving its leases
// to expire, and keeps the others.
func TestOutboxRunsForgetsOldRecords(t *testing.T) {
	t.Parallel()
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			db, _ := be.newDB(t)
			s := openStore(t, db, be.dialect, WithOutbox())
			ctx := context.Background()
			if err := s.Create(ctx, plantstore.Plant{ID: 1, Name: "p"}); err != nil {
				t.Fatal(err)
			}
			if _, err := s.FanOut(ctx, []string{"a"}, 10); err != nil {
				t.Fatal(err)
			}
			beat(t, s, "gone", "gone run", -2*time.Hour)
			beat(t, s, "recent", "recent run", -time.Minute)
			seqs := claimSeqs(t, s, "a", "gone run", time.Now().Add(time.Hour), 1)
			if _, _, err := s.TakeBack(ctx, "mine", "mine run"); err != nil {
				t.Fatal(err)
			}
			var owners []string
			rows, err := db.Query(`SELECT owner FROM webhook_runs ORDER BY owner`)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			for rows.Next() {
				var o string
				if err := rows.Scan(&o); err != nil {
					t.Fatal(err)
				}
				owners = append(owners, o)
			}
			if diff := cmp.Diff([]string{"recent run"}, owners); diff != "" {
				t.Errorf("records left (-want +got):\n%s", diff)
			}
			if n, _, err := s.TakeBack(ctx, "gone", "gone restarted"); err != nil || n != 0 {
				t.Errorf("TakeBack() of an instance whose record was dropped = %d, %v, want 0", n, err)
			}
			if kept, err := s.Extend(ctx, "a", "gone run", seqs, time.Now().Add(time.Hour)); err != nil || !cmp.Equal(kept, seqs) {
				t.Errorf("Extend() by the run whose record was dropped = %v, %v, want %v kept: its leases expire", kept, err, seqs)
			}
		})
	}
}

// TestMigrateKeepsLeases migrates a database whose deliveries were leased
// by a program that recorded no runs, and checks that those leases stand:
// they are not taken back, and expire.
func TestMigrateKeepsLeases(t *testing.T) {
	t.Parallel()
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			ctx := context.Background()
			db, _ := be.newDB(t)
			if err := migrate(ctx, db, be.dialect, migrations[:7]); err != nil {
				t.Fatalf("migrate to version 7: %v", err)
			}
			for _, stmt := range []string{
				`INSERT INTO events (plant_id, name, created_us) VALUES (1, 'p', 0)`,
				`INSERT INTO webhook_deliveries (subscriber, seq, lease_us, owner) SELECT 'a', seq, 9000000000000000, 'plantstore host 10.0.0.1:8080' FROM events`,
			} {
				if _, err := db.Exec(stmt); err != nil {
					t.Fatalf("%s: %v", stmt, err)
				}
			}
			s := openStore(t, db, be.dialect, WithOutbox())
			if got := version(t, db); got != len(migrations) {
				t.Errorf("schema version after Open = %d, want %d", got, len(migrations))
			}
			beat(t, s, "plantstore host 10.0.0.1:8080", "plantstore host 10.0.0.1:8080 run 1", time.Hour)
			if n, others, err := s.TakeBack(ctx, "plantstore host 10.0.0.1:8080", "plantstore host 10.0.0.1:8080 run 1"); err != nil || n != 0 || others != 0 {
				t.Errorf("TakeBack() after the migration = %d, %d, %v, want nothing", n, others, err)
			}
			if got := claimSeqs(t, s, "a", "new", time.Now().Add(time.Hour), 10); len(got) != 0 {
				t.Errorf("Claim() of a delivery leased before the migration = %v, want none", got)
			}
		})
	}
}

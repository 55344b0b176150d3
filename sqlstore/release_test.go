package sqlstore

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

var _ plantstore.OutboxReleaser = (*Store)(nil)

// TestOutboxRelease checks that Release ends every lease of one owner, on
// every subscriber, and no other owner's, so that a restarted process
// takes back what its last run held while another process's leases stand.
func TestOutboxRelease(t *testing.T) {
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
			hour := time.Now().Add(time.Hour)
			mine := append(claimSeqs(t, s, "a", "restarted", hour, 2), claimSeqs(t, s, "b", "restarted", hour, 1)...)
			theirs := claimSeqs(t, s, "a", "other", hour, 10)
			if len(mine) != 3 || len(theirs) != 2 {
				t.Fatalf("claimed %v and %v, want 3 and 2", mine, theirs)
			}

			if n, err := s.Release(ctx, "nobody"); err != nil || n != 0 {
				t.Errorf("Release(nobody) = %d, %v, want 0, nil", n, err)
			}
			if n, err := s.Release(ctx, "restarted"); err != nil || n != 3 {
				t.Fatalf("Release(restarted) = %d, %v, want 3, nil", n, err)
			}
			got := append(claimSeqs(t, s, "a", "new", hour, 10), claimSeqs(t, s, "b", "new", hour, 10)[:1]...)
			if diff := cmp.Diff(mine, got); diff != "" {
				t.Errorf("after Release, another owner claims (-released +claimed):\n%s", diff)
			}
			if n, err := s.Release(ctx, ""); err == nil {
				t.Errorf("Release(\"\") = %d, nil, want an error", n)
			}
		})
	}
}

package plantstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/memstore"
)

// writeFailing is a memory storage whose writes fail with err while err
// is set, and whose reads and pings still succeed. Its probing form
// counts its write probes.
type writeFailing struct {
	*memstore.Store
	err    error
	probes int
}

func (s *writeFailing) Create(ctx context.Context, p plantstore.Plant) error {
	if s.err != nil {
		return s.err
	}
	return s.Store.Create(ctx, p)
}

func (s *writeFailing) Delete(ctx context.Context, id int64) error {
	if s.err != nil {
		return s.err
	}
	return s.Store.Delete(ctx, id)
}

// probing is a writeFailing storage that can probe its writes.
type probing struct{ *writeFailing }

func (s probing) ProbeWrite(ctx context.Context) error {
	s.probes++
	return s.err
}

func TestReady(t *testing.T) {
	ctx := context.Background()
	full := fmt.Errorf("disk full: %w", plantstore.ErrUnavailable)
	unknown := fmt.Errorf("commit lost: %w", plantstore.ErrOutcomeUnknown)
	for _, tc := range []struct {
		name string
		// fail is what the storage's writes return; the store then tries
		// one create, with id 1 taken beforehand when taken is set.
		fail        error
		taken       bool
		prober      bool
		wantFailing bool
		wantReady   error
		reason      string
	}{
		{name: "write ok", prober: true},
		{name: "conflict", taken: true, prober: true,
			reason: "a taken id is an answer, not a failure"},
		{name: "unavailable", fail: full, prober: true, wantFailing: true, wantReady: plantstore.ErrUnavailable},
		{name: "outcome unknown", fail: unknown, prober: true, wantFailing: true, wantReady: plantstore.ErrOutcomeUnknown},
		{name: "unavailable without a prober", fail: full, wantFailing: true,
			reason: "without a write probe, Ready can only ping, which succeeds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wf := &writeFailing{Store: memstore.New()}
			var s plantstore.Storage = wf
			if tc.prober {
				s = probing{wf}
			}
			ps := plantstore.New(s)
			if tc.taken {
				if _, err := ps.Create(ctx, plantstore.NewPlant{ID: 1, Name: "Fern"}); err != nil {
					t.Fatal(err)
				}
			}
			wf.err = tc.fail
			ps.Create(ctx, plantstore.NewPlant{ID: 1, Name: "Fern"})
			if got := ps.WritesFailing(); got != tc.wantFailing {
				t.Errorf("WritesFailing() = %v, want %v (%s)", got, tc.wantFailing, tc.reason)
			}
			if err := ps.Ready(ctx); !errors.Is(err, tc.wantReady) || (tc.wantReady == nil && err != nil) {
				t.Errorf("Ready() = %v, want %v (%s)", err, tc.wantReady, tc.reason)
			}
			// Once writes work again, the probe says so without a write.
			wf.err = nil
			if err := ps.Ready(ctx); err != nil {
				t.Errorf("Ready() once writes work = %v, want nil", err)
			}
			if ps.WritesFailing() && tc.prober {
				t.Errorf("WritesFailing() after a successful probe = true, want false")
			}
			// Ready probes only while writes fail: not before a write
			// failed, nor after a probe succeeded.
			if err := ps.Ready(ctx); err != nil {
				t.Errorf("Ready() again = %v, want nil", err)
			}
			wantProbes := 0
			if tc.prober && tc.wantFailing {
				wantProbes = 2
			}
			if wf.probes != wantProbes {
				t.Errorf("%d write probes, want %d (%s)", wf.probes, wantProbes, tc.reason)
			}
		})
	}
}

// TestWritesFailingSince checks that a failed create or delete marks
// writes failing from the time of the first failure, kept across the
// failures that follow; that answers which say nothing of the storage (a
// conflict, a missing plant: it wrote nothing) leave it as it is; that a
// create or a delete that succeeds clears it; and that Ready then pings
// rather than probes.
func TestWritesFailingSince(t *testing.T) {
	ctx := context.Background()
	wf := &writeFailing{Store: memstore.New()}
	ps := plantstore.New(probing{wf})
	if got := ps.WritesFailingSince(); !got.IsZero() {
		t.Fatalf("WritesFailingSince() before any write = %v, want the zero Time", got)
	}
	if _, err := ps.Create(ctx, plantstore.NewPlant{ID: 1, Name: "a"}); err != nil {
		t.Fatal(err)
	}
	down := fmt.Errorf("down: %w", plantstore.ErrUnavailable)
	wantSince := func(what string, want time.Time) {
		t.Helper()
		if got := ps.WritesFailingSince(); !got.Equal(want) || ps.WritesFailing() == want.IsZero() {
			t.Errorf("WritesFailingSince() after %s = %v (failing %v), want %v", what, got, ps.WritesFailing(), want)
		}
	}

	wf.err = down
	before := time.Now()
	if err := ps.Delete(ctx, 1); !errors.Is(err, plantstore.ErrUnavailable) {
		t.Fatalf("Delete = %v, want ErrUnavailable", err)
	}
	since := ps.WritesFailingSince()
	if since.Before(before) || since.After(time.Now()) || !ps.WritesFailing() {
		t.Fatalf("WritesFailingSince() after a failed delete = %v (failing %v), want between %v and now", since, ps.WritesFailing(), before)
	}
	ps.Create(ctx, plantstore.NewPlant{ID: 2, Name: "b"})
	wantSince("a second failure", since)
	wf.err = plantstore.ErrConflict
	ps.Create(ctx, plantstore.NewPlant{ID: 3, Name: "c"})
	wantSince("a conflict", since)
	wf.err = nil
	if err := ps.Delete(ctx, 2); !errors.Is(err, plantstore.ErrNotFound) {
		t.Fatalf("Delete of a missing plant = %v, want ErrNotFound", err)
	}
	wantSince("a delete of a missing plant", since)
	if _, err := ps.Create(ctx, plantstore.NewPlant{ID: 4, Name: "d"}); err != nil {
		t.Fatal(err)
	}
	wantSince("a create succeeded", time.Time{})

	wf.err = down
	ps.Delete(ctx, 4)
	wf.err = nil
	if err := ps.Delete(ctx, 1); err != nil {
		t.Fatalf("Delete = %v", err)
	}
	wantSince("a delete succeeded", time.Time{})
	if err := ps.Ready(ctx); err != nil || wf.probes != 0 {
		t.Errorf("Ready() after a delete succeeded = %v with %d write probes, want nil and a ping", err, wf.probes)
	}
}

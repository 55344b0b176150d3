package storagetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

// runPinger runs the Pinger contract as subtests of t, or skips t when the
// storage, of which probe is one, does not implement it.
func runPinger(t *testing.T, probe plantstore.Storage, newStorage func(t *testing.T) plantstore.Storage) {
	if _, ok := probe.(plantstore.Pinger); !ok {
		t.Skip("the storage does not implement plantstore.Pinger: not checked")
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, s plantstore.Storage, p plantstore.Pinger)
	}{
		{"Ping", testPing},
		{"ConcurrentPings", testConcurrentPings},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStorage(t)
			tt.fn(t, s, s.(plantstore.Pinger))
		})
	}
}

// testPing pings an empty storage and one that holds plants, which the
// pings leave as they are.
func testPing(t *testing.T, s plantstore.Storage, p plantstore.Pinger) {
	ctx := context.Background()
	if err := p.Ping(ctx); err != nil {
		t.Fatalf("Ping() of an empty storage = %v, want nil", err)
	}
	mustCreate(t, s, plantstore.Plant{ID: 1, Name: "one"})
	for i := range 3 {
		if err := p.Ping(ctx); err != nil {
			t.Fatalf("Ping() %d = %v, want nil", i, err)
		}
	}
	wantList(t, s, []plantstore.Plant{{ID: 1, Name: "one"}})
}

// testConcurrentPings pings from several goroutines while others create
// plants: every ping and every create succeeds.
func testConcurrentPings(t *testing.T, s plantstore.Storage, p plantstore.Pinger) {
	concurrently(t, 8, func(i int) error {
		if err := s.Create(context.Background(), plantstore.Plant{ID: int64(i), Name: fmt.Sprint(i)}); err != nil {
			return fmt.Errorf("Create(%d) = %w", i, err)
		}
		if err := p.Ping(context.Background()); err != nil {
			return fmt.Errorf("Ping() = %w, want nil", err)
		}
		return nil
	})
	for i := range int64(8) {
		wantPlant(t, s, plantstore.Plant{ID: i, Name: fmt.Sprint(i)})
	}
}

// runWriteProber runs the WriteProber contract as subtests of t, or skips
// t when the storage, of which probe is one, does not implement it.
func runWriteProber(t *testing.T, probe plantstore.Storage, newStorage func(t *testing.T) plantstore.Storage) {
	if _, ok := probe.(plantstore.WriteProber); !ok {
		t.Skip("the storage does not implement plantstore.WriteProber: not checked")
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, s plantstore.Storage, wp plantstore.WriteProber)
	}{
		{"ProbeWrite", testProbeWrite},
		{"ConcurrentProbes", testConcurrentProbes},
		{"CancelledContext", testProbeCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStorage(t)
			tt.fn(t, s, s.(plantstore.WriteProber))
		})
	}
}

// testProbeWrite probes an empty storage and one that holds plants, and
// checks that the probes, committed writes, change no plant.
func testProbeWrite(t *testing.T, s plantstore.Storage, wp plantstore.WriteProber) {
	ctx := context.Background()
	for i := range 3 {
		if err := wp.ProbeWrite(ctx); err != nil {
			t.Fatalf("ProbeWrite() %d of an empty storage = %v, want nil", i, err)
		}
	}
	wantList(t, s, []plantstore.Plant{})
	plants := []plantstore.Plant{{ID: 1, Name: "one"}, {ID: 2, Name: "two", Tag: "t", HasTag: true}}
	for _, p := range plants {
		mustCreate(t, s, p)
	}
	for i := range 3 {
		if err := wp.ProbeWrite(ctx); err != nil {
			t.Fatalf("ProbeWrite() %d = %v, want nil", i, err)
		}
	}
	wantList(t, s, plants)
	if err := s.Create(ctx, plantstore.Plant{ID: 1, Name: "again"}); !errors.Is(err, plantstore.ErrConflict) {
		t.Errorf("Create of a taken id after probes = %v, want ErrConflict", err)
	}
}

// testConcurrentProbes probes from several goroutines while others create
// plants: every probe and every create succeeds.
func testConcurrentProbes(t *testing.T, s plantstore.Storage, wp plantstore.WriteProber) {
	concurrently(t, 8, func(i int) error {
		if err := s.Create(context.Background(), plantstore.Plant{ID: int64(i), Name: fmt.Sprint(i)}); err != nil {
			return fmt.Errorf("Create(%d) = %w", i, err)
		}
		if err := wp.ProbeWrite(context.Background()); err != nil {
			return fmt.Errorf("ProbeWrite() = %w, want nil", err)
		}
		return nil
	})
	for i := range int64(8) {
		wantPlant(t, s, plantstore.Plant{ID: i, Name: fmt.Sprint(i)})
	}
}

// testProbeCancelled probes with a cancelled context: the context's error,
// and the plants left as they were.
func testProbeCancelled(t *testing.T, s plantstore.Storage, wp plantstore.WriteProber) {
	mustCreate(t, s, plantstore.Plant{ID: 1, Name: "kept"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := wp.ProbeWrite(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("ProbeWrite() with a cancelled context = %v, want context.Canceled", err)
	}
	wantList(t, s, []plantstore.Plant{{ID: 1, Name: "kept"}})
}

// wantList checks that s holds exactly want, in ascending id order.
func wantList(t *testing.T, s plantstore.Storage, want []plantstore.Plant) {
	t.Helper()
	got, err := s.List(context.Background(), math.MinInt64, plantstore.MaxListLimit)
	if err != nil {
		t.Fatalf("List() = %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("plants stored mismatch (-want +got):\n%s", diff)
	}
}

// concurrently runs fn(0) … fn(n-1) at once and reports their errors.
func concurrently(t *testing.T, n int, fn func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = fn(i)
		})
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

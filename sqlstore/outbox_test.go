package sqlstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

func TestOutbox(t *testing.T) {
	for _, be := range backends {
		for _, mode := range []struct {
			name string
			opts []Option
		}{
			{"group", []Option{WithOutbox()}},
			{"single", []Option{WithOutbox(), WithoutGroupCommit()}},
		} {
			t.Run(be.name+"/mode="+mode.name, func(t *testing.T) {
				db, _ := be.newDB(t)
				s := openStore(t, db, be.dialect, mode.opts...)
				ctx := context.Background()
				before := time.Now().Add(-time.Second)
				plants := []plantstore.Plant{
					{ID: 3, Name: "Fern"},
					{ID: 1, Name: "Aloe", Tag: "succulent", HasTag: true},
					{ID: 2, Name: "Ivy", HasTag: true},
				}
				for _, p := range plants {
					if err := s.Create(ctx, p); err != nil {
						t.Fatalf("Create(%+v) = %v", p, err)
					}
				}
				if err := s.Create(ctx, plantstore.Plant{ID: 1, Name: "taken"}); !errors.Is(err, plantstore.ErrConflict) {
					t.Fatalf("Create of a taken id = %v, want ErrConflict", err)
				}
				cancelled, cancel := context.WithCancel(ctx)
				cancel()
				if err := s.Create(cancelled, plantstore.Plant{ID: 4, Name: "cancelled"}); !errors.Is(err, context.Canceled) {
					t.Fatalf("Create with a cancelled context = %v, want context.Canceled", err)
				}

				events, err := s.PendingEvents(ctx, 0, 10)
				if err != nil {
					t.Fatalf("PendingEvents = %v", err)
				}
				var got []plantstore.Plant
				for i, e := range events {
					got = append(got, e.Plant)
					if i > 0 && e.Seq <= events[i-1].Seq {
						t.Errorf("events out of order: seq %d after %d", e.Seq, events[i-1].Seq)
					}
					if e.Time.Before(before) || e.Time.After(time.Now().Add(time.Second)) {
						t.Errorf("event %d time %v is not around now", e.Seq, e.Time)
					}
				}
				if diff := cmp.Diff(plants, got); diff != "" {
					t.Fatalf("events mismatch: one per created plant, none for the failed Creates (-want +got):\n%s", diff)
				}

				page, err := s.PendingEvents(ctx, events[0].Seq, 1)
				if err != nil || len(page) != 1 || page[0].Seq != events[1].Seq {
					t.Errorf("PendingEvents(after %d, 1) = %+v, %v, want the event with seq %d", events[0].Seq, page, err, events[1].Seq)
				}
				for range 2 { // deleting a deleted event is not an error
					if err := s.DeleteEvent(ctx, events[0].Seq); err != nil {
						t.Fatalf("DeleteEvent(%d) = %v", events[0].Seq, err)
					}
				}
				left, err := s.PendingEvents(ctx, 0, 10)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(events[1:], left); diff != "" {
					t.Errorf("events after DeleteEvent mismatch (-want +got):\n%s", diff)
				}

				// Seq only grows, even once the newest event is deleted.
				last := events[len(events)-1].Seq
				if err := s.DeleteEvent(ctx, last); err != nil {
					t.Fatal(err)
				}
				if err := s.Create(ctx, plantstore.Plant{ID: 5, Name: "later"}); err != nil {
					t.Fatal(err)
				}
				newest, err := s.PendingEvents(ctx, last, 10)
				if err != nil || len(newest) != 1 || newest[0].Seq <= last {
					t.Errorf("PendingEvents(after %d) = %+v, %v, want one event with a greater seq", last, newest, err)
				}
			})
		}
	}
}

func TestNoOutboxRecordsNoEvents(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			db, _ := be.newDB(t)
			s := openStore(t, db, be.dialect)
			ctx := context.Background()
			if err := s.Create(ctx, plantstore.Plant{ID: 1, Name: "quiet"}); err != nil {
				t.Fatal(err)
			}
			events, err := s.PendingEvents(ctx, 0, 10)
			if err != nil || events == nil || len(events) != 0 {
				t.Errorf("PendingEvents without the outbox = %#v, %v, want an empty slice", events, err)
			}
		})
	}
}

package webhook_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/memstore"
	"github.com/plantstore/plantstore/sqlstore"
	"github.com/plantstore/plantstore/webhook"
)

// startOn calls Start on storage with the test secret and the options of
// start, and stops the Dispatcher when the test ends.
func startOn(t *testing.T, storage plantstore.Storage, subscribers []string, opts ...webhook.Option) (*webhook.Dispatcher, *plantstore.PlantStore, *logs) {
	t.Helper()
	l := newLogs(t)
	d, psOpts, err := webhook.Start(context.Background(), storage, subscribers, testSecret, l.options(opts)...)
	if err != nil {
		t.Fatalf("Start() = %v", err)
	}
	t.Cleanup(d.Stop)
	return d, plantstore.New(storage, psOpts...), l
}

// TestStartChoosesTheOutbox starts delivery on memory storage, which has
// no outbox and gets a MemoryOutbox, and on a SQLite Store opened with its
// outbox, which is the outbox itself: either way every plant created
// through the PlantStore over the storage and the options Start returns
// is delivered once, and the start is logged with whether the outbox is
// durable.
func TestStartChoosesTheOutbox(t *testing.T) {
	t.Parallel()
	for _, durable := range []bool{false, true} {
		t.Run(fmt.Sprintf("durable=%v", durable), func(t *testing.T) {
			t.Parallel()
			var storage plantstore.Storage = memstore.New()
			if durable {
				storage = openSQLite(t, filepath.Join(t.TempDir(), "plants.db"))
			}
			rc := newReceiver(t, ok)
			d, ps, l := startOn(t, storage, []string{rc.url()})
			createRange(t, ps, 0, 10)
			testkit.WaitUntil(t, 10*time.Second, "every plant delivered", func() bool {
				_, delivered := rc.stats()
				return onceEach(10)(delivered)
			})
			want := fmt.Sprintf(`level=INFO msg="delivering plant-added webhooks" subscribers=1 durable=%v`, durable)
			if !strings.Contains(l.String(), want) {
				t.Errorf("the log does not say %q:\n%s", want, l)
			}
			if _, isOutbox := storage.(plantstore.Outbox); isOutbox != durable {
				t.Fatalf("storage is an outbox: %v, want %v", isOutbox, durable)
			}
			d.Stop()
			if err := d.Run(context.Background()); !errors.Is(err, webhook.ErrRunning) {
				t.Errorf("Run() after Start = %v, want ErrRunning", err)
			}
		})
	}
}

// TestStartRefusesAStoreWithoutEvents checks that a Store opened without
// its outbox, which records no event, is refused rather than taken for an
// outbox that would deliver nothing.
func TestStartRefusesAStoreWithoutEvents(t *testing.T) {
	t.Parallel()
	s, err := sqlstore.OpenSQLite(context.Background(), "sqlite", filepath.Join(t.TempDir(), "plants.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	d, psOpts, err := webhook.Start(context.Background(), s, []string{"http://127.0.0.1:1/hook"}, testSecret)
	if err == nil || !strings.Contains(err.Error(), "sqlstore.WithOutbox") || d != nil || psOpts != nil {
		t.Errorf("Start() on a Store without its outbox = %v, %v, %v; want an error naming sqlstore.WithOutbox", d, psOpts, err)
	}
}

// TestStartBoundsTheMemoryOutbox starts delivery on memory storage with
// WithMemoryOutbox's bound of 5 events and a subscriber that refuses
// everything: the events past the bound are dropped, counted, and logged
// to the Dispatcher's logger, and no create is refused.
func TestStartBoundsTheMemoryOutbox(t *testing.T) {
	t.Parallel()
	const n, bound = 30, 5
	d, ps, l := startOn(t, memstore.New(), []string{newReceiver(t, refuse).url()}, webhook.WithMemoryOutbox(webhook.WithMaxPending(bound)))
	createRange(t, ps, 0, n)
	if st := d.Stats(); !st.CanDrop || st.Dropped != n-bound {
		t.Errorf("Stats() = %+v, want %d dropped", st, n-bound)
	}
	if !strings.Contains(l.String(), "webhook: memory outbox full: dropped the oldest pending events, undelivered") {
		t.Errorf("the Dispatcher's log does not tell of the drops:\n%s", l)
	}
}

// TestStop checks that Stop ends Run, that Stop may be called again, that
// Run then returns ErrRunning, as any second Run does, and that Run
// returns nil at once after a Stop that came first.
func TestStop(t *testing.T) {
	t.Parallel()
	mo := webhook.NewMemoryOutbox()
	rc := newReceiver(t, ok)
	d, err := webhook.New(mo, []string{rc.url()}, testSecret, webhook.WithLogger(testkit.NewLogger(newLogs(t), slog.LevelInfo)))
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { ran <- d.Run(context.Background()) }()
	ps := newPlantStore(mo, d)
	mustCreate(t, ps, plantstore.NewPlant{ID: 1, Name: "p"})
	testkit.WaitUntil(t, 10*time.Second, "the plant delivered", func() bool { return rc.total() == 1 })
	d.Stop()
	if err := <-ran; err != nil {
		t.Errorf("Run() stopped by Stop = %v, want nil", err)
	}
	d.Stop()
	if err := d.Run(context.Background()); !errors.Is(err, webhook.ErrRunning) {
		t.Errorf("second Run() = %v, want ErrRunning", err)
	}

	stopped, err := webhook.New(mo, []string{rc.url()}, testSecret)
	if err != nil {
		t.Fatal(err)
	}
	stopped.Stop()
	mustCreate(t, newPlantStore(mo, stopped), plantstore.NewPlant{ID: 2, Name: "p"})
	if err := stopped.Run(context.Background()); err != nil {
		t.Errorf("Run() after Stop = %v, want nil", err)
	}
	if got := rc.total(); got != 1 {
		t.Errorf("%d attempts, want 1: a Dispatcher stopped before it ran delivers nothing", got)
	}
}

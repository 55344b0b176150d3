package sqlstore

import (
	"context"
	"errors"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/faultproxy"
)

// TestDatabaseOutage cuts the connections to PostgreSQL under a load of
// Creates and restores them: Creates during the outage fail with
// ErrUnavailable, Creates succeed again afterwards, and every Create that
// returned nil is stored, with its event.
func TestDatabaseOutage(t *testing.T) {
	_, dsn := postgresBackend.newDB(t)
	direct := openDB(t, "pgx", dsn)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	proxy := faultproxy.New(t, u.Host)
	u.Host = proxy.Addr()
	proxied := openDB(t, "pgx", withParams(t, u.String(), map[string]string{"connect_timeout": "2"}))
	s := openStore(t, proxied, Postgres, WithOutbox())

	// A bounded load: workers create fresh ids until told to stop or
	// until each has made perCap attempts.
	const workers, perCap = 8, 3000
	var (
		nextID             atomic.Int64
		ok, failed         atomic.Int64
		mu                 sync.Mutex
		stored             []int64
		unexpected         []error
		stop               = make(chan struct{})
		wg                 sync.WaitGroup
		okAfterRestore     atomic.Int64
		restored           atomic.Bool
		failedDuringOutage atomic.Int64
		outage             atomic.Bool
	)
	for range workers {
		wg.Go(func() {
			for range perCap {
				select {
				case <-stop:
					return
				default:
				}
				id := nextID.Add(1)
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				err := s.Create(ctx, plantstore.Plant{ID: id, Name: "load"})
				cancel()
				switch {
				case err == nil:
					ok.Add(1)
					if restored.Load() {
						okAfterRestore.Add(1)
					}
					mu.Lock()
					stored = append(stored, id)
					mu.Unlock()
				case errors.Is(err, plantstore.ErrUnavailable):
					failed.Add(1)
					if outage.Load() {
						failedDuringOutage.Add(1)
					}
				default:
					mu.Lock()
					unexpected = append(unexpected, err)
					mu.Unlock()
				}
			}
		})
	}
	// waitFor waits until cond holds, or fails the test after a bounded
	// number of polls.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for i := 0; !cond(); i++ {
			if i == 3000 {
				close(stop)
				wg.Wait()
				t.Fatalf("gave up waiting for %s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}

	waitFor("creates before the outage", func() bool { return ok.Load() >= 200 })
	proxy.Cut()
	outage.Store(true)
	waitFor("creates to fail during the outage", func() bool { return failedDuringOutage.Load() >= 50 })

	ctx := context.Background()
	if err := s.Create(ctx, plantstore.Plant{ID: -1, Name: "during outage"}); !errors.Is(err, plantstore.ErrUnavailable) {
		t.Errorf("Create during the outage = %v, want ErrUnavailable", err)
	}
	if _, err := s.Plant(ctx, 1); !errors.Is(err, plantstore.ErrUnavailable) {
		t.Errorf("Plant during the outage = %v, want ErrUnavailable", err)
	}
	if err := s.Ping(ctx); !errors.Is(err, plantstore.ErrUnavailable) {
		t.Errorf("Ping during the outage = %v, want ErrUnavailable", err)
	}

	outage.Store(false)
	proxy.Restore()
	restored.Store(true)
	waitFor("creates to succeed after the outage", func() bool { return okAfterRestore.Load() >= 200 })
	close(stop)
	wg.Wait()

	for _, err := range unexpected {
		t.Errorf("Create = %v, want nil or ErrUnavailable", err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping after the outage = %v, want nil", err)
	}
	if err := s.Create(ctx, plantstore.Plant{ID: -2, Name: "after outage"}); err != nil {
		t.Errorf("Create after the outage = %v, want nil", err)
	}

	inDB := map[int64]bool{}
	rows, err := direct.Query(`SELECT id FROM plants`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		inDB[id] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, id := range stored {
		if !inDB[id] {
			t.Errorf("plant %d was acknowledged but is not stored", id)
		}
	}
	// Each stored plant has exactly one event, and each event its plant:
	// they were written in one transaction, whatever the outage cut.
	var orphans, missing, dupes int
	err = direct.QueryRow(`SELECT
		(SELECT count(*) FROM events e WHERE NOT EXISTS (SELECT 1 FROM plants p WHERE p.id = e.plant_id)),
		(SELECT count(*) FROM plants p WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.plant_id = p.id)),
		(SELECT count(*) - count(DISTINCT plant_id) FROM events)`).Scan(&orphans, &missing, &dupes)
	if err != nil {
		t.Fatal(err)
	}
	if orphans != 0 || missing != 0 || dupes != 0 {
		t.Errorf("events without plants: %d, plants without events: %d, duplicate events: %d; want none", orphans, missing, dupes)
	}
	t.Logf("%d creates acknowledged, %d unavailable, %d rows stored", ok.Load(), failed.Load(), len(inDB))
}

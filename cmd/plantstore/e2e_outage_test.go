package main

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit"
)

// errorOf sends GET path and returns the Error code of the answer, or 0
// for a 200.
func errorOf(t *testing.T, url, path string) int {
	t.Helper()
	status, body := get(t, url, path)
	if status == 200 {
		return 0
	}
	return errorCode(body)
}

// Outage phases, as seen by a create when it starts and when it ends.
const (
	beforeOutage = iota
	duringOutage
	afterOutage
)

// TestDatabaseOutage runs the binary on PostgreSQL through a proxy, cuts
// every database connection under a load of creates, and restores them:
// during the outage creates and GET /readyz answer the Error with code
// 503 while GET /healthz still answers 200; after it, creates succeed
// again in the same process. Every create answered 200 is stored, no create
// answered 503 is, and one answered 504 (its COMMIT in flight at the cut)
// is settled by a retry.
//
// It is one piece: each step acts on what the steps before it left, on one set of processes.
func TestDatabaseOutage(t *testing.T) {
	t.Parallel()
	dsn, proxy := proxiedPostgres(t)
	p := startProcess(t, "-db", dsn, "-log-level", "error")
	t.Cleanup(client.CloseIdleConnections)

	// A bounded load: workers create fresh ids until told to stop, each
	// making at most perWorker attempts.
	const workers, perWorker = 8, 5000
	type outcome struct {
		id         int64
		start, end int32 // outage phases
		status     int
		code       int
		err        error
	}
	var (
		phase   atomic.Int32
		nextID  atomic.Int64
		mu      sync.Mutex
		results []outcome
		counts  [3]struct{ ok, unavailable atomic.Int64 } // by phase at the end
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for range perWorker {
				select {
				case <-stop:
					return
				default:
				}
				o := outcome{id: nextID.Add(1), start: phase.Load()}
				o.status, o.code, o.err = create(p.URL, o.id, fmt.Sprint("load-", o.id))
				o.end = phase.Load()
				switch {
				case o.err == nil && o.status == 200:
					counts[o.end].ok.Add(1)
				case o.err == nil && o.code == 503:
					counts[o.end].unavailable.Add(1)
				}
				mu.Lock()
				results = append(results, o)
				mu.Unlock()
			}
		})
	}
	stopLoad := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}
	defer stopLoad()
	waitFor := func(what string, cond func() bool) { t.Helper(); testkit.WaitUntil(t, time.Minute, what, cond) }

	waitFor("creates before the outage", func() bool { return counts[beforeOutage].ok.Load() >= 200 })
	if code := errorOf(t, p.URL, "/readyz"); code != 0 {
		t.Errorf("GET /readyz before the outage = error %d, want 200", code)
	}

	proxy.Cut()
	phase.Store(duringOutage)
	waitFor("creates to fail during the outage", func() bool { return counts[duringOutage].unavailable.Load() >= 50 })
	waitFor("GET /readyz to answer 503", func() bool { return errorOf(t, p.URL, "/readyz") == 503 })
	waitFor("GET /plants to answer 503", func() bool { return errorOf(t, p.URL, "/plants") == 503 })
	const duringID = -1
	if status, code, err := create(p.URL, duringID, "during outage"); err != nil || code != 503 {
		t.Errorf("create during the outage = %d with error %d, %v, want error 503", status, code, err)
	}
	if status, body := get(t, p.URL, "/healthz"); status != 200 {
		t.Errorf("GET /healthz during the outage = %d %s, want 200", status, body)
	}
	if status, body := get(t, p.URL, "/openapi.json"); status != 200 {
		t.Errorf("GET /openapi.json during the outage = %d %.100s, want 200", status, body)
	}

	phase.Store(afterOutage)
	proxy.Restore()
	waitFor("creates to succeed after the outage", func() bool { return counts[afterOutage].ok.Load() >= 200 })
	stopLoad()
	select {
	case <-p.Exited():
		t.Fatalf("plantstore exited during the test: %v\n%s", p.Err(), p.Stderr)
	default:
	}
	if code := errorOf(t, p.URL, "/readyz"); code != 0 {
		t.Errorf("GET /readyz after the outage = error %d, want 200", code)
	}

	stored := listAll(t, p.URL)
	if _, ok := stored[duringID]; ok {
		t.Errorf("plant %d, refused during the outage, is stored", duringID)
	}
	var ambiguous, inDoubtKept int
	for _, o := range results {
		_, isStored := stored[o.id]
		switch {
		case o.err != nil:
			t.Errorf("create %d: %v, want a complete answer", o.id, o.err)
		case o.status == 200 && o.start == duringOutage && o.end == duringOutage:
			t.Errorf("create %d was answered 200 while the database was unreachable", o.id)
		case o.status == 200:
			if stored[o.id] != fmt.Sprint("load-", o.id) {
				t.Errorf("create %d was answered 200 but is not stored", o.id)
			}
		case o.code == 503:
			// Nothing was kept: 503 promises it, whenever it came.
			if isStored {
				t.Errorf("create %d was answered error 503 but is stored", o.id)
			}
		case o.code != 504:
			t.Errorf("create %d = %d with error %d, want 200 or error 503 or 504", o.id, o.status, o.code)
		default:
			// Its COMMIT was in flight when the proxy cut the
			// connections, so either outcome is correct, and a retry
			// settles it: 409 when the first was kept, 200 otherwise.
			ambiguous++
			want := 200
			if isStored {
				inDoubtKept++
				want = 409
			}
			status, code, err := create(p.URL, o.id, fmt.Sprint("load-", o.id))
			got := code
			if status == 200 {
				got = 200
			}
			if err != nil || got != want {
				t.Errorf("retry of create %d (stored: %v) = %d with error %d, %v, want %d", o.id, isStored, status, code, err, want)
			}
		}
	}
	t.Logf("%d creates answered: %d ok and %d unavailable before the outage, %d ok and %d unavailable during it, %d ok and %d unavailable after it; %d of unknown outcome (error 504), of which %d were kept; %d plants stored",
		len(results), counts[0].ok.Load(), counts[0].unavailable.Load(), counts[1].ok.Load(), counts[1].unavailable.Load(),
		counts[2].ok.Load(), counts[2].unavailable.Load(), ambiguous, inDoubtKept, len(stored))
}

package deploy_test

import (
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/internal/testkit"
)

// A readiness is one answer to GET /readyz: its time and the Error code,
// 0 for a 200, -1 when no answer came.
type readiness struct {
	at   time.Time
	code int
}

// TestFailover runs two plantstore processes on a PostgreSQL primary with a
// synchronous streaming standby, through a URL naming both with
// target_session_attrs=read-write, under a load of creates. It stops the
// primary as a crash would and promotes the standby. The processes must
// come back by themselves: GET /readyz answers 503 during the outage and
// 200 after it, creates succeed again, no acknowledged create is lost, and
// no create answered 503 is stored.
//
// It is one piece: each step acts on what the steps before it left, on one set of processes.
func TestFailover(t *testing.T) {
	t.Parallel()
	testkit.Long(t, "fails a PostgreSQL primary over to its standby under load")
	primary := pgtest.Start(t)
	standby := primary.StartStandby(t)
	dsn := fmt.Sprintf("postgres://postgres@%s,%s/postgres?sslmode=disable&target_session_attrs=read-write&connect_timeout=2",
		primary.Addr(), standby.Addr())
	procs := startInstances(t, dsn, nil, 2, t.TempDir())
	t.Cleanup(client.CloseIdleConnections)

	l := startLoad(t, urls(procs), loadOptions{workers: 16, pinned: true})
	var (
		mu    sync.Mutex
		ready = make([][]readiness, len(procs))
		stop  = make(chan struct{})
		wg    sync.WaitGroup
	)
	probe := &http.Client{Timeout: 5 * time.Second}
	for i, p := range procs {
		wg.Go(func() {
			for {
				r := readiness{at: time.Now(), code: -1}
				if status, _, body, err := testkit.Get(probe, p.URL+"/readyz", ""); err == nil {
					r.code = testkit.ErrorCode(body)
					if status == 200 {
						r.code = 0
					}
				}
				mu.Lock()
				ready[i] = append(ready[i], r)
				mu.Unlock()
				select {
				case <-stop:
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
		})
	}
	stopProbes := sync.OnceFunc(func() {
		close(stop)
		wg.Wait()
	})
	defer stopProbes()
	// waitFor reads what the probes recorded under their lock.
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		testkit.WaitUntil(t, 90*time.Second, what, func() bool { mu.Lock(); defer mu.Unlock(); return cond() })
	}
	// seen reports whether every instance's /readyz answered code after
	// since; the caller holds mu.
	seen := func(code int, since time.Time) bool {
		for _, rs := range ready {
			if !slices.ContainsFunc(rs, func(r readiness) bool { return r.code == code && r.at.After(since) }) {
				return false
			}
		}
		return true
	}
	// createdSince counts, on each instance, the creates sent after since
	// and answered 200.
	createdSince := func(since time.Time) []int {
		n := make([]int, len(procs))
		for _, o := range l.sent() {
			if o.code == 200 && o.start.After(since) {
				n[o.instance]++
			}
		}
		return n
	}

	l.waitAcked(t, 500, 90*time.Second)
	waitFor("GET /readyz to answer 200 before the failover", func() bool { return seen(0, time.Time{}) })
	stopped := time.Now()
	primary.Stop(t)
	// From here until the promotion no database accepts writes; before
	// Stop returns, the primary may still commit.
	gone := time.Now()
	waitFor("GET /readyz to answer 503 with the primary gone", func() bool { return seen(503, stopped) })
	promoted := time.Now()
	standby.Promote(t)
	promotion := time.Since(promoted)
	waitFor("creates to succeed on every instance after the promotion", func() bool {
		return !slices.ContainsFunc(createdSince(promoted), func(n int) bool { return n < 100 })
	})
	waitFor("GET /readyz to answer 200 after the promotion", func() bool { return seen(0, promoted) })
	l.halt()
	stopProbes()
	checkRunning(t, procs, "the failover")

	stored := testkit.Plants(t, client, procs[0].URL, token)
	var (
		ok, lost, unavailable, unavailableKept, unknown, unknownKept int
		firstOK                                                      = make([]time.Time, len(procs))
	)
	outcomes := l.sent()
	for _, o := range outcomes {
		_, isStored := stored[o.id]
		switch {
		case o.err != nil:
			t.Errorf("create %d on instance %d: %v, want a complete answer", o.id, o.instance, o.err)
		case o.status == 200:
			ok++
			if stored[o.id] != fmt.Sprint("plant-", o.id) {
				lost++
				t.Errorf("create %d was answered 200 but is not stored: lost in the failover", o.id)
			}
			if o.start.After(gone) && o.end.Before(promoted) {
				t.Errorf("create %d was answered 200 while no primary accepted writes", o.id)
			}
			if o.start.After(promoted) && (firstOK[o.instance].IsZero() || o.end.Before(firstOK[o.instance])) {
				firstOK[o.instance] = o.end
			}
		case o.code == 503:
			unavailable++
			if isStored {
				// A COMMIT in flight when the primary died, which reached
				// the synchronous standby, must be answered 504.
				unavailableKept++
				t.Errorf("create %d (sent %v before the stop, answered %v after it) was answered 503, which says nothing was kept, but is stored",
					o.id, stopped.Sub(o.start).Round(time.Millisecond), o.end.Sub(stopped).Round(time.Millisecond))
			}
		case o.code == 504:
			unknown++
			if isStored {
				unknownKept++
			}
		default:
			t.Errorf("create %d = %d with error %d, want 200, 503 or 504", o.id, o.status, o.code)
		}
	}
	if unavailable == 0 {
		t.Errorf("no create was answered 503 while the primary was gone")
	}
	t.Logf("%d creates: %d acknowledged, %d of them lost; %d answered 503, %d of them stored; %d answered 504, %d of them stored",
		len(outcomes), ok, lost, unavailable, unavailableKept, unknown, unknownKept)
	for i := range procs {
		for _, r := range ready[i] {
			if r.code != 0 && r.code != 503 {
				t.Errorf("instance %d: GET /readyz at %v = error %d (-1: no answer within 5 s), want 200 or 503",
					i, r.at.Sub(stopped).Round(time.Millisecond), r.code)
			}
		}
		var firstDown, firstUp time.Time
		for _, r := range ready[i] {
			if firstDown.IsZero() && r.code == 503 && r.at.After(stopped) {
				firstDown = r.at
			}
			if firstUp.IsZero() && r.code == 0 && r.at.After(promoted) {
				firstUp = r.at
			}
		}
		t.Logf("instance %d: /readyz 503 %v after the stop, 200 %v after the promotion; first create acknowledged %v after the promotion (%v after the stop; promotion took %v)",
			i, firstDown.Sub(stopped).Round(time.Millisecond), firstUp.Sub(promoted).Round(time.Millisecond),
			firstOK[i].Sub(promoted).Round(time.Millisecond), firstOK[i].Sub(stopped).Round(time.Millisecond),
			promotion.Round(time.Millisecond))
	}
}

package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/internal/testkit"
)

// TestMultiHostDSN runs the server on a PostgreSQL URL listing two hosts,
// the first of which refuses connections: it serves from the second, and
// logs both hosts but not the password.
func TestMultiHostDSN(t *testing.T) {
	t.Parallel()
	dsn := postgresDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	hosts := freeAddr(t) + "," + u.Host
	multi := strings.Replace(dsn, "://"+u.User.String()+"@"+u.Host, "://"+u.User.Username()+":s3cret@"+hosts, 1) +
		"&target_session_attrs=read-write"
	if !strings.Contains(multi, hosts) {
		t.Fatalf("could not put two hosts into %s", dsn)
	}
	if kind, where, err := parseDB(multi); kind != "postgres" || where != multi || err != nil {
		t.Fatalf("parseDB(%q) = %v, %q, %v; want PostgreSQL", multi, kind, where, err)
	}
	url, _, stderr, stop := startRun(t, []string{"-addr", "127.0.0.1:0", "-db", multi}, map[string]string{"PLANTSTORE_TOKENS": "t"})
	if status, body := post(t, url, "t", `{"id":1,"name":"two hosts"}`); status != 200 {
		t.Errorf("create = %d %s, want 200", status, body)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	logs := stderr.String()
	if !strings.Contains(logs, ":xxxxx@"+hosts+"/") {
		t.Errorf("the log does not name both hosts with the password hidden:\n%s", logs)
	}
	if strings.Contains(logs, "s3cret") {
		t.Errorf("the log holds the password:\n%s", logs)
	}
}

// A failoverOutcome is one create sent during TestFailover.
type failoverOutcome struct {
	id         int64
	instance   int
	start, end time.Time
	status     int
	code       int
	err        error
}

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
	binary(t)
	primary := pgtest.Start(t)
	standby := primary.StartStandby(t)
	dsn := fmt.Sprintf("postgres://postgres@%s,%s/postgres?sslmode=disable&target_session_attrs=read-write&connect_timeout=2",
		primary.Addr(), standby.Addr())
	procs := []*testkit.Process{
		startProcess(t, "-db", dsn, "-log-level", "warn"),
		startProcess(t, "-db", dsn, "-log-level", "warn"),
	}
	t.Cleanup(client.CloseIdleConnections)

	var (
		mu       sync.Mutex
		outcomes []failoverOutcome
		ready    = make([][]readiness, len(procs))
		nextID   atomic.Int64
		acked    atomic.Int64
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	const workers = 16
	for w := range workers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				o := failoverOutcome{id: nextID.Add(1), instance: w % len(procs), start: time.Now()}
				o.status, o.code, o.err = create(procs[o.instance].URL, o.id, fmt.Sprint("plant-", o.id))
				o.end = time.Now()
				if o.err == nil && o.status == 200 {
					acked.Add(1)
				}
				mu.Lock()
				outcomes = append(outcomes, o)
				mu.Unlock()
			}
		})
	}
	probe := &http.Client{Timeout: 5 * time.Second}
	for i, p := range procs {
		wg.Go(func() {
			for {
				r := readiness{at: time.Now(), code: -1}
				if resp, err := probe.Get(p.URL + "/readyz"); err == nil {
					body, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					r.code = errorCode(body)
					if resp.StatusCode == 200 {
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
	stopLoad := sync.OnceFunc(func() {
		close(stop)
		wg.Wait()
	})
	defer stopLoad()
	// waitFor reads what the load recorded under its lock.
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
	// and answered 200; the caller holds mu.
	createdSince := func(since time.Time) []int {
		n := make([]int, len(procs))
		for _, o := range outcomes {
			if o.err == nil && o.status == 200 && o.start.After(since) {
				n[o.instance]++
			}
		}
		return n
	}

	waitFor("creates before the failover", func() bool { return acked.Load() >= 500 })
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
	stopLoad()
	for i, p := range procs {
		select {
		case <-p.Exited():
			t.Fatalf("instance %d exited during the failover: %v\n%s", i, p.Err(), p.Stderr)
		default:
		}
	}

	stored := listAll(t, procs[0].URL)
	var (
		ok, lost, unavailable, unavailableKept, unknown, unknownKept int
		firstOK                                                      = make([]time.Time, len(procs))
	)
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

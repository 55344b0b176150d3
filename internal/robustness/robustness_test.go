package robustness

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/internal/testkit"
)

// The workload every target runs.
const (
	clients = 12
	// ids is how many ids the clients share at any time. Every window
	// they move on to ids no one used before, so that no id's history
	// grows longer than a window's: the checker's cost grows with it.
	ids    = 8
	window = 10 * time.Second
	// rate bounds the operations sent per second by all clients together.
	rate = 1500
	// opTimeout is how long a client waits for an answer; one that does
	// not come in time has an unknown outcome.
	opTimeout = 5 * time.Second
)

// runDuration returns how long a target sends operations:
// PLANTSTORE_TEST_ROBUSTNESS_DURATION when set, short otherwise.
func runDuration(t *testing.T, short time.Duration) time.Duration {
	t.Helper()
	s := os.Getenv("PLANTSTORE_TEST_ROBUSTNESS_DURATION")
	if s == "" {
		return short
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		t.Fatalf("PLANTSTORE_TEST_ROBUSTNESS_DURATION=%q: want a positive duration such as 2m", s)
	}
	return d
}

// A run is one target's traffic and faults.
type run struct {
	servers  []*server
	duration time.Duration
	// kill makes a nemesis SIGKILL a random server and restart it every
	// 1 to 3 s.
	kill bool
	// midway, if set, is another fault, injected once from the test's
	// goroutine halfway through the run, while no server is restarting.
	midway func(t *testing.T)
}

// A runResult is what a run recorded.
type runResult struct {
	history *History
	notSent int64
	kills   int
	faults  int // other than kills
	sent    time.Duration
}

// exec sends random creates, deletes and reads from clients goroutines,
// each with its own connections, to random servers of r, while r's faults
// are injected.
func (r run) exec(t *testing.T) runResult {
	t.Helper()
	seed := rand.Uint64()
	t.Logf("seed %d, %d clients, %d ids per %v, at most %d operations/s, for %v", seed, clients, ids, window, rate, r.duration)
	h := NewHistory()
	var (
		stop    = make(chan struct{})
		wg      sync.WaitGroup
		faultMu sync.Mutex // held while a fault is injected
		notSent atomic.Int64
		faults  int
	)
	finish := sync.OnceFunc(func() {
		close(stop)
		wg.Wait()
	})
	defer finish()
	interval := time.Duration(float64(time.Second) * clients / rate)
	for c := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(c)))
			cl := NewClient(token)
			defer cl.CloseIdleConnections()
			timer := time.NewTimer(0)
			next := time.Now()
			for seq := 0; ; seq++ {
				timer.Reset(time.Until(next))
				select {
				case <-stop:
					return
				case <-timer.C:
				}
				// A client that fell behind does not catch up in a burst.
				if next = next.Add(interval); next.Before(time.Now()) {
					next = time.Now()
				}
				s := r.servers[rng.IntN(len(r.servers))]
				base := s.URL()
				if base == "" {
					continue
				}
				in := randomInput(rng, c, seq, h.Now())
				in.Address = s.name
				call := h.Now()
				out, err := cl.Do(context.Background(), base, in, opTimeout)
				ret := h.Now()
				switch {
				case errors.Is(err, ErrNotSent):
					notSent.Add(1)
				case err != nil:
					t.Error(err)
				default:
					h.Add(c, in, call, out, ret)
				}
			}
		})
	}
	if r.kill {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, clients))
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Second + time.Duration(rng.Int64N(int64(2*time.Second)))):
				}
				s := r.servers[rng.IntN(len(r.servers))]
				faultMu.Lock()
				s.kill()
				err := s.start()
				faultMu.Unlock()
				if err != nil {
					t.Errorf("restarting %s after SIGKILL: %v", s.name, err)
					return
				}
			}
		})
	}
	start := time.Now()
	// sleepUntil waits until d into the run, and reports whether the test
	// still runs.
	sleepUntil := func(d time.Duration) bool {
		select {
		case <-time.After(time.Until(start.Add(d))):
			return true
		case <-t.Context().Done():
			return false
		}
	}
	if r.midway != nil && sleepUntil(r.duration/2) {
		func() {
			faultMu.Lock()
			defer faultMu.Unlock()
			r.midway(t)
			faults++
		}()
	}
	sleepUntil(r.duration)
	finish()
	res := runResult{history: h, notSent: notSent.Load(), faults: faults, sent: time.Since(start)}
	for _, s := range r.servers {
		res.kills += s.kills
	}
	return res
}

// randomInput returns client's seq-th operation, at time now of the
// history: a create (with a name no other create uses), a delete or a
// read of one of the ids of now's window.
func randomInput(rng *rand.Rand, client, seq int, now int64) Input {
	in := Input{ID: 1 + (now/int64(window))*ids + rng.Int64N(ids)}
	switch n := rng.IntN(20); {
	case n < 8:
		in.Kind = Create
		in.Name = fmt.Sprintf("c%d-%d", client, seq)
		switch rng.IntN(3) {
		case 1:
			in.HasTag = true
		case 2:
			in.Tag, in.HasTag = fmt.Sprint("t", rng.IntN(10)), true
		}
	case n < 13:
		in.Kind = Delete
	default:
		in.Kind = Read
	}
	return in
}

// outDir returns where a failed run's visualization goes:
// PLANTSTORE_TEST_ROBUSTNESS_OUT, or the system's temporary directory, which
// outlives the test.
func outDir() string {
	if d := os.Getenv("PLANTSTORE_TEST_ROBUSTNESS_OUT"); d != "" {
		return d
	}
	return os.TempDir()
}

// check checks res's history and logs the run's figures. The
// visualization of a history that is not linearizable is written in dir.
func check(t *testing.T, res runResult, dir string) Report {
	t.Helper()
	ops := res.history.Operations()
	var byResult [Unknown + 1]int
	for _, op := range ops {
		byResult[op.Output.(Output).Result]++
	}
	name := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	path := filepath.Join(dir, fmt.Sprintf("plantstore-robustness-%s-%s.html", name, time.Now().Format("20060102-150405")))
	rep, err := Check(ops, max(time.Minute, res.sent), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d operations in %v (%.0f/s): %d ok, %d conflict, %d not found, %d unavailable, %d of unknown outcome; %d not sent (server down); %d kills, %d other faults; check %v: %v",
		len(ops), res.sent.Round(time.Millisecond), float64(len(ops))/res.sent.Seconds(),
		byResult[OK], byResult[Conflict], byResult[NotFound], byResult[Unavailable], byResult[Unknown],
		res.notSent, res.kills, res.faults, rep.Took.Round(time.Millisecond), rep.Result)
	if byResult[OK] < 100 {
		t.Errorf("only %d operations succeeded: the run checked too little", byResult[OK])
	}
	return rep
}

// requireLinearizable fails t unless rep says the history is linearizable.
func requireLinearizable(t *testing.T, rep Report) {
	t.Helper()
	switch rep.Result {
	case porcupine.Ok:
	case porcupine.Illegal:
		t.Fatalf("history is not linearizable; visualization: %s\n%s", rep.Visualization, rep.Explanation)
	default:
		t.Fatalf("the checker could not decide in time; partial linearizations: %s", rep.Visualization)
	}
}

// TestMemoryLinearizable runs the workload against one instance on
// memory storage, without faults.
func TestMemoryLinearizable(t *testing.T) {
	t.Parallel()
	s := startServer(t, "memory", "-db", "memory")
	res := run{servers: []*server{s}, duration: runDuration(t, 4*time.Second)}.exec(t)
	requireLinearizable(t, check(t, res, outDir()))
}

// TestSQLiteKilledLinearizable runs the workload against one instance on
// a SQLite file, SIGKILLed and restarted on the same file every few
// seconds.
func TestSQLiteKilledLinearizable(t *testing.T) {
	t.Parallel()
	testkit.Long(t, "kills and restarts an instance on SQLite under load for 8 s")
	db := filepath.Join(t.TempDir(), "p.db")
	s := startServer(t, "sqlite", "-db", db)
	res := run{servers: []*server{s}, duration: runDuration(t, 8*time.Second), kill: true}.exec(t)
	if res.kills == 0 {
		t.Errorf("no kill in %v", res.sent)
	}
	requireLinearizable(t, check(t, res, outDir()))
}

// TestForgetfulStorageIsNotLinearizable shows that the suite can fail: a
// memory instance restarted after SIGKILL has forgotten every plant, and
// the checker must find that out.
func TestForgetfulStorageIsNotLinearizable(t *testing.T) {
	t.Parallel()
	s := startServer(t, "memory", "-db", "memory")
	res := run{servers: []*server{s}, duration: 4 * time.Second, kill: true}.exec(t)
	if res.kills == 0 {
		t.Fatalf("no kill in %v", res.sent)
	}
	// That Check writes the visualization is TestCheckWritesVisualization.
	if rep := check(t, res, t.TempDir()); rep.Result != porcupine.Illegal {
		t.Fatalf("check = %v after %d restarts of memory storage, want %v", rep.Result, res.kills, porcupine.Illegal)
	}
}

// TestPostgresLinearizable runs the workload against three instances
// sharing a private PostgreSQL cluster: instances are SIGKILLed and
// restarted every few seconds, and halfway through the database itself
// is restarted as after a crash (pg_ctl stop -m immediate).
func TestPostgresLinearizable(t *testing.T) {
	t.Parallel()
	testkit.Long(t, "kills instances and restarts PostgreSQL under load for 10 s")
	binary(t)
	db := pgtest.Start(t)
	dsn := db.DSN() + "&connect_timeout=2"
	var servers []*server
	for i := range 3 {
		servers = append(servers, startServer(t, fmt.Sprint("pg", i), "-db", dsn))
	}
	res := run{servers: servers, duration: runDuration(t, 10*time.Second), kill: true, midway: func(t *testing.T) {
		start := time.Now()
		db.Restart(t)
		t.Logf("PostgreSQL restarted (-m immediate) in %v", time.Since(start).Round(time.Millisecond))
	}}.exec(t)
	if res.kills == 0 || res.faults == 0 {
		t.Errorf("%d kills and %d database restarts in %v, want some of each", res.kills, res.faults, res.sent)
	}
	requireLinearizable(t, check(t, res, outDir()))
}

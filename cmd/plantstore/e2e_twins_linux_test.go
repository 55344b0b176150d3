//go:build linux

package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/plantstore/plantstore/internal/testkit"
)

// pgSocketDir is where the test PostgreSQL server's Unix socket is looked
// for: a process in a network namespace of its own has no route to the
// server's 127.0.0.1.
const pgSocketDir = "/var/run/postgresql"

// startInNamespace starts bin with args, as [testkit.Start] does, in a
// network and a UTS namespace of its own, under host name host and with
// only its loopback interface up, as a container is. It skips t when the
// system refuses the namespaces or lacks unshare(1) or ip(8).
func startInNamespace(t *testing.T, host, bin string, env []string, args ...string) *testkit.Process {
	t.Helper()
	for _, prog := range []string{"unshare", "ip", "hostname"} {
		if _, err := exec.LookPath(prog); err != nil {
			t.Skipf("SKIPPING: %s is not installed; this test runs each instance in namespaces of its own (util-linux, iproute2)", prog)
		}
	}
	ns := []string{"--uts", "--net"}
	if os.Geteuid() != 0 {
		ns = append(ns, "--map-root-user")
	}
	if out, err := exec.Command("unshare", append(ns, "--", "ip", "link", "set", "lo", "up")...).CombinedOutput(); err != nil {
		t.Skipf("SKIPPING: the system refuses new network and UTS namespaces (unshare %s: %v: %s); this test needs them to run two instances on one address", strings.Join(ns, " "), err, out)
	}
	// unshare and sh exec what follows them: the Process is bin itself.
	script := `hostname "$0" && ip link set lo up && exec "$@"`
	return testkit.Start(t, "unshare", env, append(ns, append([]string{"--", "sh", "-c", script, host, bin}, args...)...)...)
}

// inNetNS runs fn on an OS thread moved into the network namespace of
// process pid, so that the sockets fn opens are that namespace's. The
// thread goes back to its own namespace after fn, or, should that fail,
// ends with the goroutine that ran fn.
func inNetNS(pid int, fn func() error) error {
	target, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		return err
	}
	defer target.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer self.Close()
		if err := setns(target); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("setns to the network namespace of process %d: %w", pid, err)
			return
		}
		fnErr := fn()
		if err := setns(self); err != nil {
			errc <- errors.Join(fnErr, fmt.Errorf("setns back: %w", err)) // the thread stays locked, and ends
			return
		}
		runtime.UnlockOSThread()
		errc <- fnErr
	}()
	return <-errc
}

func setns(f *os.File) error {
	return unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
}

// nsClient returns an HTTP client whose connections are opened in the
// network namespace of process pid.
func nsClient(pid int) *http.Client {
	return &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (c net.Conn, err error) {
			err = inNetNS(pid, func() error {
				c, err = (&net.Dialer{}).DialContext(ctx, network, addr)
				return err
			})
			return c, err
		}},
	}
}

// A holdingSubscriber answers each delivery 204 once gate is closed, and
// counts the deliveries it answered by plant id.
type holdingSubscriber struct {
	gate chan struct{}

	mu        sync.Mutex
	received  int
	delivered map[int64]int
	bad       []string
}

func (s *holdingSubscriber) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var p struct{ ID int64 }
	if err == nil {
		err = json.Unmarshal(body, &p)
	}
	s.mu.Lock()
	s.received++
	if err != nil {
		s.bad = append(s.bad, fmt.Sprintf("delivery %q: %v", body, err))
	}
	s.mu.Unlock()
	if err != nil {
		http.Error(w, "bad delivery", http.StatusBadRequest)
		return
	}
	select {
	case <-s.gate:
	case <-r.Context().Done():
		return // the sender is gone: nothing was delivered
	}
	s.mu.Lock()
	s.delivered[p.ID]++
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// counts returns the requests received, the deliveries answered, the
// plants delivered and the plants delivered more than once.
func (s *holdingSubscriber) counts() (received, delivered, plants, twice int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.delivered {
		delivered += n
		if n > 1 {
			twice++
		}
	}
	return s.received, delivered, len(s.delivered), twice
}

// serveIn serves s on addr in the network namespace of process pid.
func serveIn(t *testing.T, pid int, addr string, h http.Handler) {
	t.Helper()
	var ln net.Listener
	if err := inNetNS(pid, func() (err error) {
		ln, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		t.Skipf("SKIPPING: cannot open a socket in an instance's network namespace: %v", err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// unixSocketDSN returns the URL of database dsn through the PostgreSQL
// Unix socket in pgSocketDir, or skips t when there is none.
func unixSocketDSN(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	if port == "" {
		port = "5432"
	}
	if _, err := os.Stat(fmt.Sprintf("%s/.s.PGSQL.%s", pgSocketDir, port)); err != nil {
		t.Skipf("SKIPPING: the test PostgreSQL server has no Unix socket in %s (%v); an instance in a network namespace of its own reaches it only through one", pgSocketDir, err)
	}
	s := *u
	s.Host = ""
	q := s.Query()
	q.Set("host", pgSocketDir)
	q.Set("port", port)
	s.RawQuery = q.Encode()
	return s.String()
}

// createIn creates plants first…first+n-1 through the instance listening
// on addr in the network namespace of process pid.
func createIn(t *testing.T, pid int, addr string, first, n int64) {
	t.Helper()
	c := nsClient(pid)
	for id := first; id < first+n; id++ {
		if status, code, err := testkit.Create(t.Context(), c, "http://"+addr, procToken, id, "p"); status != 200 {
			t.Fatalf("create %d: %d, error %d, %v", id, status, code, err)
		}
	}
}

// TestTwinRestartsBesideLiveTwin runs two instances as two containers of
// one service with one host name would: each in network and UTS
// namespaces of its own, both named "twin" and both listening on
// 127.0.0.1:8080, on one PostgreSQL database, delivering to one
// subscriber. Each holds deliveries that the subscriber keeps unanswered.
// It kills the first with SIGKILL and starts it
// again in a new namespace, with the same host name and address, as a
// container restarts: the restarted instance must take back what its
// killed run held, and nothing of its live twin's, so that each plant is
// delivered once. With the same state directory, the run lock shows the
// killed run gone at once to the restarted instance; with a new one, as a
// container recreated, the killed run's record must expire first (10 s),
// and whichever of the restarted instance and the live twin, both runs of
// the instance, finds it expired first takes back what it held.
func TestTwinRestartsBesideLiveTwin(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the binary three times")
	}
	t.Parallel()
	for _, tt := range []struct {
		name      string
		sameState bool
	}{
		{"same state directory", true},
		{"new state directory", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			testTwinRestart(t, tt.sameState)
		})
	}
}

func testTwinRestart(t *testing.T, sameState bool) {
	const (
		n       = 40
		host    = "twin"
		addr    = "127.0.0.1:8080"
		subAddr = "127.0.0.1:9000"
	)
	dsn, db := twinDatabase(t)

	gate := make(chan struct{})
	sub := &holdingSubscriber{gate: gate, delivered: map[int64]int{}}
	stateA, stateB := t.TempDir(), t.TempDir()
	env := func(state string) []string {
		return testkit.Env("PLANTSTORE_TOKENS="+procToken, "PLANTSTORE_WEBHOOK_SECRET="+testkit.WebhookSecret, "STATE_DIRECTORY="+state)
	}
	args := []string{"-addr", addr, "-db", dsn, "-webhook", "http://" + subAddr + "/hook", "-webhook-lease", "1h"}
	bin := binary(t)

	first := startInNamespace(t, host, bin, env(stateA), args...)
	serveIn(t, first.Cmd.Process.Pid, subAddr, sub)
	second := startInNamespace(t, host, bin, env(stateB), args...)
	serveIn(t, second.Cmd.Process.Pid, subAddr, sub)
	createIn(t, first.Cmd.Process.Pid, addr, 0, n/2)
	testkit.WaitUntil(t, 30*time.Second, "the subscriber to hold the first instance's deliveries", func() bool {
		received, _, _, _ := sub.counts()
		return received >= 4
	})
	createIn(t, second.Cmd.Process.Pid, addr, n/2, n/2)
	testkit.WaitUntil(t, 30*time.Second, "the subscriber to hold both instances' deliveries", func() bool {
		received, _, _, _ := sub.counts()
		return received >= 8
	})
	if err := first.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.Exited()

	if !sameState {
		stateA = t.TempDir()
	}
	restarted := startInNamespace(t, host, bin, env(stateA), args...)
	serveIn(t, restarted.Cmd.Process.Pid, subAddr, sub)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("restarted:\n%s\nlive twin:\n%s", restarted.Stderr, second.Stderr)
		}
	})
	testkit.WaitUntil(t, 30*time.Second, "a run of the instance to take back its killed run's deliveries", func() bool {
		const took = "took back the deliveries"
		if sameState {
			return strings.Contains(restarted.Stderr.String(), took+" this instance's previous run held") &&
				strings.Contains(restarted.Stderr.String(), `known_gone_by="run lock"`)
		}
		return strings.Contains(restarted.Stderr.String(), took) || strings.Contains(second.Stderr.String(), took)
	})
	close(gate)
	stopWhenDelivered(t, db, second, restarted)
	received, delivered, plants, twice := sub.counts()
	t.Logf("%d events, a twin restarted beside a live one: %d requests received, %d deliveries, %d plants, %d delivered more than once",
		n, received, delivered, plants, twice)
	for _, b := range sub.bad {
		t.Errorf("subscriber: %s", b)
	}
	if strings.Contains(second.Stderr.String(), "this run was taken for gone") {
		t.Errorf("the live twin was taken for gone:\n%s", second.Stderr)
	}
	if plants != n || delivered != n {
		t.Errorf("%d deliveries of %d plants (%d more than once), want %d deliveries, one of each plant\nrestarted:\n%s\nlive twin:\n%s",
			delivered, plants, twice, n, restarted.Stderr, second.Stderr)
	}
}

// twinDatabase makes a new PostgreSQL database for the twins and returns
// its URL over PostgreSQL's Unix socket, which the twins reach from their
// namespaces, and the test's own connection to it.
func twinDatabase(t *testing.T) (dsn string, db *sql.DB) {
	t.Helper()
	pg := testkit.PostgresDatabase(t)
	db, err := sql.Open("pgx", pg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return unixSocketDSN(t, pg), db
}

// stopWhenDelivered waits until the outbox in db holds no event and no
// delivery, every event delivered and ended, then stops the instances.
func stopWhenDelivered(t *testing.T, db *sql.DB, instances ...*testkit.Process) {
	t.Helper()
	testkit.WaitUntil(t, 2*time.Minute, "every event delivered and ended", func() bool {
		events, deliveries := outboxRows(t, db)
		return events == 0 && deliveries == 0
	})
	for _, p := range instances {
		if err := p.Stop(t); err != nil {
			t.Errorf("instance exited with %v\n%s", err, p.Stderr)
		}
	}
}

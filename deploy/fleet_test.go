// Package deploy_test starts the binary as deploy/ describes it (fleet.sh,
// the systemd unit, the Dockerfile, Patroni and PgBouncer), and runs the
// scenarios of several instances: what clients see when an instance dies
// under load, a database failover, webhooks shared by a fleet.
package deploy_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/internal/testkit"
)

const token = "fleet-test-token"

// fleet is a running deploy/fleet.sh.
type fleet struct {
	dir     string
	url     string // HAProxy's, as $FLEET_DIR/url holds it
	started string // what fleet.sh start printed
	// instances are the plantstore processes' addresses, ps1 first, as
	// fleet.sh start printed them.
	instances []string
	env       []string
}

// fleetLine is what fleet.sh start prints: HAProxy's address and each
// instance's.
var fleetLine = regexp.MustCompile(`plantstore fleet: (http://\S+) -> ps1=(\S+) ps2=(\S+) ps3=(\S+);`)

// startFleet builds plantstore and runs fleet.sh start with three
// instances and HAProxy, and stops the fleet when the test ends. With db
// "memory" each instance keeps its own plants in memory and no port is
// set, so that the script picks them; else the instances share a private
// PostgreSQL cluster, on free loopback ports the test sets. It skips the
// test, saying why, when this machine lacks what the script needs.
func startFleet(t *testing.T, db string) *fleet {
	t.Helper()
	for _, prog := range []string{"haproxy", "curl"} {
		if _, err := exec.LookPath(prog); err != nil {
			t.Skipf("SKIPPING: %s is not installed (Debian: apt-get install %s; .ci/run installs haproxy)", prog, prog)
		}
	}
	// The postgres user must reach the cluster's directory, which
	// t.TempDir's private parents would forbid.
	dir, err := os.MkdirTemp("", "fleet-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f := &fleet{dir: dir, env: testkit.Env("FLEET_DIR="+dir, "FLEET_BIN="+testkit.Build(t, "../cmd/plantstore"), "PLANTSTORE_TOKENS="+token)}
	if db == "memory" {
		f.env = append(f.env, "FLEET_DB=memory")
	} else {
		pgtest.Credential(t, "PostgreSQL") // fleet.sh runs it as the postgres user when root
		ports := freePorts(t, 5)
		f.env = append(f.env, "FLEET_PG_BIN="+pgtest.BinDir(t),
			"FLEET_LB_ADDR=127.0.0.1:"+ports[0], "FLEET_PORTS="+strings.Join(ports[1:4], " "), "FLEET_PG_PORT="+ports[4])
	}
	// PLANTSTORE_TEST_KEEP_FLEET=1 keeps the directory, with HAProxy's and
	// each instance's log, for a failure to be looked into.
	t.Cleanup(func() {
		f.script(t, "stop")
		if os.Getenv("PLANTSTORE_TEST_KEEP_FLEET") == "" {
			os.RemoveAll(dir)
		} else {
			t.Logf("kept %s", dir)
		}
	})
	f.started = f.script(t, "start")
	t.Logf("fleet.sh start: %s", strings.TrimSpace(f.started))
	printed := fleetLine.FindStringSubmatch(f.started)
	if printed == nil {
		t.Fatalf("fleet.sh start printed %q, want HAProxy's address and each instance's", f.started)
	}
	url, err := os.ReadFile(f.file("url"))
	if err != nil {
		t.Fatal(err)
	}
	f.url, f.instances = strings.TrimSpace(string(url)), printed[2:]
	return f
}

// script runs fleet.sh with args and the fleet's settings, and returns its
// output.
func (f *fleet) script(t *testing.T, args ...string) string {
	t.Helper()
	c := exec.Command("./fleet.sh", args...)
	c.Env = f.env
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("fleet.sh %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// file returns the path of name in the fleet's directory.
func (f *fleet) file(name string) string { return filepath.Join(f.dir, name) }

// pid returns the process id fleet.sh recorded for name (ps1, haproxy…).
func (f *fleet) pid(t *testing.T, name string) int {
	t.Helper()
	b, err := os.ReadFile(f.file(name + ".pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s.pid: %v", name, err)
	}
	return pid
}

// serverStatus asks HAProxy's stats socket for each server's status (UP,
// DOWN…).
func (f *fleet) serverStatus(t *testing.T) map[string]string {
	t.Helper()
	status, err := haproxyStatus(f.file("haproxy.sock"))
	if err != nil {
		t.Fatal(err)
	}
	return status
}

// haproxyStatus asks the HAProxy stats socket sock for each server's
// status (UP, DOWN…).
func haproxyStatus(sock string) (map[string]string, error) {
	c, err := net.Dial("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("HAProxy's stats socket: %w", err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "show stat\n"); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(c)
	var header []string
	status := map[string]string{}
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ",")
		if h, ok := strings.CutPrefix(sc.Text(), "# "); ok {
			header = strings.Split(h, ",")
			continue
		}
		for i, name := range header {
			if name == "status" && i < len(fields) && len(fields) > 1 {
				status[fields[1]] = fields[i]
			}
		}
	}
	return status, sc.Err()
}

// freePorts returns n distinct loopback ports nothing listens on.
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var ports []string
	for len(ports) < n {
		port, err := testkit.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if p := strconv.Itoa(port); !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	return ports
}

// waitRefused waits until nothing listens on addr any more, as when the
// process that did has died (its last thread gone, its sockets closed), and
// returns when it noticed. It polls every 100 µs, not as testkit.WaitUntil
// does, because the time it returns is a measurement.
func waitRefused(t *testing.T, addr string) time.Time {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Microsecond) {
		c, err := net.Dial("tcp", addr)
		if errors.Is(err, syscall.ECONNREFUSED) {
			return time.Now()
		}
		if err == nil {
			c.Close()
		}
	}
	t.Fatalf("%s still accepts connections 10 s after SIGKILL", addr)
	return time.Time{}
}

// TestFleetUnderLoad runs fleet.sh's fleet on PostgreSQL under clients
// creating plants through HAProxy, each case with a load of its own, on
// ids of its own, and checks what the clients saw:
//
//   - "restart": fleet.sh restart ps2 brings the instance back on its port
//     with a new process, HAProxy takes it back, every acknowledged create
//     is stored, and no client saw a failure (when fleet.sh could drain the
//     instance in HAProxy first, with socat; else only requests in flight
//     during the restart may fail, as outcome unknown).
//   - "SIGKILL": SIGKILL of ps2 fails only creates in flight while it
//     died, answered error 504 (outcome unknown) or with the connection
//     closed, no more than were in flight, none after it, and every
//     acknowledged create is stored. (HAProxy's own error 503, with every
//     instance down, is TestMemoryFleet's.)
//
// Each case is one piece: each step acts on what the steps before it left.
func TestFleetUnderLoad(t *testing.T) {
	t.Parallel()
	testkit.Long(t, "restarts an instance of a fleet under load, then kills instances under 32 clients' load, about a minute")
	f := startFleet(t, "postgres")
	t.Cleanup(client.CloseIdleConnections)

	t.Run("restart", func(t *testing.T) {
		before := f.pid(t, "ps2")
		l := startLoad(t, []string{f.url}, loadOptions{workers: 8})
		l.waitAcked(t, 500, 90*time.Second)
		restartStart := time.Now()
		out := f.script(t, "restart", "ps2")
		restartEnd := time.Now()
		t.Logf("fleet.sh restart ps2 (%v): %s", restartEnd.Sub(restartStart).Round(time.Millisecond), strings.TrimSpace(out))
		// Without socat, fleet.sh cannot drain the instance in HAProxy
		// first: a request handed to it as it stops listening then fails,
		// as outcome unknown.
		drained := strings.Contains(out, "ps2 drained in HAProxy")
		if !drained {
			t.Logf("ps2 was not drained first: failures while it restarted are allowed")
		}
		if after := f.pid(t, "ps2"); after == before {
			t.Errorf("ps2 has pid %d after the restart, as before it", after)
		}
		if want := "http://" + f.instances[1]; !strings.Contains(out, want) {
			t.Errorf("fleet.sh restart ps2 printed %q, want it back on %s", out, want)
		}
		testkit.WaitUntil(t, 90*time.Second, "HAProxy to take ps2 back", func() bool { return f.serverStatus(t)["ps2"] == "UP" })
		upAgain := time.Since(restartStart)
		l.waitAcked(t, 500, 90*time.Second)
		l.halt()

		checkStored(t, f.url, l.ackedIDs())
		outcomes, failed := l.sent(), 0
		for _, o := range outcomes {
			if o.code == 200 {
				continue
			}
			failed++
			switch {
			case drained:
				// HAProxy sent ps2 nothing new once drained, and SIGTERM
				// let it finish what it had.
				t.Errorf("create %d failed (%d, error %d, %v; sent %v after the restart began), want none to fail",
					o.id, o.status, o.code, o.err, o.start.Sub(restartStart).Round(time.Millisecond))
			case o.end.Before(restartStart) || o.start.After(restartEnd):
				t.Errorf("create %d failed (%d, error %d, %v) outside the restart", o.id, o.status, o.code, o.err)
			case o.err == nil && o.code != 504:
				t.Errorf("create %d = %d with error %d during the restart, want error 504 or a closed connection", o.id, o.status, o.code)
			}
		}
		t.Logf("%d creates through HAProxy, %d acknowledged, %d failed; ps2 restarted in %v and UP in HAProxy %v after the restart began",
			len(outcomes), len(outcomes)-failed, failed, restartEnd.Sub(restartStart).Round(time.Millisecond), upAgain.Round(time.Millisecond))
	})

	t.Run("SIGKILL", func(t *testing.T) {
		l := startLoad(t, []string{f.url}, loadOptions{workers: 32, from: 1_000_000})
		l.waitAcked(t, 2000, 90*time.Second)
		victim := f.pid(t, "ps2")
		inFlightAtKill := l.inFlight.Load()
		killed := time.Now()
		if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// The process takes a few milliseconds to die, and until it has,
		// its listening socket still completes connections: a request sent
		// then is in flight at the kill as much as one sent before it.
		dead := waitRefused(t, f.instances[1])
		testkit.WaitUntil(t, 90*time.Second, "HAProxy to mark the killed instance down", func() bool { return f.serverStatus(t)["ps2"] == "DOWN" })
		markedDown := time.Since(killed)
		l.waitAcked(t, 2000, 90*time.Second)
		l.halt()
		if st := f.serverStatus(t); st["ps1"] != "UP" || st["ps3"] != "UP" {
			t.Errorf("HAProxy's servers after the kill: %v, want ps1 and ps3 UP", st)
		}

		stored := testkit.Plants(t, client, f.url, token)
		var ok, lost, startedWhileDying, unknown, closed, failedKept int
		outcomes := l.sent()
		for _, o := range outcomes {
			if !o.start.Before(killed) && o.start.Before(dead) {
				startedWhileDying++
			}
			if o.err == nil && o.status == 200 {
				ok++
				if stored[o.id] != fmt.Sprint("plant-", o.id) {
					lost++
					t.Errorf("create %d was answered 200 but is not stored", o.id)
				}
				continue
			}
			if _, isStored := stored[o.id]; isStored {
				failedKept++
			}
			switch {
			case errors.Is(o.err, io.EOF) || errors.Is(o.err, syscall.ECONNRESET):
				// HAProxy closes a client connection without an answer
				// when a request after the connection's first fails this
				// way, so that the client may retry it if it is idempotent.
				closed++
			case o.err != nil:
				t.Errorf("create %d: %v (connection %s), want an answer or a closed connection", o.id, o.err, o.conn)
			case o.code == 504:
				unknown++
			default:
				t.Errorf("create %d = %d with error %d, want 200, or error 504 when in flight at the kill", o.id, o.status, o.code)
			}
			if !o.start.Before(dead) || o.end.Before(killed) {
				t.Errorf("create %d failed (%d, error %d, %v) but was not in flight while the instance died (sent %v after the kill, answered %v after it; it died %v after it)",
					o.id, o.status, o.code, o.err, o.start.Sub(killed), o.end.Sub(killed), dead.Sub(killed))
			}
		}
		if failed := int64(unknown + closed); failed > inFlightAtKill+int64(startedWhileDying) {
			t.Errorf("%d creates failed, more than the %d in flight at the kill and the %d sent while the instance died",
				failed, inFlightAtKill, startedWhileDying)
		}
		t.Logf("%d creates through HAProxy: %d acknowledged, %d of them lost; SIGKILL with %d in flight (on all three instances), %d more sent in the %v it took to die; %d failed: %d with error 504, %d with the connection closed; %d of those were stored; HAProxy marked the instance down %v after the kill",
			len(outcomes), ok, lost, inFlightAtKill, startedWhileDying, dead.Sub(killed).Round(100*time.Microsecond),
			unknown+closed, unknown, closed, failedKept, markedDown.Round(time.Millisecond))
	})
}

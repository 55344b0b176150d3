package deploy_test

import (
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit"
)

// A fault is one way the leader fails: inject does it to the cluster's
// leader. The cluster has a leader again when [patroniCluster.primary]
// finds a node other than the one that failed, or, with newPostmaster, a
// new postmaster on any node.
type fault struct {
	name          string
	inject        func(t *testing.T, c *patroniCluster, leader *patroniNode)
	newPostmaster bool
}

var faults = []fault{
	{
		name: "SIGKILL of the leader's Patroni",
		inject: func(t *testing.T, c *patroniCluster, leader *patroniNode) {
			d := leader.daemon()
			if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-d.exited
		},
	},
	{
		name: "patronictl switchover --force",
		inject: func(t *testing.T, c *patroniCluster, leader *patroniNode) {
			out, err := exec.Command("patronictl", "-c", c.cfg, "switchover", "--leader", leader.name, "--force").CombinedOutput()
			if err != nil {
				t.Fatalf("patronictl switchover: %v\n%s", err, out)
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			t.Logf("patronictl switchover --leader %s --force: %s", leader.name, lines[len(lines)-1])
		},
	},
	{
		name: "kill -9 of the leader's postmaster",
		inject: func(t *testing.T, c *patroniCluster, leader *patroniNode) {
			pid := leader.postmasterPID()
			if pid == 0 {
				t.Fatalf("%s's postmaster does not run", leader.name)
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
		},
		newPostmaster: true,
	},
}

// primary returns the node whose Patroni answers GET /primary with 200 and
// a role of primary (it holds the leader key and its PostgreSQL runs as
// primary, not read-only), as HAProxy's check asks, or nil.
func (c *patroniCluster) primary() *patroniNode {
	for _, n := range c.nodes {
		var body struct{ Role string }
		if getJSON("http://127.0.0.1:"+n.restPort+"/primary", 500*time.Millisecond, &body) && (body.Role == "master" || body.Role == "primary") {
			return n
		}
	}
	return nil
}

// A faultReport is what one fault did.
type faultReport struct {
	fault
	from, to             string        // the leader before and after
	leaderBack, answered time.Duration // from the fault to a leader again, to every instance acknowledging again
	window               window
	acked, lost          int
	duplicates           int // deliveries of a webhook-id after its first, during this fault's phase
}

// runFault injects f under the load, waits until the cluster has a leader
// again and every instance acknowledges creates again, brings the cluster
// back to three healthy nodes, and checks that no acknowledged create was
// lost and that each was delivered.
//
// It is one piece: each step waits on what the one before it left.
func runFault(t *testing.T, c *patroniCluster, l *load, recv *hookReceiver, instances []*testkit.Process, f fault) faultReport {
	t.Helper()
	leader := c.primary()
	if leader == nil {
		t.Fatal("no leader before the fault")
	}
	oldPM := leader.postmasterPID()
	dupsBefore, _ := recv.duplicates()
	at := time.Now()
	f.inject(t, c, leader)

	var now *patroniNode
	testkit.WaitUntil(t, 2*time.Minute, "a leader again after "+f.name, func() bool {
		if now = c.primary(); now == nil {
			return false
		}
		pm := now.postmasterPID()
		return now != leader || f.newPostmaster && pm != 0 && pm != oldPM
	})
	r := faultReport{fault: f, from: leader.name, to: now.name, leaderBack: time.Since(at)}
	testkit.WaitUntil(t, 2*time.Minute, "every instance to acknowledge creates again", func() bool { return l.allAckSince(at.Add(r.leaderBack)) })
	r.answered = time.Since(at)
	if !leader.daemon().alive() {
		leader.start(t) // the node rejoins as a replica, rewound if need be
	}
	c.waitHealthy(t, 3*time.Minute)
	// Enough answers after the cluster is whole again that the window has
	// closed.
	l.waitAcked(t, 300, time.Minute)
	r.window = l.window(at, time.Now())

	ids := l.ackedIDs()
	r.acked = len(ids)
	r.lost = checkStored(t, l.urls[0], ids)
	recv.waitDelivered(t, ids, 2*time.Minute)
	dups, _ := recv.duplicates()
	r.duplicates = dups - dupsBefore
	checkRunning(t, instances, f.name)
	return r
}

// TestPatroniFailover runs three plantstore instances on a three-node
// Patroni cluster (synchronous_mode) through PgBouncer in transaction mode
// and HAProxy, which sends to the node whose Patroni answers /primary,
// with 16 clients creating plants all along, and fails the leader three
// ways in turn: SIGKILL of its Patroni, a switchover, SIGKILL of its
// postmaster. After each, the instances must acknowledge creates again by
// themselves, no acknowledged create may be lost, and each must reach the
// webhook receiver; it logs the error window, the failed answers by code,
// the answers per second in the window and the duplicate deliveries.
//
// It is one piece: each fault acts on the cluster and the load the one
// before it left.
func TestPatroniFailover(t *testing.T) {
	t.Parallel()
	testkit.Long(t, "fails the leader of a Patroni cluster three ways in turn, about a minute")
	start := time.Now()
	c := startPatroniCluster(t)
	t.Logf("cluster healthy %v after the start", time.Since(start).Round(100*time.Millisecond))
	recv := newHookReceiver(t)
	instances := startInstances(t, c.dbURL, recv, 3, c.dir)
	l := startLoad(t, urls(instances), loadOptions{workers: 16, patient: true})
	l.waitAcked(t, 300, time.Minute)

	var reports []faultReport
	for _, f := range faults {
		r := runFault(t, c, l, recv, instances, f)
		reports = append(reports, r)
		logFault(t, r)
	}
	l.halt()
	ids := l.ackedIDs()
	lost := checkStored(t, l.urls[len(l.urls)-1], ids)
	recv.waitDelivered(t, ids, 2*time.Minute)
	dups, deliveries := recv.duplicates()
	w := l.window(start, time.Now())
	t.Logf("in all: %d creates answered, %d acknowledged, %d of them lost; %d webhook deliveries, %d duplicates; non-200 answers: %s; %v from the start",
		w.answers, len(ids), lost, deliveries, dups, codeCounts(w.codes), time.Since(start).Round(time.Second))
	for _, r := range reports {
		if r.lost != 0 {
			t.Errorf("%s: %d acknowledged creates lost", r.name, r.lost)
		}
		// Error 503 says nothing was kept, 504 that the outcome is
		// unknown, and no answer (0) is outcome unknown too: anything
		// else is a failure plantstore did not classify.
		for code, n := range r.window.codes {
			if code != 503 && code != 504 && code != 0 {
				t.Errorf("%s: %d answers with error %d, want only 503, 504 or no answer; the first: %q; the instances' logs say:\n%s",
					r.name, n, code, l.odd(), errorLines(c.dir, len(instances)))
			}
		}
	}
}

// logFault logs a fault's report.
func logFault(t *testing.T, r faultReport) {
	t.Helper()
	w := r.window
	span := "none failed"
	if w.failed > 0 {
		span = w.last.Sub(w.first).Round(10 * time.Millisecond).String()
	}
	t.Logf("%s (%s -> %s): leader again after %v, every instance acknowledging again after %v (ttl %d s, loop_wait %d s); error window %s; %d of %d answers not 200: %s (%d of the 503s with Retry-After); %d acknowledged so far, %d lost; %d duplicate webhook deliveries",
		r.name, r.from, r.to, r.leaderBack.Round(10*time.Millisecond), r.answered.Round(10*time.Millisecond),
		patroniTTL, patroniLoopWait, span, w.failed, w.answers, codeCounts(w.codes), w.retryAfter, r.acked, r.lost, r.duplicates)
	if len(w.perSecond) > 0 {
		t.Logf("  answers per second in the window: %s", strings.Join(w.perSecond, "; "))
		t.Logf("  answers not 200 in the window: %d to the 8 clients that retry at once, %d to the 8 that honour Retry-After",
			w.failedEager, w.failedPatient)
	}
}

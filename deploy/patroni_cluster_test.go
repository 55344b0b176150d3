package deploy_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/pgtest"
	"github.com/plantstore/plantstore/internal/testkit"
)

// The Patroni cluster's timing (deploy/patroni/patroni.yml says why): shorter
// than Patroni's defaults (30, 10, 10) so that the test's failovers are quick.
const (
	patroniTTL          = 10
	patroniLoopWait     = 2
	patroniRetryTimeout = 4
)

// A daemon is a long-running process the test started.
type daemon struct {
	name   string
	cmd    *exec.Cmd
	log    string
	exited chan struct{}
}

// startDaemon starts cmd in a process group of its own with its output
// appended to log, and stops it when the test ends (see stop) or the test
// process dies.
func startDaemon(t *testing.T, name string, cmd *exec.Cmd, log string) *daemon {
	t.Helper()
	f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	// Should the test process die, SIGTERM stops the daemon (a Patroni
	// then stops its PostgreSQL).
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	d := &daemon{name: name, cmd: cmd, log: log, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(func() { d.stop(t, 30*time.Second) })
	return d
}

// stop sends SIGTERM and waits up to grace for the process to exit, then
// SIGKILLs it. It does nothing to a process that has exited.
func (d *daemon) stop(t *testing.T, grace time.Duration) {
	select {
	case <-d.exited:
		return
	default:
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(grace):
		t.Logf("%s did not exit within %v of SIGTERM: SIGKILL", d.name, grace)
		d.cmd.Process.Kill()
		<-d.exited
	}
}

// alive tells whether the process still runs.
func (d *daemon) alive() bool {
	select {
	case <-d.exited:
		return false
	default:
		return true
	}
}

// tail returns the end of the daemon's log, for failure messages.
func (d *daemon) tail() string {
	b, _ := os.ReadFile(d.log)
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}

// placeholder is a ${NAME} in a template of deploy/patroni, as envsubst
// would fill it.
var placeholder = regexp.MustCompile(`\$\{[A-Z][A-Z0-9_]*\}`)

// render fills the ${…} placeholders of the template deploy/patroni/name from vars
// and writes the result to dst. A variable missing from vars fails the
// test, so that a template and the test cannot drift apart unnoticed.
func render(t *testing.T, name, dst string, vars map[string]string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("patroni", name))
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	out := placeholder.ReplaceAllStringFunc(string(b), func(p string) string {
		k := p[2 : len(p)-1]
		v, ok := vars[k]
		if !ok {
			missing = append(missing, k)
		}
		return v
	})
	if len(missing) > 0 {
		t.Fatalf("deploy/patroni/%s uses %v, which the test does not set", name, missing)
	}
	if err := os.WriteFile(dst, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A patroniNode is one PostgreSQL node under Patroni.
type patroniNode struct {
	name     string
	dir      string // owned by the postgres user: data, socket, config
	cfg      string
	restPort string
	pgPort   string
	pgBin    string // PostgreSQL's server programs
	cred     *syscall.Credential

	mu      sync.Mutex
	patroni *daemon
}

// start starts the node's Patroni, which starts its PostgreSQL.
func (n *patroniNode) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command("patroni", n.cfg)
	cmd.Dir = n.dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C.UTF-8", "HOME=" + n.dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: n.cred}
	d := startDaemon(t, "patroni "+n.name, cmd, filepath.Join(n.dir, "patroni.log"))
	n.mu.Lock()
	n.patroni = d
	n.mu.Unlock()
}

// daemon returns the node's latest Patroni process.
func (n *patroniNode) daemon() *daemon {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.patroni
}

// postmasterPID returns the pid of the node's running postmaster, or 0.
func (n *patroniNode) postmasterPID() int {
	b, err := os.ReadFile(filepath.Join(n.dir, "data", "postmaster.pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if pid <= 0 || syscall.Kill(pid, 0) != nil {
		return 0
	}
	return pid
}

// stopPostgres stops a postmaster left running once Patroni is gone (after
// a SIGKILL of Patroni, or a Patroni that did not stop it): the test
// started it, through Patroni.
func (n *patroniNode) stopPostgres(t *testing.T) {
	if n.postmasterPID() == 0 {
		return
	}
	cmd := exec.Command(filepath.Join(n.pgBin, "pg_ctl"), "stop", "-D", filepath.Join(n.dir, "data"), "-m", "immediate", "-w", "-t", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: n.cred}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Logf("pg_ctl stop on %s: %v\n%s", n.name, err, out)
	}
}

// A member is one node as Patroni's GET /cluster describes it.
type member struct {
	Name  string
	Role  string // leader, replica, sync_standby
	State string // running, streaming, starting, stopped…
}

// members asks the Patroni of any node that answers for the cluster's
// members, and returns nil when none answers.
func (c *patroniCluster) members() []member {
	for _, n := range c.nodes {
		var body struct{ Members []member }
		if getJSON("http://127.0.0.1:"+n.restPort+"/cluster", time.Second, &body) {
			return body.Members
		}
	}
	return nil
}

// getJSON GETs url, waiting at most timeout, and tells whether it
// answered 200 with a JSON body, which it decodes into v.
func getJSON(url string, timeout time.Duration, v any) bool {
	status, _, body, err := testkit.Get(&http.Client{Timeout: timeout}, url, "")
	return err == nil && status == 200 && json.Unmarshal(body, v) == nil
}

// healthy tells whether all three nodes run, one as the leader, one as its
// synchronous standby, and HAProxy sends to the leader and nothing else.
func (c *patroniCluster) healthy() (bool, string) {
	ms := c.members()
	var leader string
	sync, running := 0, 0
	for _, m := range ms {
		if m.State == "running" || m.State == "streaming" {
			running++
		}
		switch m.Role {
		case "leader":
			leader = m.Name
		case "sync_standby":
			sync++
		}
	}
	st, err := haproxyStatus(filepath.Join(c.dir, "haproxy.sock"))
	desc := fmt.Sprintf("members %+v; HAProxy %v %v", ms, st, err)
	if leader == "" || running != 3 || sync == 0 || err != nil {
		return false, desc
	}
	for _, n := range c.nodes {
		if want := n.name == leader; (st[n.name] == "UP") != want {
			return false, desc
		}
	}
	return true, desc
}

// waitHealthy waits up to limit for the cluster to be healthy.
func (c *patroniCluster) waitHealthy(t *testing.T, limit time.Duration) {
	t.Helper()
	var desc string
	defer func() {
		if t.Failed() {
			t.Logf("the Patroni cluster's last state: %s", desc)
		}
	}()
	testkit.WaitUntil(t, limit, "the Patroni cluster to be healthy", func() bool {
		var ok bool
		ok, desc = c.healthy()
		return ok
	})
}

// logTails logs the end of each daemon's log, for a failure to be looked
// into.
func (c *patroniCluster) logTails(t *testing.T) {
	for _, n := range c.nodes {
		if d := n.daemon(); d != nil {
			t.Logf("--- %s's Patroni log:\n%s", n.name, d.tail())
		}
	}
	for _, d := range c.daemons {
		t.Logf("--- %s's log:\n%s", d.name, d.tail())
	}
}

// A patroniCluster is etcd, three Patroni nodes, HAProxy to the leader and
// PgBouncer in front of HAProxy, from the templates in deploy/patroni.
type patroniCluster struct {
	dir     string
	nodes   []*patroniNode
	daemons []*daemon // etcd, HAProxy, PgBouncer
	cfg     string    // a node's Patroni configuration, for patronictl
	dbURL   string    // plantstore's -db: PgBouncer's plants database
}

// requirePatroniTools skips the test, saying why, when a program the
// cluster needs is missing, and returns PostgreSQL's server programs'
// directory.
func requirePatroniTools(t *testing.T) (pgBin string) {
	t.Helper()
	for _, prog := range []string{"patroni", "patronictl", "etcd", "haproxy", "pgbouncer"} {
		if _, err := exec.LookPath(sbin(prog)); err != nil {
			t.Skipf("SKIPPING: %s is not installed (Debian: apt-get install patroni etcd-server etcd-client haproxy pgbouncer)", prog)
		}
	}
	return pgtest.BinDir(t)
}

// sbin returns prog, or /usr/sbin/prog where Debian puts HAProxy and
// PgBouncer when /usr/sbin is not in $PATH (a user other than root).
func sbin(prog string) string {
	if _, err := exec.LookPath(prog); err != nil {
		if _, err := os.Stat("/usr/sbin/" + prog); err == nil {
			return "/usr/sbin/" + prog
		}
	}
	return prog
}

// startPatroniCluster starts the cluster on free loopback ports in a
// temporary directory, waits until it is healthy, and stops it all when
// the test ends: PgBouncer, HAProxy, each Patroni (which stops its
// PostgreSQL), a PostgreSQL a dead Patroni left, then etcd.
func startPatroniCluster(t *testing.T) *patroniCluster {
	t.Helper()
	pgBin := requirePatroniTools(t)
	cred := pgtest.Credential(t, "Patroni")
	dir := pgtest.TempDir(t, cred)
	// PLANTSTORE_TEST_KEEP_PATRONI=1 keeps the directory and its logs.
	t.Cleanup(func() {
		if os.Getenv("PLANTSTORE_TEST_KEEP_PATRONI") == "" {
			os.RemoveAll(dir)
		} else {
			t.Logf("kept %s", dir)
		}
	})
	ports := freePorts(t, 10)
	vars := map[string]string{
		"DIR": dir, "ETCD_CLIENT_PORT": ports[0], "ETCD_PEER_PORT": ports[1],
		"HAPROXY_PG_PORT": ports[8], "PGBOUNCER_PORT": ports[9], "PG_BIN": pgBin,
		"TTL": strconv.Itoa(patroniTTL), "LOOP_WAIT": strconv.Itoa(patroniLoopWait),
		"RETRY_TIMEOUT":      strconv.Itoa(patroniRetryTimeout),
		"SUPERUSER_PASSWORD": "super-" + token, "REPLICATION_PASSWORD": "repl-" + token,
		"DB_PASSWORD": "db-" + token,
	}
	c := &patroniCluster{dir: dir}
	for i := range 3 {
		n := &patroniNode{name: fmt.Sprint("pg", i+1), pgPort: ports[2+2*i], restPort: ports[3+2*i], pgBin: pgBin, cred: cred}
		n.dir = filepath.Join(dir, n.name)
		vars[strings.ToUpper(n.name)+"_PORT"] = n.pgPort
		vars[strings.ToUpper(n.name)+"_REST_PORT"] = n.restPort
		c.nodes = append(c.nodes, n)
	}
	t.Cleanup(func() {
		if t.Failed() {
			c.logTails(t)
		}
	})
	etcdHealth := "http://127.0.0.1:" + vars["ETCD_CLIENT_PORT"] + "/health"
	c.startService(t, vars, "etcd.yml", nil, func() bool { return getJSON(etcdHealth, time.Second, &struct{}{}) }, "etcd", "--config-file", "%s")
	for _, n := range c.nodes {
		c.startNode(t, n, vars)
	}
	c.cfg = c.nodes[0].cfg
	c.startService(t, vars, "haproxy.cfg", nil, func() bool {
		if out, err := exec.Command(sbin("haproxy"), "-c", "-q", "-f", filepath.Join(c.dir, "haproxy.cfg")).CombinedOutput(); err != nil {
			t.Fatalf("HAProxy refuses deploy/patroni/haproxy.cfg: %v\n%s", err, out)
		}
		return true
	}, "haproxy", "-f", "%s")
	render(t, "userlist.txt", filepath.Join(c.dir, "userlist.txt"), vars)
	c.startService(t, vars, "pgbouncer.ini", cred, func() bool {
		conn, err := net.Dial("tcp", "127.0.0.1:"+vars["PGBOUNCER_PORT"])
		if err == nil {
			conn.Close()
		}
		return err == nil
	}, "pgbouncer", "%s")
	c.dbURL = fmt.Sprintf("postgres://plantstore:%s@127.0.0.1:%s/plants?sslmode=disable&connect_timeout=2",
		vars["DB_PASSWORD"], vars["PGBOUNCER_PORT"])
	c.waitHealthy(t, 3*time.Minute)
	return c
}

// startNode writes a node's Patroni configuration and starts its Patroni.
func (c *patroniCluster) startNode(t *testing.T, n *patroniNode, vars map[string]string) {
	t.Helper()
	if err := os.Mkdir(n.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if n.cred != nil {
		if err := os.Chown(n.dir, int(n.cred.Uid), int(n.cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	nv := map[string]string{"NODE": n.name, "NODE_DIR": n.dir, "REST_PORT": n.restPort, "PG_PORT": n.pgPort, "ETCD_PORT": vars["ETCD_CLIENT_PORT"]}
	for k, v := range vars {
		nv[k] = v
	}
	n.cfg = filepath.Join(c.dir, n.name+".yml")
	render(t, "patroni.yml", n.cfg, nv)
	// Registered first, so that it runs after Patroni has been stopped.
	t.Cleanup(func() { n.stopPostgres(t) })
	n.start(t)
}

// startService renders the template deploy/patroni/tmpl into the
// cluster's directory and starts prog with args, "%s" standing for the
// rendered file, as cred; then, with ready, it waits up to a minute for
// ready to be true, failing the test if prog exits first.
func (c *patroniCluster) startService(t *testing.T, vars map[string]string, tmpl string, cred *syscall.Credential, ready func() bool, prog string, args ...string) {
	t.Helper()
	cfg := filepath.Join(c.dir, tmpl)
	render(t, tmpl, cfg, vars)
	for i := range args {
		args[i] = strings.ReplaceAll(args[i], "%s", cfg)
	}
	cmd := exec.Command(sbin(prog), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	d := startDaemon(t, prog, cmd, filepath.Join(c.dir, prog+".out"))
	c.daemons = append(c.daemons, d)
	if ready != nil {
		testkit.WaitUntil(t, time.Minute, prog+" to be ready", func() bool {
			if !d.alive() {
				t.Fatalf("%s exited:\n%s", prog, d.tail())
			}
			return ready()
		})
	}
}

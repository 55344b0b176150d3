// Package pgtest starts private PostgreSQL clusters for tests that stop,
// restart, fail over or otherwise hurt a database, which they must never do
// to a server others share.
//
// Each [Cluster] is a fresh initdb in its own temporary directory, listening
// on 127.0.0.1 on a free port with trust authentication for the superuser
// postgres. Its durability settings are PostgreSQL's defaults (fsync on,
// synchronous_commit on), so that what a test learns about lost or kept
// commits holds for a real deployment.
//
// PostgreSQL refuses to run as root. When the test runs as root, every
// PostgreSQL program runs as the postgres user; otherwise as the test's own
// user. The binaries are looked up in $PLANTSTORE_TEST_PG_BINDIR, else in
// /usr/lib/postgresql/15/bin.
//
// The postmaster is a child of the test process that gets SIGQUIT (an
// immediate shutdown) if the test process dies, so that a crashed or killed
// test run leaves no server behind; only its files may remain.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plantstore/plantstore/internal/testkit"
)

// defaultBinDir is where Debian's postgresql-15 package puts the server's
// programs.
const defaultBinDir = "/usr/lib/postgresql/15/bin"

// waitTimeout bounds every wait for a cluster to start, stop, stream or
// promote.
const waitTimeout = 60 * time.Second

// A Cluster is one private PostgreSQL server: a primary, or a streaming
// standby of one. Its methods fail the test they are given on any error.
type Cluster struct {
	bin  string // directory of initdb, pg_ctl, postgres, pg_basebackup
	root string // temporary directory holding data and the socket, removed at cleanup
	data string
	log  string
	port int
	cred *syscall.Credential // nil when running as the test's own user
	name string              // application_name a standby streams as

	mu       sync.Mutex
	exited   chan struct{} // closed when the running postmaster exits; nil when none runs
	standbys []string      // application names of this primary's synchronous standbys
}

// Start starts a new primary cluster and tears it down (stopped with
// -m immediate, files removed) in tb.Cleanup. It skips tb, saying why, in
// -short mode (a cluster is processes of its own), and when this machine
// cannot run one: no PostgreSQL binaries, or running as root with no
// postgres user to run them as.
func Start(tb testing.TB) *Cluster {
	tb.Helper()
	if testing.Short() {
		tb.Skip("starts a PostgreSQL cluster of its own; skipped in -short mode")
	}
	c := newCluster(tb, "primary")
	out, err := c.command("initdb", "-D", c.data, "-U", "postgres", "--auth=trust",
		"--encoding=UTF8", "--locale=C", "--no-instructions").CombinedOutput()
	if err != nil {
		tb.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}
	// Another process may take the port between the probe and the bind;
	// the postmaster then exits at once, and another port is tried.
	for attempt := 0; ; attempt++ {
		err := c.startPostmaster()
		if err == nil {
			break
		}
		if attempt == 4 || !strings.Contains(c.logTail(), "could not bind") {
			tb.Fatalf("pgtest: start primary: %v\n%s", err, c.logTail())
		}
		if c.port, err = testkit.FreePort(); err != nil {
			tb.Fatal(err)
		}
	}
	return c
}

// newCluster makes the cluster's directory, owned by the user PostgreSQL
// runs as, and registers its teardown.
func newCluster(tb testing.TB, name string) *Cluster {
	tb.Helper()
	c := &Cluster{bin: BinDir(tb), name: name, cred: Credential(tb, "PostgreSQL")}
	root := TempDir(tb, c.cred)
	c.root = root
	c.data = filepath.Join(root, "data")
	c.log = filepath.Join(root, "postgres.log")
	var err error
	if c.port, err = testkit.FreePort(); err != nil {
		os.RemoveAll(root)
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		c.stop()
		os.RemoveAll(root)
	})
	return c
}

// BinDir returns the directory of PostgreSQL's server programs:
// $PLANTSTORE_TEST_PG_BINDIR, else /usr/lib/postgresql/15/bin. It skips tb,
// saying why, when a program a cluster needs is not there.
func BinDir(tb testing.TB) string {
	tb.Helper()
	bin := os.Getenv("PLANTSTORE_TEST_PG_BINDIR")
	if bin == "" {
		bin = defaultBinDir
	}
	for _, prog := range []string{"initdb", "pg_ctl", "postgres", "pg_basebackup"} {
		if _, err := os.Stat(filepath.Join(bin, prog)); err != nil {
			tb.Skipf("SKIPPING: no PostgreSQL server binaries: %v (install postgresql-15, or set PLANTSTORE_TEST_PG_BINDIR)", err)
		}
	}
	return bin
}

// Credential returns the credential to run prog (PostgreSQL, PgBouncer,
// Patroni), which refuse to run as root, as: the postgres user's when the
// test runs as root, else nil, the test's own. It skips tb when there is
// no postgres user to run as.
func Credential(tb testing.TB, prog string) *syscall.Credential {
	tb.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		tb.Skipf("SKIPPING: %s refuses to run as root, and there is no postgres user to run it as: %v", prog, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		tb.Fatalf("pgtest: postgres user: %v", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// TempDir makes a temporary directory owned by cred's user (or the test's),
// which the caller removes.
func TempDir(tb testing.TB, cred *syscall.Credential) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		tb.Fatal(err)
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			os.RemoveAll(dir)
			tb.Fatal(err)
		}
	}
	return dir
}

// command returns prog from the binary directory, to run as the cluster's
// user in its directory.
func (c *Cluster) command(prog string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(c.bin, prog), args...)
	cmd.Dir = c.root
	cmd.Env = []string{"PATH=" + c.bin + ":/usr/bin:/bin", "LC_ALL=C", "HOME=" + c.root}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	return cmd
}

// Port returns the TCP port the cluster listens on, on 127.0.0.1.
func (c *Cluster) Port() int { return c.port }

// Addr returns the cluster's host:port.
func (c *Cluster) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(c.port)) }

// DSN returns a URL for the superuser's postgres database.
func (c *Cluster) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// startPostmaster runs the server as a child of this process and waits
// until it accepts connections.
func (c *Cluster) startPostmaster() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.exited != nil {
		return errors.New("pgtest: the cluster is already running")
	}
	logf, err := os.OpenFile(c.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := c.command("postgres", "-D", c.data,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "port="+strconv.Itoa(c.port),
		"-c", "unix_socket_directories="+c.root,
		"-c", "shared_buffers=16MB",
		"-c", "max_connections=100",
		"-c", "logging_collector=off",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	c.exited = exited
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for {
		conn, err := c.connect(ctx)
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case <-exited:
			c.exited = nil
			return errors.New("pgtest: postgres exited while starting")
		case <-ctx.Done():
			return fmt.Errorf("pgtest: postgres did not accept connections within %v: %w", waitTimeout, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// connect opens one connection to the cluster.
func (c *Cluster) connect(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	return pgx.Connect(cctx, c.DSN())
}

// stop stops the postmaster with -m immediate, if it runs, and waits for it
// to exit.
func (c *Cluster) stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.exited == nil {
		return nil
	}
	out, err := c.command("pg_ctl", "stop", "-D", c.data, "-m", "immediate", "-w", "-t", "60").CombinedOutput()
	select {
	case <-c.exited:
	case <-time.After(waitTimeout):
		return fmt.Errorf("pgtest: postgres did not exit after pg_ctl stop: %v\n%s", err, out)
	}
	c.exited = nil
	if err != nil {
		return fmt.Errorf("pgtest: pg_ctl stop: %v\n%s", err, out)
	}
	return nil
}

// Stop stops the cluster as a crash would (pg_ctl stop -m immediate): no
// checkpoint, every connection dropped; whatever was committed is replayed
// from the WAL at the next Start.
func (c *Cluster) Stop(tb testing.TB) {
	tb.Helper()
	if err := c.stop(); err != nil {
		tb.Fatal(err)
	}
}

// Start starts the cluster again after [Cluster.Stop], on the same port,
// and waits until it accepts connections.
func (c *Cluster) Start(tb testing.TB) {
	tb.Helper()
	if err := c.startPostmaster(); err != nil {
		tb.Fatalf("%v\n%s", err, c.logTail())
	}
}

// Restart stops the cluster with -m immediate and starts it again.
func (c *Cluster) Restart(tb testing.TB) {
	tb.Helper()
	c.Stop(tb)
	c.Start(tb)
}

// StartStandby makes a streaming standby of c (pg_basebackup -R), starts
// it, waits until it streams, and makes it synchronous: from then on c
// acknowledges a commit only once the standby has flushed it. The standby
// is torn down in tb.Cleanup. While no synchronous standby runs, commits
// on c wait.
func (c *Cluster) StartStandby(tb testing.TB) *Cluster {
	tb.Helper()
	c.mu.Lock()
	name := fmt.Sprintf("%s_standby%d", c.name, len(c.standbys)+1)
	c.mu.Unlock()
	s := newCluster(tb, name)
	conninfo := fmt.Sprintf("host=127.0.0.1 port=%d user=postgres application_name=%s", c.port, name)
	out, err := s.command("pg_basebackup", "-D", s.data, "-d", conninfo,
		"-X", "stream", "-R", "-c", "fast").CombinedOutput()
	if err != nil {
		tb.Fatalf("pgtest: pg_basebackup: %v\n%s", err, out)
	}
	if err := s.startPostmaster(); err != nil {
		tb.Fatalf("pgtest: start standby: %v\n%s", err, s.logTail())
	}

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	conn, err := c.connect(ctx)
	if err != nil {
		tb.Fatalf("pgtest: connect to the primary: %v", err)
	}
	defer conn.Close(ctx)
	c.mu.Lock()
	c.standbys = append(c.standbys, name)
	names := c.standbys
	c.mu.Unlock()
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = `"` + n + `"`
	}
	list := "ANY 1 (" + strings.Join(quoted, ", ") + ")"
	if _, err := conn.Exec(ctx, "ALTER SYSTEM SET synchronous_standby_names = '"+list+"'"); err != nil {
		tb.Fatalf("pgtest: set synchronous_standby_names: %v", err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		tb.Fatalf("pgtest: reload configuration: %v", err)
	}
	for {
		var state, sync string
		err := conn.QueryRow(ctx, `SELECT state, sync_state FROM pg_stat_replication
			WHERE application_name = $1`, name).Scan(&state, &sync)
		if err == nil && state == "streaming" && (sync == "sync" || sync == "quorum") {
			return s
		}
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			tb.Fatalf("pgtest: read pg_stat_replication: %v", err)
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("pgtest: standby %s is not a streaming synchronous standby after %v (state %q, sync_state %q)\n%s",
				name, waitTimeout, state, sync, s.logTail())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Promote promotes a standby (pg_ctl promote) and waits until it accepts
// writes. The promoted cluster has no synchronous standby of its own.
func (c *Cluster) Promote(tb testing.TB) {
	tb.Helper()
	out, err := c.command("pg_ctl", "promote", "-D", c.data, "-w", "-t", "60").CombinedOutput()
	if err != nil {
		tb.Fatalf("pgtest: pg_ctl promote: %v\n%s\n%s", err, out, c.logTail())
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for {
		var recovering bool
		conn, err := c.connect(ctx)
		if err == nil {
			err = conn.QueryRow(ctx, "SELECT pg_is_in_recovery()").Scan(&recovering)
			conn.Close(ctx)
			if err == nil && !recovering {
				return
			}
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("pgtest: the promoted cluster does not accept writes after %v (in recovery: %v, %v)\n%s",
				waitTimeout, recovering, err, c.logTail())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// logTail returns the end of the server's log, for failure messages.
func (c *Cluster) logTail() string {
	b, err := os.ReadFile(c.log)
	if err != nil {
		return fmt.Sprintf("(no server log: %v)", err)
	}
	if len(b) > 4096 {
		b = b[len(b)-4096:]
	}
	return string(b)
}

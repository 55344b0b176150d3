package pgtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit"
)

// PgBouncer starts PgBouncer in transaction pooling mode in front of the
// PostgreSQL server at target (host:port), for every database, logging in
// as postgres whatever user a client names, and returns the host:port
// clients connect to. It is stopped in tb.Cleanup. It skips tb, saying
// why, in -short mode and when PgBouncer is not installed.
//
// In transaction mode a client's consecutive transactions may run on
// different server sessions, and several clients' on one: what a session
// keeps between transactions (named prepared statements, SET without
// LOCAL) does not follow the client. Startup parameters other than
// PgBouncer's few (application_name, client_encoding, DateStyle,
// TimeZone, standard_conforming_strings) are refused, search_path among
// them.
func PgBouncer(tb testing.TB, target string) string {
	tb.Helper()
	if testing.Short() {
		tb.Skip("starts PgBouncer; skipped in -short mode")
	}
	prog, err := exec.LookPath("pgbouncer")
	if err != nil {
		if prog, err = exec.LookPath("/usr/sbin/pgbouncer"); err != nil {
			tb.Skip("SKIPPING: pgbouncer is not installed (Debian: apt-get install pgbouncer)")
		}
	}
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		tb.Fatalf("pgtest: PgBouncer target %q: %v", target, err)
	}
	cred := Credential(tb, "PgBouncer")
	dir := TempDir(tb, cred)
	listen, err := testkit.FreePort()
	if err != nil {
		os.RemoveAll(dir)
		tb.Fatal(err)
	}
	ini := filepath.Join(dir, "pgbouncer.ini")
	conf := pgbouncerIni(host, port, listen, filepath.Join(dir, "pgbouncer.log"))
	if err := os.WriteFile(ini, []byte(conf), 0o644); err != nil {
		os.RemoveAll(dir)
		tb.Fatal(err)
	}
	cmd := exec.Command(prog, ini)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		tb.Fatalf("pgtest: start pgbouncer: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	tb.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		os.RemoveAll(dir)
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(listen))
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			return addr
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "pgbouncer.log"))
			tb.Fatalf("pgtest: pgbouncer exited while starting\n%s", log)
		case <-ctx.Done():
			tb.Fatalf("pgtest: pgbouncer does not accept connections after %v: %v", waitTimeout, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// pgbouncerIni is the configuration of a PgBouncer listening on
// 127.0.0.1:listen in transaction mode, for the PostgreSQL server at
// host:port, logging to logfile.
func pgbouncerIni(host, port string, listen int, logfile string) string {
	return fmt.Sprintf(`[databases]
* = host=%s port=%s user=postgres

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = any
pool_mode = transaction
max_client_conn = 500
default_pool_size = 40
logfile = %s
`, host, port, listen, logfile)
}

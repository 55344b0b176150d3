package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/sqlstore"
)

// binary builds the plantstore command once per test run.
func binary(t *testing.T) string {
	t.Helper()
	return testkit.Build(t, "github.com/plantstore/plantstore/cmd/plantstore")
}

// TestMain runs 8 tests at a time: most of them wait on the binaries they
// start.
func TestMain(m *testing.M) {
	os.Exit(testkit.Main(m, 8))
}

const procToken = "process-test-token"

// startProcess starts the built binary with args after -addr 127.0.0.1:0,
// accepting procToken, and waits for its listening line.
func startProcess(t *testing.T, args ...string) *testkit.Process {
	t.Helper()
	return testkit.Start(t, binary(t), testkit.Env("PLANTSTORE_TOKENS="+procToken), append([]string{"-addr", "127.0.0.1:0"}, args...)...)
}

// client keeps enough idle connections for the concurrent tests.
var client = &http.Client{
	Timeout:   30 * time.Second,
	Transport: &http.Transport{MaxIdleConnsPerHost: 128},
}

// create posts a plant with procToken; see [testkit.Create].
func create(url string, id int64, name string) (status, code int, err error) {
	return testkit.Create(context.Background(), client, url, procToken, id, name)
}

// listAll returns every plant the server at url holds.
func listAll(t *testing.T, url string) map[int64]string {
	t.Helper()
	return testkit.Plants(t, client, url, procToken)
}

// TestSignalUnderLoad sends thousands of concurrent creates to a server on
// a SQLite file, signals it while they are in flight, restarts it on the
// same file, and checks that every acknowledged plant is there and that
// the restarted server creates. After SIGKILL, that is all; after SIGTERM,
// every request also gets a complete response or a clean connection
// error, and the process exits 0 within the drain timeout.
func TestSignalUnderLoad(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		sig     syscall.Signal
		workers int
	}{{syscall.SIGKILL, 64}, {syscall.SIGTERM, 32}} {
		t.Run(tt.sig.String(), func(t *testing.T) {
			t.Parallel()
			const signalAt = 3200 // creates sent
			db := filepath.Join(t.TempDir(), "plants.db")
			p := startProcess(t, "-db", db, "-log-level", "warn", "-shutdown-timeout", "20s")
			var (
				mu         sync.Mutex
				acked      = map[int64]string{}
				next, sent atomic.Int64
				stop       atomic.Bool
				wg         sync.WaitGroup
			)
			for range tt.workers {
				wg.Go(func() {
					for !stop.Load() {
						id := next.Add(1)
						name := fmt.Sprint("plant-", id)
						status, _, err := create(p.URL, id, name)
						if sent.Add(1) == signalAt {
							p.Cmd.Process.Signal(tt.sig)
						}
						switch {
						case err != nil:
							// A refused or closed connection once the server
							// stops accepting: the client knows it got no answer.
							if tt.sig == syscall.SIGTERM && !isConnError(err) {
								t.Errorf("create %d: %v, want a complete response or a clean connection error", id, err)
							}
							stop.Store(true)
						case status == 200:
							mu.Lock()
							acked[id] = name
							mu.Unlock()
						case tt.sig == syscall.SIGTERM:
							t.Errorf("create %d: status %d", id, status)
						}
					}
				})
			}
			wg.Wait()
			select {
			case <-p.Exited():
				if tt.sig == syscall.SIGTERM && p.Err() != nil {
					t.Fatalf("plantstore exited with %v after SIGTERM, want status 0\n%s", p.Err(), p.Stderr)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("plantstore did not exit within the drain timeout")
			}
			if len(acked) < signalAt/2 {
				t.Fatalf("only %d creates were acknowledged before %v; the test needs thousands", len(acked), tt.sig)
			}
			p2 := startProcess(t, "-db", db, "-log-level", "warn")
			stored := listAll(t, p2.URL)
			lost := 0
			for id, name := range acked {
				if stored[id] != name {
					lost++
				}
			}
			if lost > 0 {
				t.Fatalf("%d of %d acknowledged plants were lost after %v", lost, len(acked), tt.sig)
			}
			t.Logf("%d creates acknowledged around %v, all kept (%d stored)", len(acked), tt.sig, len(stored))
			if status, _, err := create(p2.URL, 1_000_000, "after restart"); err != nil || status != 200 {
				t.Errorf("create after restart = %d, %v, want 200", status, err)
			}
		})
	}
}

// isConnError reports whether err is a connection refused, reset or closed
// before any answer began.
func isConnError(err error) bool {
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) {
		return true
	}
	// A POST sent as the server closed the idle connection it went on
	// ends in net/http's errServerClosedIdle, which is not exported: its
	// exact text, under the *url.Error, is the only way to know it.
	ue, ok := errors.AsType[*url.Error](err)
	return ok && ue.Err.Error() == "http: server closed idle connection"
}

// TestProcessConfiguredByEnvironment starts the built binary configured
// by variables alone, as main reads them, sends a create and a conflict,
// and stops it with SIGTERM: it listens on PLANTSTORE_ADDR, answers the
// conflict 409, logs in JSON, with an access line per request, and exits
// 0, its last line, "plantstore stopped", flushed first. What each
// variable sets is TestFlagsFromEnvironment's; what an access line holds,
// in JSON, httpapi's TestAccessLog.
func TestProcessConfiguredByEnvironment(t *testing.T) {
	t.Parallel()
	addr := testkit.FreeAddr(t)
	p := testkit.Start(t, binary(t), testkit.Env(
		"PLANTSTORE_ADDR="+addr, "PLANTSTORE_DB=memory", "PLANTSTORE_TOKENS=env-token",
		"PLANTSTORE_LOG_FORMAT=json", "PLANTSTORE_CONVENTIONAL_STATUS=true"))
	if p.URL != "http://"+addr {
		t.Errorf("listening on %s, want PLANTSTORE_ADDR's %s", p.URL, addr)
	}
	for _, want := range []int{200, http.StatusConflict} {
		if status, body := post(t, p.URL, "env-token", `{"id":1,"name":"Fern"}`); status != want {
			t.Errorf("create = %d %s, want %d (PLANTSTORE_CONVENTIONAL_STATUS)", status, body, want)
		}
	}
	if err := p.Stop(t); err != nil {
		t.Fatalf("plantstore exited with %v after SIGTERM, want status 0\n%s", err, p.Stderr)
	}
	requests, last := 0, ""
	for _, l := range jsonLines(t, p.Stderr.String()) {
		if l["msg"] == "request" {
			requests++
		}
		last, _ = l["msg"].(string)
	}
	if requests != 2 || last != "plantstore stopped" {
		t.Errorf("%d JSON access lines, the last line %q; want 2, and \"plantstore stopped\" last:\n%s", requests, last, p.Stderr)
	}
}

// TestProcessExits checks the exit status and the output of a command
// line, or a variable, that cannot run, and of -h and -version, which
// prints what go version -m reads from the same binary: plantstore, the
// module versions and the revision.
func TestProcessExits(t *testing.T) {
	t.Parallel()
	bin := binary(t)
	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	version := []string{"plantstore "}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "mod":
			version = append(version, f[1]+" "+f[2]) // module path and version
		case len(f) == 2 && strings.HasPrefix(f[1], "vcs.revision="):
			version = append(version, strings.TrimPrefix(f[1], "vcs.revision="))
		}
	}
	if len(version) == 1 {
		t.Fatalf("go version -m shows no module:\n%s", out)
	}
	tests := []struct {
		name       string
		env        []string
		args       []string
		wantStatus int
		// wantStderr is all of stderr: main's one line is what the
		// operator reads, so the text is the interface here.
		wantStderr string
		wantStdout []string // stdout begins with the first and holds the rest
	}{
		{"unknown flag", nil, []string{"-bogus"}, 2, "plantstore: flag provided but not defined: -bogus; see plantstore -h\n", nil},
		{"bad variable", []string{"PLANTSTORE_MAX_BODY=lots"}, nil, 1, "plantstore: invalid value \"lots\" in PLANTSTORE_MAX_BODY (the variable of -max-body): parse error\n", nil},
		{"help", nil, []string{"-h"}, 0, "", []string{"Usage: plantstore"}},
		{"version", nil, []string{"-version"}, 0, "", version},
		// A flag given without the one it needs, as a command line that
		// does not parse.
		{"certificate without key", nil, []string{"-tls-cert", "cert.pem"}, 2,
			"plantstore: -tls-cert: needs -tls-key, the file of its private key; see plantstore -h\n", nil},
		{"key without certificate", []string{"PLANTSTORE_TLS_KEY=key.pem"}, nil, 2,
			"plantstore: PLANTSTORE_TLS_KEY: needs -tls-cert, the file of its certificate; see plantstore -h\n", nil},
		{"pprof without metrics address", nil, []string{"-pprof"}, 2,
			"plantstore: -pprof: needs -metrics-addr: profiles are served there, never on -addr; see plantstore -h\n", nil},
		{"pprof from the environment", []string{"PLANTSTORE_PPROF=true"}, nil, 2,
			"plantstore: PLANTSTORE_PPROF: needs -metrics-addr: profiles are served there, never on -addr; see plantstore -h\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, err := testkit.Run(t, bin, testkit.Env(tt.env...), append([]string{"-db", "memory"}, tt.args...)...)
			status := 0
			if ee, ok := errors.AsType[*exec.ExitError](err); ok {
				status = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if status != tt.wantStatus {
				t.Errorf("exit status %d, want %d", status, tt.wantStatus)
			}
			if diff := cmp.Diff(tt.wantStderr, stderr); diff != "" {
				t.Errorf("stderr mismatch (-want +got):\n%s", diff)
			}
			for i, w := range tt.wantStdout {
				if i == 0 && !strings.HasPrefix(stdout, w) || !strings.Contains(stdout, w) {
					t.Errorf("stdout %q, want it to hold %q", stdout, w)
				}
			}
		})
	}
}

// openSQLiteFile opens the SQLite file at path, which a binary under
// test uses, as another process would; it is closed in t.Cleanup.
func openSQLiteFile(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", sqlstore.SQLiteDSN(path))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// outboxRows returns the events and the deliveries left in the outbox of
// the database at dsn.
func outboxRows(t *testing.T, db *sql.DB) (events, deliveries int) {
	t.Helper()
	if err := db.QueryRow(`SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM webhook_deliveries)`).Scan(&events, &deliveries); err != nil {
		t.Fatalf("read the outbox: %v", err)
	}
	return events, deliveries
}

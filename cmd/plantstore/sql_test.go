package main

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/dirtest"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/sqlstore"
)

// writeSQLite runs stmts on a SQLite file at path through a connection
// with no pragmas, as another application would.
func writeSQLite(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// writePlantstoreDB makes path a plantstore database holding one plant,
// as a stopped server leaves it.
func writePlantstoreDB(t *testing.T, path string) {
	t.Helper()
	storage, err := sqlstore.OpenSQLite(context.Background(), "sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer storage.Close()
	if err := storage.Create(context.Background(), plantstore.Plant{ID: 1, Name: "kept"}); err != nil {
		t.Fatal(err)
	}
}

// An outcome is how a run of the binary ended.
type outcome struct {
	listening bool // it printed its address, and was then killed
	code      int  // its exit code, when it exited by itself
	stderr    string
}

// runBinary runs the built binary with args, as user nobody when
// asNobody, until it exits or prints its listening line.
func runBinary(t *testing.T, asNobody bool, args ...string) outcome {
	t.Helper()
	argv := append([]string{binary(t), "-addr", "127.0.0.1:0", "-log-level", "warn"}, args...)
	if asNobody {
		argv = append([]string{"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = testkit.Env("PLANTSTORE_TOKENS=" + procToken)
	p := testkit.StartOrExit(t, cmd)
	o := outcome{listening: p.URL != ""}
	if o.listening {
		p.Cmd.Process.Kill()
		p.Wait(t)
	} else if err := p.Err(); err != nil {
		exit, ok := errors.AsType[*exec.ExitError](err)
		if !ok {
			t.Fatalf("plantstore %q: %v", args, err)
		}
		o.code = exit.ExitCode()
	}
	o.stderr = p.Stderr.String()
	return o
}

// failedStart is the whole of the stderr of a binary that fails at
// startup with -log-level warn: one record saying so, with the error.
var failedStart = regexp.MustCompile(`\Atime=\S+ level=ERROR msg="plantstore failed" err=(.*)\n\z`)

// startupFailure returns the error a binary that failed at startup logged
// on stderr, failing t unless stderr is exactly that record. The line is
// the interface here, as the operator reads it: slog's text format.
func startupFailure(t *testing.T, stderr string) string {
	t.Helper()
	m := failedStart.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("stderr is not one \"plantstore failed\" record:\n%s", stderr)
	}
	if !strings.HasPrefix(m[1], `"`) {
		return m[1]
	}
	msg, err := strconv.Unquote(m[1])
	if err != nil {
		t.Fatalf("err=%s: %v", m[1], err)
	}
	return msg
}

// nobodyDir returns a new directory that user nobody can reach, with mode
// perm, and makes the built binary runnable by nobody. It skips t unless
// the test runs as root with setpriv, user nobody and group nogroup.
func nobodyDir(t *testing.T, perm os.FileMode) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("SKIPPING: starting the binary as another user needs root")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("SKIPPING: setpriv (util-linux) is not installed")
	}
	if _, err := user.Lookup("nobody"); err != nil {
		t.Skip("SKIPPING: no user nobody")
	}
	if _, err := user.LookupGroup("nogroup"); err != nil {
		t.Skip("SKIPPING: no group nogroup")
	}
	if err := os.Chmod(filepath.Dir(binary(t)), 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "plantstore-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, perm); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestStartupRefusesUnusableFiles starts the binary on a SQLite file it
// cannot serve: another application's, exiting with status 1, and one whose
// filesystem filled up while it was stopped, exiting at once with status 3
// and saying the directory is full, instead of failing on "disk I/O error"
// at every restart. Either way its one log line says why; the foreign file
// stays as it was, and the line is run's error, word for word. The kinds
// of foreign file are sqlstore's TestPrepareSQLiteFileRefuses; the full
// disk's message, and its file opening, with its plants, once space is
// freed, sqlstore's TestOpenSQLiteOnAFullDisk.
func TestStartupRefusesUnusableFiles(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		setup    func(t *testing.T) (dir string) // writes dir/p.db
		wantCode int
		wantText string // in the logged error; DIR is the directory
		// wantErr, when not nil, is what run in-process returns on the same
		// file, the error logged, and the file is left as it was.
		wantErr error
	}{
		{"foreign file", func(t *testing.T) string {
			dir := t.TempDir()
			// SQLite with a plants table of its own.
			writeSQLite(t, filepath.Join(dir, "p.db"), `CREATE TABLE plants (id INTEGER PRIMARY KEY, species TEXT)`,
				`INSERT INTO plants VALUES (1, 'fern')`)
			return dir
		}, 1, "", sqlstore.ErrNotPlantstore},
		{"full disk", func(t *testing.T) string {
			dir := dirtest.Tmpfs(t, 2<<20)
			writePlantstoreDB(t, filepath.Join(dir, "p.db"))
			dirtest.Fill(t, dir)
			return dir
		}, 3, "database directory DIR is full: ", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := tt.setup(t)
			path := filepath.Join(dir, "p.db")
			before := dirtest.Snapshot(t, dir)
			o := runBinary(t, false, "-db", path)
			if o.listening || o.code != tt.wantCode {
				t.Fatalf("plantstore: listening %v, exit code %d, want exit code %d\n%s", o.listening, o.code, tt.wantCode, o.stderr)
			}
			logged := startupFailure(t, o.stderr)
			if want := strings.ReplaceAll(tt.wantText, "DIR", dir); !strings.Contains(logged, want) {
				t.Errorf("the logged error %q does not say %q", logged, want)
			}
			if tt.wantErr == nil {
				return
			}
			if diff := cmp.Diff(before, dirtest.Snapshot(t, dir)); diff != "" {
				t.Errorf("files changed by a refused start (-want +got):\n%s", diff)
			}
			// The same run in-process, for the error's identity.
			err := run(context.Background(), []string{"-addr", "127.0.0.1:0", "-db", path}, func(string) string { return "" }, &testkit.Buffer{}, &testkit.Buffer{})
			if !errors.Is(err, tt.wantErr) || errors.Is(err, plantstore.ErrUnavailable) {
				t.Errorf("run = %v, want %v and not ErrUnavailable", err, tt.wantErr)
			}
			if err != nil && logged != err.Error() {
				t.Errorf("the binary logged %q, want run's error %q", logged, err)
			}
		})
	}
}

// TestStartupFailsOnUnusableSQLitePaths starts the binary as user nobody
// on SQLite paths it may not write, which root, who runs the tests, could:
// it exits with status 1 and a line naming the path and the system's
// reason, and changes nothing; where it may write, it starts. Paths that fail for anyone are sqlstore's
// TestPrepareSQLiteFileRefuses.
func TestStartupFailsOnUnusableSQLitePaths(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// setup prepares dir, of mode dirPerm, and returns the -db path.
		setup   func(t *testing.T, dir string) string
		dirPerm os.FileMode
		// wantErr is the operating system's reason: stderr must say it,
		// and run's error must wrap it.
		wantErr syscall.Errno
	}{
		{
			// SQLite would open it read-only, and every write would fail.
			name: "read-only file",
			setup: func(t *testing.T, dir string) string {
				path := filepath.Join(dir, "p.db")
				writePlantstoreDB(t, path)
				if err := os.Chmod(path, 0o444); err != nil {
					t.Fatal(err)
				}
				return path
			},
			dirPerm: 0o777, // SQLite could create -wal and -shm here
			wantErr: syscall.EACCES,
		},
		{
			name: "read-only directory, database present",
			setup: func(t *testing.T, dir string) string {
				path := filepath.Join(dir, "p.db")
				writePlantstoreDB(t, path)
				if err := os.Chmod(path, 0o666); err != nil {
					t.Fatal(err)
				}
				return path
			},
			dirPerm: 0o755,
			wantErr: syscall.EACCES,
		},
		{
			name:    "read-only directory, no database yet",
			setup:   func(t *testing.T, dir string) string { return filepath.Join(dir, "p.db") },
			dirPerm: 0o755,
			wantErr: syscall.EACCES,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := nobodyDir(t, tt.dirPerm)
			path := tt.setup(t, dir)
			before := dirtest.Snapshot(t, dir)

			o := runBinary(t, true, "-db", path)
			if o.listening || o.code != 1 {
				t.Fatalf("plantstore: listening %v, exit code %d, want exit code 1\n%s", o.listening, o.code, o.stderr)
			}
			// What the operator reads: the logged error names the path or
			// its directory and gives the system's reason, and does not
			// call a configuration error a passing outage.
			logged := startupFailure(t, o.stderr)
			if !strings.Contains(logged, path) && !strings.Contains(logged, filepath.Dir(path)) {
				t.Errorf("the logged error %q names neither %s nor its directory", logged, path)
			}
			if !strings.HasSuffix(logged, ": "+tt.wantErr.Error()) {
				t.Errorf("the logged error %q does not end with the reason %q", logged, tt.wantErr.Error())
			}
			if strings.Contains(logged, plantstore.ErrUnavailable.Error()) {
				t.Errorf("the logged error %q calls a configuration error a passing outage", logged)
			}
			if diff := cmp.Diff(before, dirtest.Snapshot(t, dir)); diff != "" {
				t.Errorf("files changed by a failed start (-want +got):\n%s", diff)
			}
		})
	}
	// The control: the same user starts in a directory it may write. The
	// modes of the files it creates are sqlstore's TestNewSQLiteFilesAreOwnerOnly.
	t.Run("writable directory", func(t *testing.T) {
		if o := runBinary(t, true, "-db", filepath.Join(nobodyDir(t, 0o777), "p.db")); !o.listening {
			t.Fatalf("plantstore as nobody did not start: exit code %d\n%s", o.code, o.stderr)
		}
	})
}

// TestPostgresDSNAndLockTimeout runs the server on a PostgreSQL URL
// listing two hosts, the first of which refuses connections, with
// -db-lock-timeout 100ms. It serves from the second, and logs both hosts
// but not the password. A create of an id whose row lock another session
// holds, as a process stopped mid-transaction would, gives up after
// -db-lock-timeout, well before -db-timeout, with error 503 and
// PostgreSQL's lock timeout (55P03) in the log.
func TestPostgresDSNAndLockTimeout(t *testing.T) {
	t.Parallel()
	dsn := testkit.PostgresDatabase(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	hosts := testkit.FreeAddr(t) + "," + u.Host
	multi := strings.Replace(dsn, "://"+u.User.String()+"@"+u.Host, "://"+u.User.Username()+":s3cret@"+hosts, 1) +
		"&target_session_attrs=read-write"
	if !strings.Contains(multi, hosts) {
		t.Fatalf("could not put two hosts into %s", dsn)
	}
	if kind, where, err := parseDB(multi); kind != "postgres" || where != multi || err != nil {
		t.Fatalf("parseDB(%q) = %v, %q, %v; want PostgreSQL", multi, kind, where, err)
	}
	base, _, stderr, stop := startRun(t, []string{"-addr", "127.0.0.1:0", "-db", multi, "-db-lock-timeout", "100ms"},
		map[string]string{"PLANTSTORE_TOKENS": "t"})
	if status, body := post(t, base, "t", `{"id":1,"name":"two hosts"}`); status != 200 {
		t.Errorf("create = %d %s, want 200", status, body)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	held, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer held.Rollback()
	if _, err := held.Exec(`INSERT INTO plants (id, name) VALUES (1000, 'held')`); err != nil {
		t.Fatal(err)
	}
	if status, body := post(t, base, "t", `{"id":1000,"name":"p"}`); status != 400 || testkit.ErrorCode([]byte(body)) != 503 {
		t.Errorf("create of an id another transaction holds = %d %s, want error 503", status, body)
	}
	testkit.WaitUntil(t, 10*time.Second, "the log to show PostgreSQL's lock timeout (55P03)", func() bool {
		return strings.Contains(stderr.String(), "55P03")
	})
	held.Rollback()
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

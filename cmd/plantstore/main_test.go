package main

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/server"
)

// startRun starts run in-process and returns its base URL and a function
// that stops it (as SIGTERM would) and returns run's error.
func startRun(t *testing.T, args []string, env map[string]string) (url string, stdout, stderr *testkit.Buffer, stop func() error) {
	t.Helper()
	stderr = &testkit.Buffer{}
	url, stdout, stop = startRunTo(t, args, env, stderr)
	return url, stdout, stderr, stop
}

// startRunTo is startRun with run's log going to stderr.
func startRunTo(t *testing.T, args []string, env map[string]string, stderr io.Writer) (url string, stdout *testkit.Buffer, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout = &testkit.Buffer{}
	errc := make(chan error, 1)
	go func() {
		errc <- run(ctx, args, func(k string) string { return env[k] }, stdout, stderr)
	}()
	testkit.WaitUntil(t, 30*time.Second, "run to print its address", func() bool {
		for line := range strings.Lines(stdout.String()) {
			if u, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "listening on "); ok {
				url = u
				return true
			}
		}
		select {
		case err := <-errc:
			cancel()
			t.Fatalf("run returned before listening: %v\nstderr: %s", err, stderr)
		default:
		}
		return false
	})
	t.Cleanup(cancel) // should WaitUntil fail, run stops
	var once sync.Once
	var runErr error
	stop = func() error {
		once.Do(func() {
			cancel()
			runErr = <-errc
		})
		return runErr
	}
	t.Cleanup(func() { stop() })
	return url, stdout, stop
}

// post sends body as a create with token; see [testkit.Post].
func post(t *testing.T, url, token, body string) (int, string) {
	t.Helper()
	status, _, answer, err := testkit.Post(context.Background(), http.DefaultClient, url, token, body)
	if err != nil {
		t.Fatal(err)
	}
	return status, string(answer)
}

func TestRunServesOverLoopback(t *testing.T) {
	t.Parallel()
	url, _, stderr, stop := startRun(t, []string{"-addr", "127.0.0.1:0", "-db", "memory"},
		map[string]string{"PLANTSTORE_TOKENS": "tok-a, tok-b"})
	if status, body := post(t, url, "tok-b", `{"id":1,"name":"Monstera","tag":""}`); status != 200 || body != `{"name":"Monstera","tag":""}` {
		t.Errorf("create = %d %s, want 200 {\"name\":\"Monstera\",\"tag\":\"\"}", status, body)
	}
	if status, body := post(t, url, "tok-a", `{"id":1,"name":"again"}`); status != 400 || !strings.Contains(body, `"error":409`) {
		t.Errorf("conflicting create = %d %s, want 400 with error 409", status, body)
	}
	if status, body := post(t, url, "tok-c", `{"id":2,"name":"x"}`); status != 400 || !strings.Contains(body, `"error":401`) {
		t.Errorf("unknown token = %d %s, want 400 with error 401", status, body)
	}
	if err := stop(); err != nil {
		t.Fatalf("run after shutdown = %v, want nil", err)
	}
	logs := stderr.String()
	for _, secret := range []string{"tok-a", "tok-b", "tok-c", "Monstera"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log holds %q: tokens and bodies must never be logged:\n%s", secret, logs)
		}
	}
	if !strings.Contains(logs, "path=/plants") || !strings.Contains(logs, "error=409") {
		t.Errorf("the access log lacks a line per request with path and error code:\n%s", logs)
	}
}

// TestConventionalStatusFlag checks that -conventional-status reaches the
// handler: a conflict is answered 409 rather than the contract's 400.
func TestConventionalStatusFlag(t *testing.T) {
	t.Parallel()
	url, _, _, _ := startRun(t, []string{"-addr", "127.0.0.1:0", "-db", "memory", "-conventional-status"},
		map[string]string{"PLANTSTORE_TOKENS": "tok"})
	post(t, url, "tok", `{"id":1,"name":"x"}`)
	if status, body := post(t, url, "tok", `{"id":1,"name":"x"}`); status != 409 || !strings.Contains(body, `"error":409`) {
		t.Errorf("conflicting create with -conventional-status = %d %s, want 409 with error 409", status, body)
	}
}

func TestRunGeneratesATokenWhenNoneIsConfigured(t *testing.T) {
	t.Parallel()
	url, stdout, _, _ := startRun(t, []string{"-addr", "127.0.0.1:0", "-db", "memory"}, nil)
	var token string
	for _, line := range strings.Split(stdout.String(), "\n") {
		if tok, ok := strings.CutPrefix(strings.TrimSpace(line), "Authorization: Bearer "); ok {
			token = tok
		}
	}
	if len(token) < 32 {
		t.Fatalf("no generated token printed; stdout:\n%s", stdout)
	}
	if status, body := post(t, url, token, `{"id":1,"name":"x"}`); status != 200 {
		t.Errorf("create with the generated token = %d %s, want 200", status, body)
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		wantErr  error  // matched with errors.Is; nil to check only wantFlag
		wantFlag string // the flag a *flagError names; "" when none is wanted
	}{
		{name: "unknown db form", args: []string{"-db", "mysql://x"}, wantErr: errDBForm},
		{name: "bare word db", args: []string{"-db", "plants"}, wantErr: errDBForm},
		{name: "extra argument", args: []string{"serve"}, wantErr: errBadArgs},
		{name: "bad log level", args: []string{"-log-level", "loud"}, wantErr: errBadArgs},
		{name: "missing token file", args: []string{"-db", "memory", "-token-file", "/nonexistent/tokens"}, wantErr: fs.ErrNotExist},
		{name: "webhook without secret", args: []string{"-db", "memory", "-webhook", "http://127.0.0.1:1/hook"}, wantErr: errNoWebhookSecret},
		{name: "webhook without secret, SQLite", args: []string{"-db", "DIR/plants.db", "-webhook", "http://127.0.0.1:1/hook"}, wantErr: errNoWebhookSecret},
		{name: "zero webhook lease", args: []string{"-db", "DIR/plants.db", "-webhook", "http://127.0.0.1:1/hook", "-webhook-lease", "0s"}, wantErr: errNotPositive, wantFlag: "webhook-lease"},
		{name: "negative shutdown timeout", args: []string{"-db", "memory", "-shutdown-timeout", "-5s"}, wantErr: errNegative, wantFlag: "shutdown-timeout"},
		{name: "CORS origin with a path", args: []string{"-db", "memory", "-cors-origin", "https://app.example.com/"}, wantFlag: "cors-origin"},
		{name: "public metrics on a metrics address", args: []string{"-db", "memory", "-metrics-public", "-metrics-addr", "127.0.0.1:0"}, wantFlag: "metrics-public"},
		{name: "metrics address without a port", args: []string{"-db", "DIR/plants.db", "-metrics-addr", "localhost"}, wantFlag: "metrics-addr"},
		{name: "OTLP endpoint without a scheme", args: []string{"-db", "DIR/plants.db", "-otlp-endpoint", "collector:4318"}, wantErr: errOTLPEndpoint, wantFlag: "otlp-endpoint"},
		{name: "OTLP endpoint with a query", args: []string{"-db", "DIR/plants.db", "-otlp-endpoint", "http://collector:4318/?x=1"}, wantErr: errOTLPQuery, wantFlag: "otlp-endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var args []string
			for _, a := range tt.args {
				args = append(args, strings.ReplaceAll(a, "DIR", dir))
			}
			var stdout, stderr testkit.Buffer
			err := run(context.Background(), append(args, "-addr", "127.0.0.1:0"), func(string) string { return "" }, &stdout, &stderr)
			if err == nil {
				t.Fatal("run = nil, want an error")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("run = %v, want %v", err, tt.wantErr)
			}
			if tt.wantFlag != "" {
				if fe, ok := errors.AsType[*flagError](err); !ok || fe.Flag != tt.wantFlag || fe.Name != "-"+tt.wantFlag {
					t.Errorf("run = %v, want a *flagError for -%s", err, tt.wantFlag)
				}
			}
			// A run that fails on its settings has printed no token and
			// created no database.
			if stdout.String() != "" {
				t.Errorf("stdout = %q, want nothing", stdout.String())
			}
			if files, _ := os.ReadDir(dir); len(files) > 0 {
				t.Errorf("the failed run left %v in the working directory's stand-in", files)
			}
		})
	}
}

func TestTimeoutFlags(t *testing.T) {
	t.Parallel()
	for _, flag := range []string{"-read-header-timeout", "-read-timeout", "-write-timeout", "-idle-timeout"} {
		args := []string{flag, "-1s", "-addr", "127.0.0.1:0", "-db", "memory"}
		err := run(t.Context(), args, func(string) string { return "" }, io.Discard, io.Discard)
		if fe, ok := errors.AsType[*flagError](err); !ok || fe.Name != flag || !errors.Is(err, errNegative) {
			t.Errorf("run %v = %v, want a *flagError saying %s must not be negative", args, err, flag)
		}
	}

	// What the flags make of the server's deadlines, with -db-timeout as
	// the handler's; server's TestDeadlinesInNetHTTPTerms shows what these
	// rows make of the http.Server: write deadlines of 45 s, 9 s, none and
	// none, and a zero idle timeout as none.
	tests := []struct {
		args []string
		want server.Timeouts
	}{
		{nil, server.Timeouts{ReadHeader: 10 * time.Second, Read: 10 * time.Second, Write: 30 * time.Second, Idle: 120 * time.Second, Handler: 5 * time.Second}},
		{[]string{"-read-timeout", "2s", "-db-timeout", "3s", "-write-timeout", "4s", "-idle-timeout", "1m"},
			server.Timeouts{ReadHeader: 10 * time.Second, Read: 2 * time.Second, Write: 4 * time.Second, Idle: time.Minute, Handler: 3 * time.Second}},
		{[]string{"-read-header-timeout", "0", "-read-timeout", "0", "-write-timeout", "0", "-idle-timeout", "0"},
			server.Timeouts{Handler: 5 * time.Second}},
		{[]string{"-read-header-timeout", "0", "-write-timeout", "0"},
			server.Timeouts{Read: 10 * time.Second, Idle: 120 * time.Second, Handler: 5 * time.Second}},
	}
	for _, tt := range tests {
		o, err := parseFlags(append(tt.args, "-db", "memory"), func(string) string { return "" })
		if err != nil {
			t.Errorf("parseFlags %v: %v", tt.args, err)
			continue
		}
		if diff := cmp.Diff(tt.want, o.timeouts()); diff != "" {
			t.Errorf("flags %v: the server's timeouts (-want +got):\n%s", tt.args, diff)
		}
	}

	// With no deadline at all, the server still serves.
	url := startServer(t, "-db", "memory", "-read-header-timeout", "0", "-read-timeout", "0", "-write-timeout", "0", "-idle-timeout", "0")
	if status, body := post(t, url, procToken, `{"id":1,"name":"x"}`); status != 200 {
		t.Errorf("create without deadlines = %d %s, want 200", status, body)
	}
}

// TestTokenFile checks that -token-file reaches the handler, and its
// warning the binary's log, without the token. What a token file may hold
// is httpapi's TestTokenFileReload; when it warns,
// TestTokenFileWarnsOfASharedFile.
func TestTokenFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte("file-token\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	url, _, stderr, stop := startRun(t, []string{"-addr", "127.0.0.1:0", "-db", "memory", "-token-file", file}, nil)
	if status, body := post(t, url, "file-token", `{"id":1,"name":"x"}`); status != 200 {
		t.Errorf("create with the file's token = %d %s, want 200", status, body)
	}
	stop()
	if testkit.Logged(stderr.String(), "token file is readable by group or others; chmod 600 it") != 1 {
		t.Errorf("no warning about the token file's mode:\n%s", stderr)
	}
	if strings.Contains(stderr.String(), "file-token") {
		t.Errorf("the log holds a token:\n%s", stderr)
	}
}

// TestFailedBindLeavesNothing starts the binary on a port another process
// holds: it fails, naming -addr or -metrics-addr, before it creates a
// database or prints a token as if it were serving, and its error is the
// last log line, flushed before run returns, so that main does not print
// it again.
func TestFailedBindLeavesNothing(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := t.TempDir()
	for _, tt := range []struct {
		flag string // the one given the taken port
		args []string
	}{
		{"-addr", []string{"-addr", taken.Addr().String()}},
		{"-metrics-addr", []string{"-addr", "127.0.0.1:0", "-metrics-addr", taken.Addr().String()}},
	} {
		var stdout, stderr testkit.Buffer
		args := append(tt.args, "-db", filepath.Join(dir, "plants.db"), "-log-format", "json")
		err := run(t.Context(), args, func(string) string { return "" }, &stdout, &stderr)
		if !errors.Is(err, syscall.EADDRINUSE) || !strings.HasPrefix(err.Error(), tt.flag+":") {
			t.Fatalf("run %v = %v, want EADDRINUSE naming %s", args, err, tt.flag)
		}
		if _, ok := errors.AsType[loggedError](err); !ok {
			t.Errorf("run %v = %#v, want a loggedError", args, err)
		}
		// The log line is what the operator reads: run's error, word for word.
		lines := jsonLines(t, stderr.String())
		if last := lines[len(lines)-1]; last["level"] != "ERROR" || last["msg"] != "plantstore failed" || last["err"] != err.Error() {
			t.Errorf("run %v: last log line = %v, want run's error %q at level ERROR", args, last, err)
		}
		if out := stdout.String(); strings.Contains(out, "Bearer") || strings.Contains(out, "listening") {
			t.Errorf("run %v printed, failing:\n%s", args, out)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("run %v left %v behind", args, entries)
		}
	}
}

// TestDocsFlag checks that the binary serves the API's reference at /docs
// without a token, and that -docs=false leaves /docs error 404. The page
// and its Content-Security-Policy are apidocs' tests'; a variable setting
// a flag, and a flag beating it, TestFlagsFromEnvironment's.
func TestDocsFlag(t *testing.T) {
	for _, docs := range []bool{true, false} {
		url, _, _, _ := startRun(t, []string{"-addr", "127.0.0.1:0", "-db", "memory", "-docs=" + strconv.FormatBool(docs)},
			map[string]string{"PLANTSTORE_TOKENS": "tok"})
		status, _, body, err := testkit.Get(http.DefaultClient, url+"/docs", "")
		if err != nil {
			t.Fatal(err)
		}
		if served := status == 200 && strings.Contains(string(body), "Plant Store API reference"); served != docs {
			t.Errorf("-docs=%v: GET /docs without a token = %d, %d bytes; want the page served %v", docs, status, len(body), docs)
		}
		if !docs && !strings.Contains(string(body), `"error":404`) {
			t.Errorf("-docs=false: GET /docs = %s, want the Error 404", body)
		}
	}
}

// TestMalformedDBHidesPassword checks that a -db (or PLANTSTORE_DB) that
// does not parse is refused with an error, and a log, that never hold its
// password, whatever its form.
func TestMalformedDBHidesPassword(t *testing.T) {
	t.Parallel()
	for _, db := range []string{
		"host=127.0.0.1 password=S3CRETPW",
		"postgres:/u:S3CRETPW@h/db",
		"postgres//u:S3CRETPW@h/db",
		"postgres:u:S3CRETPW@h/db",
		"postgres:://u:S3CRETPW@h/db",
		"postgres://u:S3CRETPW@h:x/db",
		"postgresql:u:S3CRETPW@h/db",
		"mysql://u:S3CRETPW@h/db",
	} {
		for _, viaEnv := range []bool{false, true} {
			args := []string{"-addr", "127.0.0.1:0", "-db", db}
			getenv := func(string) string { return "" }
			if viaEnv {
				args = []string{"-addr", "127.0.0.1:0"}
				getenv = func(k string) string {
					if k == "PLANTSTORE_DB" {
						return db
					}
					return ""
				}
			}
			var stdout, stderr testkit.Buffer
			err := run(context.Background(), args, getenv, &stdout, &stderr)
			if err == nil {
				t.Errorf("run with -db %q (from the environment: %v) = nil, want an error", db, viaEnv)
				continue
			}
			for _, out := range []string{err.Error(), stdout.String(), stderr.String()} {
				if strings.Contains(out, "S3CRETPW") {
					t.Errorf("run with -db %q (from the environment: %v) shows the password: %s", db, viaEnv, out)
				}
			}
		}
	}
}

// startServer starts the server in-process with args after -addr 127.0.0.1:0,
// accepting the token create and listAll send, and returns its URL.
func startServer(t *testing.T, args ...string) string {
	t.Helper()
	url, _, _, _ := startRun(t, append([]string{"-addr", "127.0.0.1:0"}, args...), map[string]string{"PLANTSTORE_TOKENS": procToken})
	// Before the server stops, drop the client's idle connections: the
	// transport may have dialed some it never used, and Shutdown waits
	// a few seconds for those in case a request is on its way.
	t.Cleanup(client.CloseIdleConnections)
	return url
}

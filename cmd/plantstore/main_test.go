package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/server"
	"github.com/plantstore/plantstore/webhook"
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

// TestRunRejectsBadFlags checks settings that stop run before it serves:
// it returns an error, a *flagError naming the flag or the variable to fix
// where there is one, having printed no token, created no database and
// shown no secret of its settings (a -db's password, a token, a webhook
// secret). A port another process holds fails the start as well, naming
// -addr or -metrics-addr; that error is the last log line, flushed before
// run returns, so that main does not print it again. A webhook secret
// shorter than webhook.MinKeyBytes is refused from the variable or from
// the file, which beats it; what else a file may not hold is webhook's
// TestReadSecretFile.
func TestRunRejectsBadFlags(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	type badRun struct {
		name       string
		args       []string // DIR: a new directory, which must stay empty; TAKEN: a port in use; FILE: file
		env        map[string]string
		file       string // what FILE holds
		wantErr    error  // matched with errors.Is; nil to check only the rest
		wantFlag   string // the flag a *flagError names; "" when none is wanted
		wantName   string // how the *flagError names it: "-"+wantFlag when ""
		wantText   string // in the error; FILE as in args
		wantPrefix string // what the error begins with
		wantLog    string // in the log
		secret     string // in neither the error, stdout nor the log
		logged     bool   // the error is a loggedError, and the last line of the JSON log
	}
	const weak = "s3cre"
	tests := []badRun{
		{name: "-addr taken", args: []string{"-db", "DIR/plants.db", "-log-format", "json", "-addr", "TAKEN"},
			wantErr: syscall.EADDRINUSE, wantPrefix: "-addr: ", logged: true},
		{name: "-metrics-addr taken", args: []string{"-db", "DIR/plants.db", "-log-format", "json", "-metrics-addr", "TAKEN"},
			wantErr: syscall.EADDRINUSE, wantPrefix: "-metrics-addr: ", logged: true},
		{name: "weak webhook secret in the variable", args: []string{"-db", "DIR/plants.db", "-webhook", "http://127.0.0.1:1/hook"},
			env: map[string]string{"PLANTSTORE_WEBHOOK_SECRET": weak}, wantErr: webhook.ErrSecret, wantPrefix: "PLANTSTORE_WEBHOOK_SECRET: ", secret: weak},
		{name: "weak webhook secret in the file", args: []string{"-db", "DIR/plants.db", "-webhook", "http://127.0.0.1:1/hook", "-webhook-secret-file", "FILE"},
			env: map[string]string{"PLANTSTORE_WEBHOOK_SECRET": testkit.WebhookSecret}, file: weak + "\n", wantErr: webhook.ErrSecret, wantText: "FILE", secret: weak},
		{name: "unknown db form", args: []string{"-db", "mysql://x"}, wantErr: errDBForm},
		{name: "bare word db", args: []string{"-db", "plants"}, wantErr: errDBForm},
		{name: "extra argument", args: []string{"serve"}, wantErr: errBadArgs},
		{name: "bad log level", args: []string{"-log-level", "loud"}, wantErr: errBadArgs},
		{name: "missing token file", args: []string{"-db", "memory", "-token-file", "/nonexistent/tokens"}, wantErr: fs.ErrNotExist},
		{name: "token that does not parse", args: []string{"-db", "memory"}, env: map[string]string{"PLANTSTORE_TOKENS": "abc=def"},
			wantErr: httpapi.ErrTokenSyntax, wantLog: "PLANTSTORE_TOKENS", secret: "abc=def"},
		{name: "webhook without secret", args: []string{"-db", "memory", "-webhook", "http://127.0.0.1:1/hook"}, wantErr: errNoWebhookSecret},
		{name: "webhook without secret, SQLite", args: []string{"-db", "DIR/plants.db", "-webhook", "http://127.0.0.1:1/hook"}, wantErr: errNoWebhookSecret},
		{name: "webhook secret file without webhook", args: []string{"-db", "memory", "-webhook-secret-file", "/dev/null"},
			wantFlag: "webhook-secret-file", wantText: "needs -webhook"},
		{name: "its variable without webhook", args: []string{"-db", "memory"}, env: map[string]string{"PLANTSTORE_WEBHOOK_SECRET_FILE": "/dev/null"},
			wantFlag: "webhook-secret-file", wantName: "PLANTSTORE_WEBHOOK_SECRET_FILE", wantText: "needs -webhook"},
		{name: "zero webhook lease", args: []string{"-db", "DIR/plants.db", "-webhook", "http://127.0.0.1:1/hook", "-webhook-lease", "0s"}, wantErr: errNotPositive, wantFlag: "webhook-lease"},
		{name: "negative shutdown timeout", args: []string{"-db", "memory", "-shutdown-timeout", "-5s"}, wantErr: errNegative, wantFlag: "shutdown-timeout"},
		{name: "CORS origin with a path", args: []string{"-db", "memory", "-cors-origin", "https://app.example.com/"}, wantFlag: "cors-origin"},
		{name: "public metrics on a metrics address", args: []string{"-db", "memory", "-metrics-public", "-metrics-addr", "127.0.0.1:0"}, wantFlag: "metrics-public"},
		{name: "metrics address without a port", args: []string{"-db", "DIR/plants.db", "-metrics-addr", "localhost"}, wantFlag: "metrics-addr"},
		{name: "OTLP endpoint without a scheme", args: []string{"-db", "DIR/plants.db", "-otlp-endpoint", "collector:4318"}, wantErr: errOTLPEndpoint, wantFlag: "otlp-endpoint"},
		{name: "OTLP endpoint with a query", args: []string{"-db", "DIR/plants.db", "-otlp-endpoint", "http://collector:4318/?x=1"}, wantErr: errOTLPQuery, wantFlag: "otlp-endpoint"},
	}
	for _, f := range []string{"read-header-timeout", "read-timeout", "write-timeout", "idle-timeout"} {
		tests = append(tests, badRun{name: "negative -" + f, args: []string{"-db", "memory", "-" + f, "-1s"}, wantErr: errNegative, wantFlag: f})
	}
	// A bad value in a variable names the variable.
	for _, v := range [][2]string{
		{"PLANTSTORE_MAX_BODY", "lots"}, {"PLANTSTORE_MAX_BODY", "-1"}, {"PLANTSTORE_LOG_LEVEL", "loud"},
		{"PLANTSTORE_LOG_FORMAT", "xml"}, {"PLANTSTORE_DB", "mysql://x"}, {"PLANTSTORE_READ_TIMEOUT", "-1s"},
		{"PLANTSTORE_WRITE_TIMEOUT", "soon"}, {"PLANTSTORE_SHUTDOWN_TIMEOUT", "-1s"}, {"PLANTSTORE_CONVENTIONAL_STATUS", "maybe"},
	} {
		tests = append(tests, badRun{name: v[0] + "=" + v[1], env: map[string]string{v[0]: v[1]}, wantName: v[0]})
	}
	// A -db that does not parse never shows its password, whatever its form.
	for _, db := range []string{
		"host=127.0.0.1 password=S3CRETPW", "postgres:/u:S3CRETPW@h/db", "postgres//u:S3CRETPW@h/db",
		"postgres:u:S3CRETPW@h/db", "postgres:://u:S3CRETPW@h/db", "postgres://u:S3CRETPW@h:x/db",
		"postgresql:u:S3CRETPW@h/db", "mysql://u:S3CRETPW@h/db",
	} {
		tests = append(tests, badRun{name: "-db " + db, args: []string{"-db", db}, secret: "S3CRETPW"},
			badRun{name: "PLANTSTORE_DB=" + db, env: map[string]string{"PLANTSTORE_DB": db}, secret: "S3CRETPW"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, file := t.TempDir(), filepath.Join(t.TempDir(), "secret")
			testkit.WriteFile(t, file, tt.file)
			replacer := strings.NewReplacer("DIR", dir, "TAKEN", taken.Addr().String(), "FILE", file)
			args := []string{"-addr", "127.0.0.1:0"}
			for _, a := range tt.args {
				args = append(args, replacer.Replace(a))
			}
			// A row that starts serving ends, as run without error, instead of hanging.
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			var stdout, stderr testkit.Buffer
			err := run(ctx, args, func(k string) string { return tt.env[k] }, &stdout, &stderr)
			if err == nil {
				t.Fatal("run = nil, want an error")
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) || !strings.HasPrefix(err.Error(), tt.wantPrefix) {
				t.Errorf("run = %v, want %v beginning %q", err, tt.wantErr, tt.wantPrefix)
			}
			if tt.logged {
				// The log line is what the operator reads: run's error, word for word.
				lines := jsonLines(t, stderr.String())
				last := lines[len(lines)-1]
				if _, ok := errors.AsType[loggedError](err); !ok || last["level"] != "ERROR" || last["msg"] != "plantstore failed" || last["err"] != err.Error() {
					t.Errorf("run = %#v, last log line %v; want a loggedError, logged last at level ERROR", err, last)
				}
			}
			if name := tt.wantName; name != "" || tt.wantFlag != "" {
				if name == "" {
					name = "-" + tt.wantFlag
				}
				if fe, ok := errors.AsType[*flagError](err); !ok || fe.Name != name || tt.wantFlag != "" && fe.Flag != tt.wantFlag {
					t.Errorf("run = %v, want a *flagError for %s", err, name)
				}
			}
			if !strings.Contains(err.Error(), replacer.Replace(tt.wantText)) || !strings.Contains(stderr.String(), tt.wantLog) {
				t.Errorf("run = %v, logging %q; want the error to say %q and the log %q", err, stderr.String(), tt.wantText, tt.wantLog)
			}
			for _, out := range []string{err.Error(), stdout.String(), stderr.String()} {
				if tt.secret != "" && strings.Contains(out, tt.secret) {
					t.Errorf("run shows %q: %s", tt.secret, out)
				}
			}
			if stdout.String() != "" {
				t.Errorf("stdout = %q, want nothing", stdout.String())
			}
			if files, _ := os.ReadDir(dir); len(files) > 0 {
				t.Errorf("the failed run left %v in the working directory's stand-in", files)
			}
		})
	}
}

// TestTimeoutFlags checks what the flags make of the server's deadlines,
// with -db-timeout as the handler's; server's TestDeadlinesInNetHTTPTerms
// shows what these rows make of the http.Server: write deadlines of 45 s,
// 9 s, none and none, and a zero idle timeout as none.
func TestTimeoutFlags(t *testing.T) {
	t.Parallel()
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
}

// TestTimeoutFlagsReachTheServer checks that the timeouts TestTimeoutFlags
// reads reach the binary's server: a connection that sends nothing is
// closed after -read-header-timeout, not the default 10 s.
func TestTimeoutFlagsReachTheServer(t *testing.T) {
	t.Parallel()
	p := startProcess(t, "-db", "memory", "-read-header-timeout", "100ms")
	conn, err := net.Dial("tcp", strings.TrimPrefix(p.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := conn.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("a silent connection read %d bytes, %v; want it closed after -read-header-timeout", n, err)
	}
}

// TestFlagsReachTheHandler starts run with a flag of each kind the handler
// takes and every deadline off. The token file's token creates, and the
// file's mode is warned of in the log, without the token; -max-body beats
// its variable, and -addr PLANTSTORE_ADDR; a conflict is answered 409
// (-conventional-status) rather than the contract's 400; a preflight from
// one -cors-origin and a request from the other are allowed; -docs=false
// leaves /docs error 404; and without deadlines the server still serves.
// With -log-level debug, a rejected token is logged at debug level to
// stderr, and no token reaches stderr or stdout; what the handler's log
// and access log hold of credentials is httpapi's TestTokensNeverLeak.
// What a token file may hold is httpapi's TestTokenFileReload, when it
// warns TestTokenFileWarnsOfASharedFile; CORS for other origins, httpapi's
// TestCORS; the docs page, apidocs' tests; the served docs, TestProbe.
func TestFlagsReachTheHandler(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte("file-token\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	url, stdout, stderr, stop := startRun(t, []string{"-addr", "127.0.0.1:0", "-token-file", file, "-max-body", "100", "-log-level", "debug",
		"-conventional-status", "-cors-origin", "https://app.example.com", "-cors-origin", "http://localhost:3000", "-docs=false",
		"-read-header-timeout", "0", "-read-timeout", "0", "-write-timeout", "0", "-idle-timeout", "0"},
		map[string]string{"PLANTSTORE_ADDR": "192.0.2.1:1", "PLANTSTORE_DB": "memory", "PLANTSTORE_MAX_BODY": "10"})
	// 24 bytes: over the variable's limit, within the flag's.
	if status, body := post(t, url, "file-token", `{"id":1,"name":"Fern"} `); status != 200 {
		t.Errorf("create of a 24-byte body with the file's token, -max-body 100 and PLANTSTORE_MAX_BODY=10 = %d %s, want 200", status, body)
	}
	if status, body := post(t, url, "file-token", `{"id":1,"name":"Fern"}`); status != 409 || !strings.Contains(body, `"error":409`) {
		t.Errorf("conflicting create with -conventional-status = %d %s, want 409 with error 409", status, body)
	}
	for _, c := range []struct{ method, origin, token, want string }{
		{"OPTIONS", "http://localhost:3000", "", "204 http://localhost:3000 GET, HEAD, OPTIONS, POST"},
		{"GET", "https://app.example.com", "file-token", "200 https://app.example.com "},
	} {
		req, _ := http.NewRequest(c.method, url+"/plants", nil)
		req.Header.Set("Origin", c.origin)
		if c.method == "OPTIONS" {
			req.Header.Set("Access-Control-Request-Method", "GET")
		} else {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		// The status, Access-Control-Allow-Origin and Allow.
		if got := fmt.Sprint(resp.StatusCode, " ", resp.Header.Get("Access-Control-Allow-Origin"), " ", resp.Header.Get("Allow")); got != c.want {
			t.Errorf("%s /plants from %s = %q, want %q", c.method, c.origin, got, c.want)
		}
	}
	if got := getCode(t, url+"/docs", ""); got != 404 {
		t.Errorf("-docs=false: GET /docs = %d, want the Error 404", got)
	}
	if got := getCode(t, url+"/plants", "rejected-token"); got != 401 {
		t.Errorf("GET /plants with a rejected token = %d, want the Error 401", got)
	}
	if err := stop(); err != nil {
		t.Fatalf("run after shutdown = %v, want nil", err)
	}
	if testkit.Logged(stderr.String(), "token file is readable by group or others; chmod 600 it") != 1 {
		t.Errorf("no warning about the token file's mode:\n%s", stderr)
	}
	if !strings.Contains(stderr.String(), `level=DEBUG msg="httpapi: token rejected"`) {
		t.Errorf("-log-level debug: no debug line of the rejected token:\n%s", stderr)
	}
	for _, tok := range []string{"file-token", "rejected-token"} {
		if strings.Contains(stderr.String(), tok) || strings.Contains(stdout.String(), tok) {
			t.Errorf("the log or stdout holds a token:\n%s\n%s", stderr, stdout)
		}
	}
}

package server_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/server"
)

// TestListenErrors checks that Listen refuses an address taken and options
// that do not fit with an error saying which, and leaves nothing bound.
func TestListenErrors(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := t.TempDir()
	tests := []struct {
		name        string
		opt         server.Option
		taken       bool // the main address is the taken one
		wantMetrics bool // a *ListenError of the metrics address
		wantErr     string
	}{
		{name: "address taken", taken: true, wantErr: "server: listen tcp " + taken.Addr().String() + ": bind: address already in use"},
		{name: "metrics address taken", opt: server.WithMetrics(taken.Addr().String(), nil), wantMetrics: true,
			wantErr: "server: metrics listener: listen tcp " + taken.Addr().String() + ": bind: address already in use"},
		{name: "negative timeout", opt: server.WithTimeouts(server.Timeouts{Idle: -time.Second}), wantErr: "server: Timeouts.Idle is negative: -1s"},
		{name: "no header bytes", opt: server.WithMaxHeaderBytes(0), wantErr: "server: WithMaxHeaderBytes(0): the limit must be positive"},
		{name: "no shutdown timeout", opt: server.WithShutdownTimeout(0), wantErr: "server: WithShutdownTimeout(0s): the timeout must be positive"},
		{name: "pprof without metrics", opt: server.WithPprof(),
			wantErr: "server: WithPprof needs WithMetrics: profiles are served there, never on the main listener"},
		{name: "certificate without key", opt: server.WithTLS("cert.pem", ""), wantErr: "server: WithTLS needs both the certificate file and the key file"},
		{name: "key without certificate", opt: server.WithTLS("", "key.pem"), wantErr: "server: WithTLS needs both the certificate file and the key file"},
		{name: "reload without function", opt: server.WithReload("tokens", nil, nil), wantErr: `server: WithReload("tokens") needs a name and a function`},
		{name: "certificate missing", opt: server.WithTLS(filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")),
			wantErr: "TLS key: stat " + filepath.Join(dir, "key.pem") + ": no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := testkit.FreeAddr(t)
			if tt.taken {
				addr = taken.Addr().String()
			}
			metricsAddr := testkit.FreeAddr(t)
			opts := []server.Option{server.WithReloadOn(nil)}
			if tt.opt != nil {
				opts = append(opts, tt.opt)
			}
			srv, err := server.Listen(addr, opts...)
			if err == nil {
				srv.Close()
				t.Fatalf("Listen succeeded, want %q", tt.wantErr)
			}
			if diff := cmp.Diff(tt.wantErr, err.Error()); diff != "" {
				t.Errorf("Listen's error (-want +got):\n%s", diff)
			}
			le, isListen := errors.AsType[*server.ListenError](err)
			if wantListen := tt.taken || tt.wantMetrics; isListen != wantListen {
				t.Errorf("Listen = %#v, a *ListenError: %v, want %v", err, isListen, wantListen)
			}
			if isListen && (le.Metrics != tt.wantMetrics || !errors.Is(err, syscall.EADDRINUSE)) {
				t.Errorf("Listen = %+v, want Metrics %v and EADDRINUSE", le, tt.wantMetrics)
			}
			for _, a := range []string{addr, metricsAddr} {
				if a != taken.Addr().String() && !refused(a) {
					t.Errorf("%s is still bound after Listen failed", a)
				}
			}
		})
	}
}

// TestDrainOnContextEnd ends Serve's context while a request is in
// flight: the server stops taking connections on both listeners, the
// metrics' first, and the request still gets its answer; Serve returns
// nil once it has.
func TestDrainOnContextEnd(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		io.WriteString(w, "drained")
	})
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "metrics") })
	srv := start(t, h, server.WithMetrics("127.0.0.1:0", metrics))

	type answer struct {
		body string
		err  error
	}
	answers := make(chan answer, 1)
	go func() {
		resp, err := http.Get(srv.url + "/slow")
		if err != nil {
			answers <- answer{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		answers <- answer{string(b), err}
	}()
	<-entered
	served := make(chan error, 1)
	go func() { served <- srv.stop() }()
	testkit.WaitUntil(t, wait, "the drain's log line", func() bool {
		return testkit.Logged(srv.logs.String(), "shutting down: draining in-flight requests") == 1
	})
	testkit.WaitUntil(t, wait, "both listeners to refuse connections", func() bool {
		return refused(srv.MetricsAddr().String()) && refused(srv.Addr().String())
	})
	select {
	case err := <-served:
		t.Fatalf("Serve returned %v with a request in flight", err)
	default:
	}
	close(release)
	if a := <-answers; a.err != nil || a.body != "drained" {
		t.Errorf("the request in flight got %q, %v; want its answer", a.body, a.err)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve = %v, want nil after the drain", err)
	}
	if want := `level=INFO msg="shutting down: draining in-flight requests" timeout=10s` + "\n"; srv.logs.String() != want {
		t.Errorf("log (-want +got):\n%s", cmp.Diff(want, srv.logs.String()))
	}
}

// TestDrainCutShort checks that requests still in flight at the shutdown
// timeout have their connections closed, and that Serve then says so.
func TestDrainCutShort(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(release) })
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
	})
	srv := start(t, h, server.WithShutdownTimeout(100*time.Millisecond))
	failed := make(chan error, 1)
	go func() {
		resp, err := http.Get(srv.url)
		if err == nil {
			resp.Body.Close()
		}
		failed <- err
	}()
	<-entered
	err := srv.stop()
	if !errors.Is(err, context.DeadlineExceeded) || err.Error() != "shutdown: context deadline exceeded" {
		t.Errorf("Serve = %v, want shutdown: context deadline exceeded", err)
	}
	if err := <-failed; err == nil {
		t.Errorf("the request cut short got an answer")
	}
}

// TestCloseEndsServe checks that Close ends Serve with
// http.ErrServerClosed, and that Serve is served once.
func TestCloseEndsServe(t *testing.T) {
	t.Parallel()
	srv := start(t, http.NotFoundHandler())
	testkit.WaitUntil(t, wait, "Serve to serve", func() bool {
		resp, err := http.Get(srv.url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	})
	if err := srv.Serve(context.Background(), http.NotFoundHandler()); err == nil || errors.Is(err, http.ErrServerClosed) {
		t.Errorf("a second Serve = %v, want an error saying it is called twice", err)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	if err := srv.stop(); !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve after Close = %v, want http.ErrServerClosed", err)
	}
	if !refused(srv.Addr().String()) {
		t.Errorf("%s still listens after Close", srv.Addr())
	}
	if err := srv.Close(); err != nil {
		t.Errorf("a second Close = %v", err)
	}

	closed, _ := listen(t)
	closed.Close()
	if err := closed.Serve(context.Background(), http.NotFoundHandler()); !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve after Close = %v, want http.ErrServerClosed", err)
	}
}

// TestPprofOnlyOnMetricsListener checks that WithPprof serves the profiles
// on the metrics listener, beside the metrics handler, and never on the
// main one, and that without it there are none. A CPU profile or a trace
// asking for as many seconds as the write deadline, or more, is refused at
// once with 400 and a line saying why, while a shorter one is served:
// net/http/pprof would move the deadline itself.
func TestPprofOnlyOnMetricsListener(t *testing.T) {
	t.Parallel()
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "api") })
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "metrics") })

	srv := start(t, api, server.WithMetrics("127.0.0.1:0", mux), server.WithPprof(),
		server.WithTimeouts(server.Timeouts{ReadHeader: time.Second, Read: time.Second, Handler: time.Second, Write: time.Second}))
	metrics := "http://" + srv.MetricsAddr().String()
	for _, path := range []string{"", "cmdline", "symbol", "goroutine?debug=1", "heap", "trace?seconds=0.1", "trace?seconds=x", "profile?seconds=1"} {
		if code, body := get(t, metrics+server.PprofPath+path); code != 200 || body == "" {
			t.Errorf("GET %s%s on the metrics listener = %d, want 200 and a profile", server.PprofPath, path, code)
		}
	}
	for _, path := range []string{"profile?seconds=50", "profile?seconds=3", "profile", "profile?seconds=x",
		"trace?seconds=3", "trace?seconds=2.999e9", "trace?seconds=Inf", "trace?seconds=NaN"} {
		begin := time.Now()
		if code, body := get(t, metrics+server.PprofPath+path); code != 400 || !strings.Contains(body, "write deadline of 3s") {
			t.Errorf("GET %s = %d %q, want 400 naming the write deadline", path, code, body)
		}
		if d := time.Since(begin); d > 2*time.Second {
			t.Errorf("GET %s took %v, want an answer at once", path, d)
		}
	}
	if code, body := get(t, metrics+"/metrics"); code != 200 || body != "metrics" {
		t.Errorf("GET /metrics beside the profiles = %d %q, want the metrics handler's", code, body)
	}
	if code, _ := get(t, metrics+"/elsewhere"); code != 404 {
		t.Errorf("GET /elsewhere on the metrics listener = %d, want the metrics handler's 404", code)
	}
	if code, body := get(t, srv.url+server.PprofPath+"cmdline"); body != "api" {
		t.Errorf("GET %scmdline on the main listener = %d %q, want the API handler's answer", server.PprofPath, code, body)
	}

	without := start(t, api, server.WithMetrics("127.0.0.1:0", mux))
	if code, _ := get(t, "http://"+without.MetricsAddr().String()+server.PprofPath); code != 404 {
		t.Errorf("GET %s on the metrics listener without WithPprof = %d, want 404", server.PprofPath, code)
	}
	if without.Addr() == nil || without.MetricsAddr() == nil || start(t, api).MetricsAddr() != nil {
		t.Errorf("MetricsAddr is nil exactly when WithMetrics is not given")
	}
}

// TestLinksNoVendorSDK checks that a host embedding server links no
// metrics or tracing SDK and no database driver.
func TestLinksNoVendorSDK(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"prometheus", "opentelemetry", "pgx", "modernc.org"} {
			if strings.Contains(dep, banned) {
				t.Errorf("server links %s", dep)
			}
		}
	}
}

package server_test

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/server"
)

// startTLS serves h over TLS with serial 1 of ca, reloading at each value
// sent on the returned channel, and returns the files of its certificate
// and key.
func startTLS(t *testing.T, ca *testkit.CA, h http.Handler, opts ...server.Option) (srv *running, reload chan<- os.Signal, certFile, keyFile string) {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	ca.WriteLeaf(t, 1, certFile, keyFile)
	c := make(chan os.Signal)
	srv = start(t, h, append([]server.Option{server.WithTLS(certFile, keyFile), server.WithReloadOn(c)}, opts...)...)
	return srv, c, certFile, keyFile
}

// hello answers every request "hello".
var hello = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello") })

// TestCertificateReloadedBetweenHandshakes reloads a certificate that
// does not parse, one whose key does not match, and a missing one: each
// time the old one stays in use and the log says why, naming the files.
// Then it reloads a good one: the next handshake gets it, while a
// connection opened before keeps serving with the old, and the log says
// what changed.
func TestCertificateReloadedBetweenHandshakes(t *testing.T) {
	t.Parallel()
	ca := testkit.NewCA(t)
	srv, reload, certFile, keyFile := startTLS(t, ca, hello)
	if got := ca.Serial(t, srv.Addr().String()); got != 1 {
		t.Fatalf("serving serial %d, want 1", got)
	}
	kept := &http.Client{Timeout: wait, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool}, ForceAttemptHTTP2: true}}
	t.Cleanup(kept.CloseIdleConnections)
	get := func() (serial int64, proto int) {
		t.Helper()
		resp, err := kept.Get(srv.url)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if b, _ := io.ReadAll(resp.Body); string(b) != "hello" {
			t.Errorf("GET = %q, want hello", b)
		}
		return resp.TLS.PeerCertificates[0].SerialNumber.Int64(), resp.ProtoMajor
	}
	if serial, proto := get(); serial != 1 || proto != 2 {
		t.Fatalf("kept connection: serial %d over HTTP/%d, want 1 over HTTP/2", serial, proto)
	}

	before := srv.Stats().LastReload
	other := filepath.Join(t.TempDir(), "other.pem")
	steps := []struct {
		name  string
		spoil func()
		why   string
	}{
		{"garbage", func() { testkit.WriteFile(t, certFile, "not a certificate\n") },
			"TLS certificate " + certFile + " and key " + keyFile + ": tls: failed to find any PEM data in certificate input"},
		{"mismatched key", func() {
			ca.WriteLeaf(t, 3, certFile, other)
			ca.WriteLeaf(t, 4, other, keyFile)
		}, "TLS certificate " + certFile + " and key " + keyFile + ": tls: private key does not match public key"},
		{"gone", func() { os.Remove(certFile) }, "TLS certificate: open " + certFile + ": no such file or directory"},
	}
	for i, step := range steps {
		step.spoil()
		srv.reloadOn(t, reload, i+1)
		want := `level=ERROR msg="reload: kept the old certificate" err="` + step.why + `"` + "\n" +
			`level=INFO msg="configuration reloaded" changed=none kept_after_error=certificate` + "\n"
		if got := srv.logs.String(); !strings.HasSuffix(got, want) {
			t.Errorf("%s: log ends %q, want %q", step.name, got, want)
		}
		if got := ca.Serial(t, srv.Addr().String()); got != 1 {
			t.Errorf("%s: serving serial %d, want the old certificate's, 1", step.name, got)
		}
	}
	st := srv.Stats()
	if st.Reloads != 0 || st.FailedReloads != uint64(len(steps)) || !st.LastReloadFailed || !st.LastReload.Equal(before) {
		t.Errorf("Stats = %+v, want %d failed reloads and the last success still Listen's, %v", st, len(steps), before)
	}

	ca.WriteLeaf(t, 0x2a, certFile, keyFile)
	logged := len(srv.logs.String())
	srv.reloadOn(t, reload, len(steps)+1)
	if got := ca.Serial(t, srv.Addr().String()); got != 0x2a {
		t.Errorf("a handshake after the reload got serial %d, want 42", got)
	}
	if serial, _ := get(); serial != 1 {
		t.Errorf("the connection opened before the reload now has serial %d, want still 1", serial)
	}
	line := srv.logs.String()[logged:]
	if !strings.HasPrefix(line, `level=INFO msg="configuration reloaded" changed=certificate kept_after_error=none certificate_serial=2a certificate_expires=`) {
		t.Errorf("reload logged %q, want it to say the certificate changed, with its serial and expiry", line)
	}
	if st := srv.Stats(); st.Reloads != 1 || st.FailedReloads != uint64(len(steps)) || st.LastReloadFailed || !st.LastReload.After(before) {
		t.Errorf("Stats after a good reload = %+v, want one more reload, no more failures, its time after %v", st, before)
	}
}

// TestTLSHandshakeErrorsCounted checks that the server offers HTTP/2, takes TLS
// 1.2 and 1.3, and refuses TLS 1.1; and that Stats counts the handshakes
// that fail (the TLS 1.1 one, a client speaking plain HTTP, one that does
// not trust the certificate, and bare TCP connects, as a load balancer's
// check or a port scan makes) and no other. They are logged at level
// Debug only, one line for the lot within a minute, with the remote
// address; at level Info, not at all.
func TestTLSHandshakeErrorsCounted(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		level      slog.Level
		debugLines int
	}{{slog.LevelInfo, 0}, {slog.LevelDebug, 1}} {
		t.Run(tt.level.String(), func(t *testing.T) {
			t.Parallel()
			ca := testkit.NewCA(t)
			var logs testkit.Buffer
			srv, _, _, _ := startTLS(t, ca, hello, server.WithLogger(testkit.NewLogger(&logs, tt.level)))
			for _, v := range []struct {
				name     string
				max      uint16
				accepted bool
			}{{"TLS 1.1", tls.VersionTLS11, false}, {"TLS 1.2", tls.VersionTLS12, true}, {"TLS 1.3", tls.VersionTLS13, true}} {
				conn, err := tls.Dial("tcp", srv.Addr().String(), &tls.Config{RootCAs: ca.Pool, MinVersion: tls.VersionTLS10, MaxVersion: v.max,
					NextProtos: []string{"h2", "http/1.1"}})
				if err == nil {
					st := conn.ConnectionState()
					if st.Version != v.max || st.NegotiatedProtocol != "h2" {
						t.Errorf("%s handshake negotiated %s and %q, want h2", v.name, tls.VersionName(st.Version), st.NegotiatedProtocol)
					}
					conn.Close()
				}
				if accepted := err == nil; accepted != v.accepted {
					t.Errorf("%s handshake: %v, want accepted %v", v.name, err, v.accepted)
				}
			}
			if resp, err := http.Get("http://" + srv.Addr().String()); err == nil {
				resp.Body.Close()
				if resp.StatusCode != 400 {
					t.Errorf("plain HTTP to the TLS listener = %d, want net/http's 400", resp.StatusCode)
				}
			}
			if _, err := tls.Dial("tcp", srv.Addr().String(), &tls.Config{}); err == nil {
				t.Error("a handshake trusting only the system's roots succeeded")
			}
			ca.Serial(t, srv.Addr().String()) // a handshake that succeeds
			const bare = 20
			for range bare {
				c, err := net.Dial("tcp", srv.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				c.Close()
			}
			const want = 3 + bare
			testkit.WaitUntil(t, wait, "every failed handshake counted", func() bool { return srv.Stats().TLSHandshakeErrors >= want })
			if got := srv.Stats().TLSHandshakeErrors; got != want {
				t.Errorf("TLSHandshakeErrors = %d, want %d", got, want)
			}
			out := logs.String()
			if got := strings.Count(out, `level=DEBUG msg="TLS handshake failed" remote=127.0.0.1:`); got != tt.debugLines {
				t.Errorf("%d lines of failed handshakes at level Debug, want %d within the minute:\n%s", got, tt.debugLines, out)
			}
			for l := range strings.Lines(out) {
				if strings.Contains(l, "handshake") && !strings.HasPrefix(l, "level=DEBUG ") || strings.HasPrefix(l, "level=WARN ") {
					t.Errorf("a failed handshake logged above level Debug: %s", l)
				}
			}
		})
	}
}

// TestKeyFileOthersMayRead checks that Listen warns of a key file its
// group or others may read.
func TestKeyFileOthersMayRead(t *testing.T) {
	t.Parallel()
	ca := testkit.NewCA(t)
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	ca.WriteLeaf(t, 1, certFile, keyFile)
	if err := os.Chmod(keyFile, 0o640); err != nil {
		t.Fatal(err)
	}
	srv, logs := listen(t, server.WithTLS(certFile, keyFile))
	srv.Close()
	want := `level=WARN msg="TLS key file is readable by group or others; chmod 600 it" file=` + keyFile + ` mode=-rw-r----- fix="chmod 600 ` + keyFile + `"` + "\n"
	if logs.String() != want {
		t.Errorf("log = %q, want %q", logs, want)
	}
}

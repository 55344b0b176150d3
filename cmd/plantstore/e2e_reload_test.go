//go:build unix

package main

import (
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/webhook"
)

// These tests start the binary over TLS and send it SIGHUP: what a reload
// does to each file is the library's (server's TLS and reload tests,
// httpapi's TestTokenFileReload, TestTokenFileReloadUnderRequests and
// TestTokenFileReloadOfNamedPipeWithoutWriter, webhook's TestRotateSecret);
// the binary adds the flags that name the files, the signal that reloads
// all of them at once, and the reloads' outcomes in /metrics.

// tlsClient returns a client that trusts only ca and asks for HTTP/2, with
// a new connection, and so a new TLS handshake, for every request.
func tlsClient(ca *testkit.CA) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: ca.Pool},
		ForceAttemptHTTP2: true,
		DisableKeepAlives: true,
	}}
}

// createTLS posts plant id with token through c and returns the status,
// or the Error's code when it is not 200, and the protocol's major version.
func createTLS(t *testing.T, c *http.Client, url, token string, id int64) (code, proto int) {
	t.Helper()
	req, err := http.NewRequest("POST", url+"/plants", strings.NewReader(fmt.Sprintf(`{"id":%d,"name":"p%d"}`, id, id)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("create %d: %v", id, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		return 200, resp.ProtoMajor
	}
	return testkit.ErrorCode(body), resp.ProtoMajor
}

// reloadFiles holds the paths of the files a reload test rewrites.
type reloadFiles struct {
	cert, key, tokens string
}

// startTLS starts the binary serving HTTPS with serial 1 of ca, the token
// file holding token, and args.
func startTLS(t *testing.T, ca *testkit.CA, token string, args ...string) (*testkit.Process, reloadFiles) {
	t.Helper()
	dir := t.TempDir()
	f := reloadFiles{filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "tokens")}
	ca.WriteLeaf(t, 1, f.cert, f.key)
	testkit.WriteFile(t, f.tokens, token+"\n")
	p := testkit.Start(t, binary(t), testkit.Env(), append([]string{"-addr", "127.0.0.1:0", "-db", "memory",
		"-tls-cert", f.cert, "-tls-key", f.key, "-token-file", f.tokens}, args...)...)
	if !strings.HasPrefix(p.URL, "https://") {
		t.Fatalf("listening on %s, want https://", p.URL)
	}
	return p, f
}

// hangUp sends p SIGHUP and waits for the n-th reload's log line, which
// it returns.
func hangUp(t *testing.T, p *testkit.Process, n int) string {
	t.Helper()
	if err := p.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testkit.WaitUntil(t, 30*time.Second, fmt.Sprintf("reload %d in the log", n), func() bool {
		return testkit.Logged(p.Stderr.String(), "configuration reloaded") == n
	})
	return lastLine(p.Stderr.String(), "configuration reloaded")
}

// lastLine returns the last line of log output whose message is msg.
func lastLine(output, msg string) string {
	last := ""
	for line := range strings.Lines(output) {
		if testkit.Logged(line, msg) == 1 {
			last = line
		}
	}
	return last
}

// TestSIGHUPReloadsTheFiles starts the binary with -tls-cert and -tls-key,
// which serve HTTPS, over HTTP/2, and with which -probe finds it. It
// rewrites the certificate, the token file and the webhook secret file,
// and sends SIGHUP: first with files that will not do (a certificate that
// does not parse, a token file with a line no client can send, a weak
// secret), which keeps every old value, logs why, naming the token file's
// refused line, shows the tokens failing in /metrics (the alert
// PlantstoreConfigReloadFailed reads it) and serves on; then with good
// ones, which all take effect at once, without a secret or token in the
// log.
//
// It is one piece: each reload acts on the files and the process the one
// before it left.
func TestSIGHUPReloadsTheFiles(t *testing.T) {
	oldSecret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("plantstore old webhook key 012345"))
	newSecret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("plantstore new webhook key 678901"))
	var mu sync.Mutex
	signedWith := map[int64]string{} // by plant id: "old", "new" or "neither"
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var p struct{ ID int64 }
		json.Unmarshal(body, &p)
		which := "neither"
		for _, s := range []struct{ name, secret string }{{"old", oldSecret}, {"new", newSecret}} {
			if webhook.Verify([]byte(s.secret), r.Header, body, time.Now(), 0) == nil {
				which = s.name
			}
		}
		mu.Lock()
		signedWith[p.ID] = which
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(hook.Close)
	secretFile := filepath.Join(t.TempDir(), "webhook-secret")
	testkit.WriteFile(t, secretFile, oldSecret+"\n")
	ca := testkit.NewCA(t)
	p, f := startTLS(t, ca, "old-token", "-webhook", hook.URL, "-webhook-secret-file", secretFile)
	addr := strings.TrimPrefix(p.URL, "https://")
	c := tlsClient(ca)
	// create stores plant id with token, wants code, and returns what its
	// delivery was signed with, when it was stored.
	create := func(id int64, token string, want int) string {
		t.Helper()
		if code, proto := createTLS(t, c, p.URL, token, id); code != want || proto != 2 {
			t.Fatalf("create %d with %s = %d over HTTP/%d, want %d over HTTP/2", id, token, code, proto, want)
		}
		if want != 200 {
			return ""
		}
		testkit.WaitUntil(t, 30*time.Second, fmt.Sprintf("the delivery of plant %d", id), func() bool {
			mu.Lock()
			defer mu.Unlock()
			_, ok := signedWith[id]
			return ok
		})
		mu.Lock()
		defer mu.Unlock()
		return signedWith[id]
	}
	// reloads returns the tokens' series of the reloads' outcomes, read
	// with token: 1 or 0 for the last reload, and the failures so far.
	reloads := func(token string) (last, failures float64) {
		t.Helper()
		mfs, tokens := testkit.Scrape(t, c, p.URL+"/metrics", token), map[string]string{"what": "tokens"}
		return find(t, mfs, "plantstore_config_last_reload_successful", tokens).GetGauge().GetValue(),
			find(t, mfs, "plantstore_config_reload_failures_total", tokens).GetCounter().GetValue()
	}
	if out, errOut, err := testkit.Run(t, binary(t), testkit.Env(), "-probe", "/healthz", "-addr", addr,
		"-tls-cert", f.cert, "-tls-key", f.key); err != nil || !strings.HasPrefix(out, "GET https://") {
		t.Errorf("-probe /healthz with -tls-cert: %v, stdout %q, stderr %q; want status 0 after a GET over HTTPS", err, out, errOut)
	}
	if got := create(1, "old-token", 200); got != "old" {
		t.Errorf("before a reload, signed with %s, want old", got)
	}
	if last, _ := reloads("old-token"); last != 1 {
		t.Errorf("the tokens' last reload at start = %v, want 1", last)
	}

	testkit.WriteFile(t, f.cert, "not a certificate\n")
	testkit.WriteFile(t, f.tokens, "# the tokens\nnew-token\na token with spaces\n")
	testkit.WriteFile(t, secretFile, "short\n")
	if line := hangUp(t, p, 1); !strings.Contains(line, `kept_after_error="certificate,tokens,webhook secret"`) {
		t.Errorf("a reload of bad files logged %q, want every old value kept", line)
	}
	logs := p.Stderr.String()
	for _, want := range []struct{ msg, why string }{
		{"reload: kept the old certificate", f.cert},
		{"reload: kept the old tokens", f.tokens + ", line 3"},
		{"reload: kept the old webhook secret", "webhook: invalid secret"},
	} {
		if line := lastLine(logs, want.msg); !strings.Contains(line, "level=ERROR") || !strings.Contains(line, want.why) {
			t.Errorf("logged %q, want an error saying %q", line, want.why)
		}
	}
	if got := ca.Serial(t, addr); got != 1 {
		t.Errorf("after a reload of bad files, serving serial %d, want the old certificate's, 1", got)
	}
	if got := create(2, "old-token", 200); got != "old" {
		t.Errorf("after a reload of bad files, signed with %s, want old", got)
	}
	if last, failures := reloads("old-token"); last != 0 || failures != 1 {
		t.Errorf("after a failed reload, the tokens' last reload %v and failures %v; want 0 and 1", last, failures)
	}

	ca.WriteLeaf(t, 2, f.cert, f.key)
	testkit.WriteFile(t, f.tokens, "new-token\n")
	testkit.WriteFile(t, secretFile, newSecret+"\n")
	if line := hangUp(t, p, 2); !strings.Contains(line, `changed="certificate,tokens,webhook secret"`) || !strings.Contains(line, "certificate_serial=2 ") {
		t.Errorf("a reload of good files logged %q, want the certificate (serial 2), the tokens and the webhook secret changed", line)
	}
	if got := ca.Serial(t, addr); got != 2 {
		t.Errorf("serving serial %d after the reload, want 2", got)
	}
	create(3, "old-token", 401)
	if got := create(4, "new-token", 200); got != "new" {
		t.Errorf("after the reload, signed with %s, want new", got)
	}
	if last, failures := reloads("new-token"); last != 1 || failures != 1 {
		t.Errorf("after a good reload, the tokens' last reload %v and failures %v; want 1 and 1", last, failures)
	}
	for _, s := range []string{"old-token", "new-token", oldSecret, newSecret, oldSecret[len("whsec_"):], newSecret[len("whsec_"):]} {
		if strings.Contains(p.Stderr.String(), s) {
			t.Errorf("the log holds a token or a webhook secret:\n%s", p.Stderr)
		}
	}
	select {
	case <-p.Exited():
		t.Fatalf("plantstore exited: %v\n%s", p.Err(), p.Stderr)
	default:
	}
}

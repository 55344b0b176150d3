//go:build unix

package main

import (
	"cmp"
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

// TestSIGHUPReloadsTheFiles starts the binary with -tls-cert and -tls-key,
// with which -probe finds it over HTTPS, -token-file and
// -webhook-secret-file. It rewrites the three files and sends SIGHUP:
// first with files that will not do (a certificate that does not parse, a
// token file with a line no client can send, a weak secret), which the
// reload logs as each kept; then with good ones, which all take effect at
// once, without a secret or token in the log, and /metrics shows the
// tokens' failed reload and their last one good (the alert
// PlantstoreConfigReloadFailed reads it). What a reload does to each
// file, and that one that will not do keeps the old value, is the
// library's (server's TestReloadLogsWhatChanged and TLS tests, httpapi's
// TestTokenFileReload, webhook's TestRotateSecret; the metrics, promstats'
// TestServer): the binary adds the flags that name the files, the signal
// that reloads all of them at once, and the reloads' outcomes in /metrics.
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
	dir := t.TempDir()
	cert, key, tokens, secret := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "tokens"), filepath.Join(dir, "secret")
	ca := testkit.NewCA(t)
	ca.WriteLeaf(t, 1, cert, key)
	testkit.WriteFile(t, tokens, "old-token\n")
	testkit.WriteFile(t, secret, oldSecret+"\n")
	p := testkit.Start(t, binary(t), testkit.Env(), "-addr", "127.0.0.1:0", "-db", "memory", "-tls-cert", cert, "-tls-key", key,
		"-token-file", tokens, "-webhook", hook.URL, "-webhook-secret-file", secret)
	addr, ok := strings.CutPrefix(p.URL, "https://")
	if !ok {
		t.Fatalf("listening on %s, want https://", p.URL)
	}
	// A new connection, and so a new TLS handshake, for every request.
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool}, DisableKeepAlives: true}}
	// create stores plant id with token, wants the status or Error code
	// want, and returns what its delivery was signed with, when stored.
	create := func(id int64, token string, want int) string {
		t.Helper()
		if status, code, err := testkit.Create(t.Context(), c, p.URL, token, id, fmt.Sprint("p", id)); err != nil || cmp.Or(code, status) != want {
			t.Fatalf("create %d with %s = %d, error %d, %v; want %d", id, token, status, code, err, want)
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
	// hangUp sends SIGHUP and returns the log line of the n-th reload.
	hangUp := func(n int) (line string) {
		t.Helper()
		if err := p.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		testkit.WaitUntil(t, 30*time.Second, fmt.Sprintf("reload %d in the log", n), func() bool {
			return testkit.Logged(p.Stderr.String(), "configuration reloaded") == n
		})
		for l := range strings.Lines(p.Stderr.String()) {
			if testkit.Logged(l, "configuration reloaded") == 1 {
				line = l
			}
		}
		return line
	}
	if out, errOut, err := testkit.Run(t, binary(t), testkit.Env(), "-probe", "/healthz", "-addr", addr,
		"-tls-cert", cert, "-tls-key", key); err != nil || !strings.HasPrefix(out, "GET https://") {
		t.Errorf("-probe /healthz with -tls-cert: %v, stdout %q, stderr %q; want status 0 after a GET over HTTPS", err, out, errOut)
	}
	if got := create(1, "old-token", 200); got != "old" {
		t.Errorf("before a reload, signed with %s, want old", got)
	}

	testkit.WriteFile(t, cert, "not a certificate\n")
	testkit.WriteFile(t, tokens, "# the tokens\nnew-token\na token with spaces\n")
	testkit.WriteFile(t, secret, "short\n")
	if line := hangUp(1); !strings.Contains(line, `kept_after_error="certificate,tokens,webhook secret"`) {
		t.Errorf("a reload of bad files logged %q, want every old value kept", line)
	}

	ca.WriteLeaf(t, 2, cert, key)
	testkit.WriteFile(t, tokens, "new-token\n")
	testkit.WriteFile(t, secret, newSecret+"\n")
	if line := hangUp(2); !strings.Contains(line, `changed="certificate,tokens,webhook secret"`) || !strings.Contains(line, "certificate_serial=2 ") {
		t.Errorf("a reload of good files logged %q, want the certificate (serial 2), the tokens and the webhook secret changed", line)
	}
	if got := ca.Serial(t, addr); got != 2 {
		t.Errorf("serving serial %d after the reload, want 2", got)
	}
	create(3, "old-token", 401)
	if got := create(4, "new-token", 200); got != "new" {
		t.Errorf("after the reload, signed with %s, want new", got)
	}
	mfs, what := testkit.Scrape(t, c, p.URL+"/metrics", "new-token"), map[string]string{"what": "tokens"}
	if last, failures := find(t, mfs, "plantstore_config_last_reload_successful", what).GetGauge().GetValue(),
		find(t, mfs, "plantstore_config_reload_failures_total", what).GetCounter().GetValue(); last != 1 || failures != 1 {
		t.Errorf("after a failed reload and a good one, the tokens' last reload %v and failures %v; want 1 and 1", last, failures)
	}
	for _, s := range []string{"old-token", "new-token", oldSecret, newSecret, oldSecret[len("whsec_"):], newSecret[len("whsec_"):]} {
		if strings.Contains(p.Stderr.String(), s) {
			t.Errorf("the log holds a token or a webhook secret:\n%s", p.Stderr)
		}
	}
}

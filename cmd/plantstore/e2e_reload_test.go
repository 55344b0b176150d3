//go:build unix

package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/webhook"
)

// A testCA signs the certificates the TLS tests serve, and is the only
// root their clients trust.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "plantstore test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &testCA{cert: cert, key: key, pool: pool}
}

// writeLeaf writes a certificate for 127.0.0.1 with the given serial,
// signed by ca, and its key, in PEM, to certFile and keyFile.
func (ca *testCA) writeLeaf(t *testing.T, serial int64, certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, certFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	writeFile(t, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})))
}

func writeFile(t *testing.T, name, data string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// client returns a client that trusts only ca and asks for HTTP/2, with
// a new connection, and so a new TLS handshake, for every request when
// fresh.
func (ca *testCA) client(fresh bool) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: ca.pool},
		ForceAttemptHTTP2: true,
		DisableKeepAlives: fresh,
	}}
}

// served is the outcome of one request: the HTTP status, the Error's
// code when it is not 200, the protocol's major version, or err when no
// complete answer came.
type served struct {
	status, code, proto int
	err                 error
}

// createTLS posts plant id with token through c.
func createTLS(c *http.Client, url, token string, id int64) served {
	req, err := http.NewRequest("POST", url+"/plants", strings.NewReader(fmt.Sprintf(`{"id":%d,"name":"p%d"}`, id, id)))
	if err != nil {
		return served{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return served{err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return served{err: err}
	}
	s := served{status: resp.StatusCode, proto: resp.ProtoMajor}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error int }
		if err := json.Unmarshal(body, &e); err != nil {
			s.err = fmt.Errorf("status %d with body %q", resp.StatusCode, body)
		}
		s.code = e.Error
	}
	return s
}

// serial dials the server at url afresh and returns the serial of the
// certificate it presents.
func (ca *testCA) serial(t *testing.T, url string) int64 {
	t.Helper()
	conn, err := tls.Dial("tcp", strings.TrimPrefix(url, "https://"), &tls.Config{RootCAs: ca.pool})
	if err != nil {
		t.Fatalf("TLS handshake: %v", err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
}

// reloadFiles holds the paths of the files a reload test rewrites.
type reloadFiles struct {
	cert, key, tokens string
}

// startTLS starts the binary serving HTTPS with serial 1 of ca and the
// token file holding token.
func startTLS(t *testing.T, ca *testCA, token string) (*testkit.Process, reloadFiles) {
	t.Helper()
	dir := t.TempDir()
	f := reloadFiles{filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"), filepath.Join(dir, "tokens")}
	ca.writeLeaf(t, 1, f.cert, f.key)
	writeFile(t, f.tokens, token+"\n")
	p := testkit.Start(t, binary(t), testkit.Env(), "-addr", "127.0.0.1:0", "-db", "memory",
		"-tls-cert", f.cert, "-tls-key", f.key, "-token-file", f.tokens)
	if !strings.HasPrefix(p.URL, "https://") {
		t.Fatalf("listening on %s, want https://", p.URL)
	}
	return p, f
}

// hangUp sends p SIGHUP and waits for the n-th reload's log line.
func hangUp(t *testing.T, p *testkit.Process, n int) {
	t.Helper()
	if err := p.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	testkit.WaitUntil(t, 30*time.Second, fmt.Sprintf("reload %d in the log", n), func() bool {
		return logged(p.Stderr.String(), "configuration reloaded") == n
	})
}

// lastLine returns the last line of log output whose message is msg.
func lastLine(output, msg string) string {
	last := ""
	for line := range strings.Lines(output) {
		if logged(line, msg) == 1 {
			last = line
		}
	}
	return last
}

// TestTLSVersionsAndHTTP2 checks that the HTTPS listener negotiates
// HTTP/2, takes TLS 1.2 and refuses TLS 1.1, and that -probe finds it.
func TestTLSVersionsAndHTTP2(t *testing.T) {
	ca := newTestCA(t)
	p, f := startTLS(t, ca, "tls-token")
	addr := strings.TrimPrefix(p.URL, "https://")
	if out, errOut, err := testkit.Run(t, binary(t), testkit.Env(), "-probe", "/healthz", "-addr", addr,
		"-tls-cert", f.cert, "-tls-key", f.key); err != nil || !strings.HasPrefix(out, "GET https://") {
		t.Errorf("-probe /healthz with -tls-cert: %v, stdout %q, stderr %q; want status 0 after a GET over HTTPS", err, out, errOut)
	}
	if s := createTLS(ca.client(false), p.URL, "tls-token", 1); s.err != nil || s.status != 200 || s.proto != 2 {
		t.Errorf("create over HTTPS = %+v, want 200 over HTTP/2", s)
	}
	for _, v := range []struct {
		name     string
		max      uint16
		accepted bool
	}{{"TLS 1.1", tls.VersionTLS11, false}, {"TLS 1.2", tls.VersionTLS12, true}, {"TLS 1.3", tls.VersionTLS13, true}} {
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.pool, MinVersion: tls.VersionTLS10, MaxVersion: v.max})
		if err == nil {
			if got := conn.ConnectionState().Version; got != v.max {
				t.Errorf("%s handshake negotiated %s", v.name, tls.VersionName(got))
			}
			conn.Close()
		}
		if accepted := err == nil; accepted != v.accepted {
			t.Errorf("%s handshake: %v, want accepted %v", v.name, err, v.accepted)
		}
	}
}

// TestTLSReloadUnderLoad rotates the certificate and the token with
// SIGHUP while clients create plants, over kept and fresh connections,
// and checks that no request fails: before the reload the old token
// works, after it the new one does and the old one is refused with error
// 401, and new connections get the new certificate.
func TestTLSReloadUnderLoad(t *testing.T) {
	ca := newTestCA(t)
	p, f := startTLS(t, ca, "old-token")
	if got := ca.serial(t, p.URL); got != 1 {
		t.Fatalf("serving serial %d, want 1", got)
	}
	var token atomic.Pointer[string]
	oldTok, newTok := "old-token", "new-token"
	token.Store(&oldTok)
	load := startLoad(ca, p.URL, &token)

	load.waitFor(t, oldTok, 300)
	ca.writeLeaf(t, 2, f.cert, f.key)
	writeFile(t, f.tokens, newTok+"\n")
	hupAt := time.Now()
	hangUp(t, p, 1)
	token.Store(&newTok)
	load.waitFor(t, newTok, 300)
	results := load.stop()

	refused := 0
	for _, r := range results {
		ok := r.err == nil && r.status == 200
		// An old token sent while the reload ran may meet the new set.
		racing := r.token == oldTok && r.end.After(hupAt) && r.code == 401 && r.err == nil
		if !ok && !racing {
			t.Errorf("create %d with %s, %v to %v (SIGHUP at %v): %+v", r.id, r.token, r.start, r.end, hupAt, r.served)
		}
		if racing {
			refused++
		}
	}
	t.Logf("%d creates, none failed; %d with the old token met the new set while the reload ran", len(results), refused)
	if got := ca.serial(t, p.URL); got != 2 {
		t.Errorf("serving serial %d after the reload, want 2", got)
	}
	if s := createTLS(ca.client(true), p.URL, oldTok, 1_000_000); s.err != nil || s.code != 401 {
		t.Errorf("create with the old token after the reload = %+v, want error 401", s)
	}
	if s := createTLS(ca.client(true), p.URL, newTok, 1_000_001); s.err != nil || s.status != 200 || s.proto != 2 {
		t.Errorf("create with the new token after the reload = %+v, want 200 over HTTP/2", s)
	}
	line := lastLine(p.Stderr.String(), "configuration reloaded")
	if !strings.Contains(line, "changed=certificate,tokens ") || !strings.Contains(line, "certificate_serial=2 ") {
		t.Errorf("reload logged %q, want it to say the certificate (serial 2) and the tokens changed", line)
	}
	for _, tok := range []string{oldTok, newTok} {
		if strings.Contains(p.Stderr.String(), tok) {
			t.Errorf("the log holds the token %s:\n%s", tok, p.Stderr)
		}
	}
}

// A load is clients creating plants until stopped: four share a kept
// HTTP/2 connection and four open a connection for every request.
type load struct {
	mu      sync.Mutex
	results []result
	done    atomic.Bool
	wg      sync.WaitGroup
}

// A result is one create of a load.
type result struct {
	id         int64
	token      string
	start, end time.Time
	served
}

func startLoad(ca *testCA, url string, token *atomic.Pointer[string]) *load {
	l := &load{}
	var next atomic.Int64
	kept := ca.client(false)
	for i := range 8 {
		c := kept
		if i%2 == 1 {
			c = ca.client(true)
		}
		l.wg.Go(func() {
			for !l.done.Load() {
				r := result{id: next.Add(1), token: *token.Load(), start: time.Now()}
				r.served = createTLS(c, url, r.token, r.id)
				r.end = time.Now()
				l.mu.Lock()
				l.results = append(l.results, r)
				l.mu.Unlock()
			}
		})
	}
	return l
}

// waitFor waits until n creates with token have succeeded.
func (l *load) waitFor(t *testing.T, token string, n int) {
	t.Helper()
	testkit.WaitUntil(t, time.Minute, fmt.Sprintf("%d creates with %s", n, token), func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		ok := 0
		for _, r := range l.results {
			if r.token == token && r.status == 200 {
				ok++
			}
		}
		return ok >= n
	})
}

// stop stops the load and returns its results.
func (l *load) stop() []result {
	l.done.Store(true)
	l.wg.Wait()
	return l.results
}

// TestReloadKeepsOldValuesOnBadFiles sends SIGHUP with a certificate that
// does not parse and a token file that is gone, then with a key that does
// not match and a token no client can send, and checks that the old
// certificate and token stay in use, the process serves on, and the log
// says why; a reload of good files then takes them.
func TestReloadKeepsOldValuesOnBadFiles(t *testing.T) {
	ca := newTestCA(t)
	p, f := startTLS(t, ca, "old-token")
	c := ca.client(true)
	steps := []struct {
		name  string
		spoil func()
		// why is what each error line says of its cause.
		whyCert, whyTokens string
	}{
		{"garbage and gone", func() {
			writeFile(t, f.cert, "not a certificate\n")
			os.Remove(f.tokens)
		}, "failed to find any PEM data", "no such file or directory"},
		{"mismatched and unusable", func() {
			dir := t.TempDir()
			ca.writeLeaf(t, 3, f.cert, filepath.Join(dir, "other.pem"))
			ca.writeLeaf(t, 4, filepath.Join(dir, "other.pem"), f.key)
			writeFile(t, f.tokens, "a token with spaces\n")
		}, "private key does not match public key", "line 1: httpapi: not a valid bearer token"},
	}
	for i, step := range steps {
		step.spoil()
		hangUp(t, p, i+1)
		logs := p.Stderr.String()
		for _, want := range []struct{ msg, file, why string }{
			{"reload: kept the old certificate", f.cert, step.whyCert},
			{"reload: kept the old tokens", f.tokens, step.whyTokens},
		} {
			if n := logged(logs, want.msg); n != i+1 {
				t.Errorf("%s: %d lines %q, want %d", step.name, n, want.msg, i+1)
			}
			if line := lastLine(logs, want.msg); !strings.Contains(line, "level=ERROR") ||
				!strings.Contains(line, want.file) || !strings.Contains(line, want.why) {
				t.Errorf("%s: logged %q, want an error naming %s and saying %q", step.name, line, want.file, want.why)
			}
		}
		if got := ca.serial(t, p.URL); got != 1 {
			t.Errorf("%s: serving serial %d, want the old certificate's, 1", step.name, got)
		}
		if s := createTLS(c, p.URL, "old-token", int64(i+1)); s.err != nil || s.status != 200 {
			t.Errorf("%s: create with the old token = %+v, want 200", step.name, s)
		}
	}
	ca.writeLeaf(t, 5, f.cert, f.key)
	writeFile(t, f.tokens, "new-token\n")
	hangUp(t, p, len(steps)+1)
	if got := ca.serial(t, p.URL); got != 5 {
		t.Errorf("serving serial %d after a good reload, want 5", got)
	}
	if s := createTLS(c, p.URL, "new-token", 100); s.err != nil || s.status != 200 {
		t.Errorf("create with the new token after a good reload = %+v, want 200", s)
	}
	select {
	case <-p.Exited():
		t.Fatalf("plantstore exited: %v\n%s", p.Err(), p.Stderr)
	default:
	}
}

// TestReloadWebhookSecret checks that after SIGHUP deliveries are signed
// with the secret now in -webhook-secret-file, and that a weak one there
// keeps the old.
func TestReloadWebhookSecret(t *testing.T) {
	oldSecret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("plantstore old webhook key 012345"))
	newSecret := "whsec_" + base64.StdEncoding.EncodeToString([]byte("plantstore new webhook key 678901"))
	var mu sync.Mutex
	signedWith := map[int64]string{} // by plant id: "old", "new" or "neither"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	t.Cleanup(srv.Close)
	file := filepath.Join(t.TempDir(), "webhook-secret")
	writeFile(t, file, oldSecret+"\n")
	p := startProcess(t, "-db", "memory", "-webhook", srv.URL, "-webhook-secret-file", file)
	deliver := func(id int64) string {
		t.Helper()
		if status, _, err := create(p.URL, id, fmt.Sprint("p", id)); err != nil || status != 200 {
			t.Fatalf("create %d: %d, %v", id, status, err)
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
	if got := deliver(1); got != "old" {
		t.Errorf("before the reload, signed with %s, want old", got)
	}
	writeFile(t, file, "short\n")
	hangUp(t, p, 1)
	if line := lastLine(p.Stderr.String(), "reload: kept the old webhook secret"); !strings.Contains(line, "webhook: invalid secret") {
		t.Errorf("reload of a weak secret logged %q, want why it kept the old one", line)
	}
	if got := deliver(2); got != "old" {
		t.Errorf("after a reload of a weak secret, signed with %s, want old", got)
	}
	writeFile(t, file, newSecret+"\n")
	hangUp(t, p, 2)
	if line := lastLine(p.Stderr.String(), "configuration reloaded"); !strings.Contains(line, `changed="webhook secret"`) {
		t.Errorf("reload logged %q, want it to say the webhook secret changed", line)
	}
	if got := deliver(3); got != "new" {
		t.Errorf("after the reload, signed with %s, want new", got)
	}
	for _, s := range []string{oldSecret, newSecret, oldSecret[len("whsec_"):], newSecret[len("whsec_"):]} {
		if strings.Contains(p.Stderr.String(), s) {
			t.Errorf("the log holds a webhook secret:\n%s", p.Stderr)
		}
	}
}

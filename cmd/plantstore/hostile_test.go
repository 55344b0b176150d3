//go:build unix

package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit"
)

// These tests drive the server, started in-process by run, with clients
// that hold many connections idle or send credentials that must not leak.
// What single slow, oversized or unread requests do to the server is
// package server's (deadline_test.go), and bodies past the limit are
// httpapi's (limits_test.go); the flags that set those limits are checked
// by TestTimeoutFlags. Every wait ends by itself: a connection the server
// does not close within hostileWait fails the test. The file builds on
// Unix only, for the open-file limit.

const hostileWait = 30 * time.Second

// dial opens a raw TCP connection to the server at url and closes it when
// the test ends.
func dial(t *testing.T, url string) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), hostileWait)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// raiseFileLimit makes sure the process may hold need open files, raising
// the soft limit up to the hard one for the test, or skips the test.
func raiseFileLimit(t *testing.T, need uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("SKIPPING: cannot read the open-file limit: %v", err)
	}
	if lim.Cur >= need {
		return
	}
	if lim.Max < need {
		t.Skipf("SKIPPING: this test needs %d open files; the hard limit is %d (raise it with ulimit -Hn)", need, lim.Max)
	}
	old := lim
	lim.Cur = need
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("SKIPPING: this test needs %d open files; raising the limit from %d failed: %v", need, old.Cur, err)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
}

// An idleConn is a raw connection held open by a test.
type idleConn struct {
	conn net.Conn
	r    *bufio.Reader
}

// healthz sends GET /healthz on c and reads the answer, leaving the
// connection open.
func (c *idleConn) healthz() error {
	c.conn.SetDeadline(time.Now().Add(hostileWait))
	if _, err := io.WriteString(c.conn, "GET /healthz HTTP/1.1\r\nHost: plantstore\r\n\r\n"); err != nil {
		return err
	}
	resp, err := http.ReadResponse(c.r, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != 200 || resp.Close {
		return fmt.Errorf("status %d, close %v", resp.StatusCode, resp.Close)
	}
	return nil
}

// TestIdleConnectionsDoNotStarveClients holds 1,000 idle connections open
// (half after one request, half that never sent a byte) while a normal
// client creates 100 plants: every create succeeds, and every idle
// connection is still open and served afterwards.
func TestIdleConnectionsDoNotStarveClients(t *testing.T) {
	t.Parallel()
	const idle, creates = 1000, 100
	// A client and a server descriptor per connection, plus slack.
	raiseFileLimit(t, 2*idle+1024)
	// Long read timeouts keep the server from cutting the connections
	// that never sent a byte before the test is done with them;
	// server.TestSlowHeadersAreCutOff covers that cut.
	url, _, _, _ := startRun(t, []string{"-addr", "127.0.0.1:0", "-db", "memory", "-read-header-timeout", "5m", "-read-timeout", "5m"},
		map[string]string{"PLANTSTORE_TOKENS": procToken})
	// Before the server stops, drop the client's idle connections: the
	// transport may have dialed some it never used, and Shutdown waits
	// a few seconds for those in case a request is on its way.
	t.Cleanup(client.CloseIdleConnections)

	conns := make([]*idleConn, idle)
	for i := range conns {
		conn := dial(t, url)
		conns[i] = &idleConn{conn: conn, r: bufio.NewReader(conn)}
		if i%2 == 0 {
			if err := conns[i].healthz(); err != nil {
				t.Fatalf("keep-alive connection %d: first request: %v", i, err)
			}
		}
	}

	var (
		wg   sync.WaitGroup
		next atomic.Int64
	)
	for range 10 {
		wg.Go(func() {
			for {
				id := next.Add(1)
				if id > creates {
					return
				}
				if status, code, err := create(url, id, fmt.Sprint("busy-", id)); err != nil || status != 200 {
					t.Errorf("create %d with %d idle connections open = %d (error %d), %v, want 200", id, idle, status, code, err)
				}
			}
		})
	}
	wg.Wait()
	if got := len(listAll(t, url)); got != creates {
		t.Errorf("%d plants stored, want %d", got, creates)
	}

	for i, c := range conns {
		if err := c.healthz(); err != nil {
			t.Fatalf("idle connection %d after the creates: %v, want it open and served", i, err)
		}
	}
}

// TestTokensNeverLeak sends accepted, rejected and malformed credentials
// to a server logging at debug level, which accepts either token of
// PLANTSTORE_TOKENS: no token appears in the log, on standard output, or
// in any answer, and the access log has a line per request with its path
// and Error code, and no body.
//
// It is one piece: every request it sends is then looked for in the one log.
func TestTokensNeverLeak(t *testing.T) {
	t.Parallel()
	random := func(prefix string) string {
		b := make([]byte, 12)
		rand.Read(b)
		return prefix + hex.EncodeToString(b)
	}
	good, second := random("accepted-"), random("second-")
	rejected := random("rejected-")
	url, stdout, stderr, stop := startRun(t, []string{"-addr", "127.0.0.1:0", "-db", "memory", "-log-level", "debug"},
		map[string]string{"PLANTSTORE_TOKENS": good + ", " + second})
	secrets := []string{good, second, rejected, good[len("accepted-"):], second[len("second-"):], rejected[len("rejected-"):]}
	if status, body := post(t, url, second, `{"id":100,"name":"Monstera","tag":""}`); status != 200 || body != `{"name":"Monstera","tag":""}` {
		t.Errorf("create = %d %s, want 200 {\"name\":\"Monstera\",\"tag\":\"\"}", status, body)
	}
	if status, body := post(t, url, good, `{"id":100,"name":"again"}`); status != 400 || !strings.Contains(body, `"error":409`) {
		t.Errorf("conflicting create = %d %s, want 400 with error 409", status, body)
	}

	tests := []struct {
		name   string
		method string
		path   string
		auth   []string
		want   int // the Error code, or the status of a success
		reason string
	}{
		{"accepted", "POST", "/plants", []string{"Bearer " + good}, 200, ""},
		{"accepted, lowercase scheme", "GET", "/plants", []string{"bearer " + good}, 200, ""},
		{"rejected token", "POST", "/plants", []string{"Bearer " + rejected}, 401, ""},
		{"accepted token with a suffix", "POST", "/plants", []string{"Bearer " + good + "0"}, 401, "a near miss must not be echoed either"},
		{"accepted token with a prefix", "GET", "/plants", []string{"Bearer 0" + good}, 401, ""},
		{"wrong scheme", "POST", "/plants", []string{"Basic " + good}, 401, "malformed headers are not quoted back"},
		{"trailing garbage", "POST", "/plants", []string{"Bearer " + good + " extra"}, 401, ""},
		{"two headers", "GET", "/plants", []string{"Bearer " + good, "Bearer " + rejected}, 401, ""},
		{"token in the query", "GET", "/plants?access_token=" + good, nil, 401, "the access log records the path, not the query"},
		{"accepted token on a bad id", "DELETE", "/plants/x", []string{"Bearer " + good}, 400, ""},
		{"accepted token on an unknown path", "GET", "/nowhere", []string{"Bearer " + good}, 404, ""},
	}
	var answers []string
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, url+tt.path, strings.NewReader(fmt.Sprintf(`{"id":%d,"name":"x"}`, i)))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header["Authorization"] = tt.auth
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			answers = append(answers, fmt.Sprint(resp.Header)+string(body))
			got := resp.StatusCode
			if got != 200 {
				got = testkit.ErrorCode(body)
			}
			if got != tt.want {
				t.Errorf("answer = %d %s, want %d (%s)", resp.StatusCode, body, tt.want, tt.reason)
			}
		})
	}
	// Requests net/http itself refuses, with the token in them.
	for _, raw := range []string{
		"GET /plants HTTP/1.1\r\nHost: plantstore\r\nAuthorization: Bearer " + good + "\x01\r\n\r\n",
		"GET /plants HTTP/1.1\r\nHost: plantstore\r\nAuthorization: Bearer " + good + "\r\nX-Filler: " + strings.Repeat("a", 1<<20) + "\r\n\r\n",
		"GET /plants HTTP/9.9\r\nHost: plantstore\r\nAuthorization: Bearer " + good + "\r\n\r\n",
		"GET /plants?" + good + " HTTP/1.1\r\nHost: plantstore\r\nAuthorization: Bearer " + good + "\r\nContent-Length: x" + good + "\r\n\r\n",
	} {
		conn := dial(t, url)
		conn.SetReadDeadline(time.Now().Add(hostileWait))
		go io.WriteString(conn, raw) // net/http may stop reading part way
		data, err := io.ReadAll(conn)
		if err != nil && !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("the server did not close a connection after a malformed request: %v", err)
		}
		answers = append(answers, string(data))
	}

	if err := stop(); err != nil {
		t.Fatalf("run after shutdown = %v, want nil", err)
	}
	logs := stderr.String()
	if !strings.Contains(logs, "level=DEBUG") || !strings.Contains(logs, "token rejected") {
		t.Errorf("the debug log does not record the rejected tokens, so it was not checked:\n%s", logs)
	}
	if !strings.Contains(logs, "path=/plants") || !strings.Contains(logs, "error=409") || strings.Contains(logs, "Monstera") {
		t.Errorf("the access log lacks a line per request with path and error code, or holds a body:\n%s", logs)
	}
	for _, s := range secrets {
		if strings.Contains(logs, s) {
			t.Errorf("the log holds a token:\n%s", logs)
		}
		if strings.Contains(stdout.String(), s) {
			t.Errorf("standard output holds a token:\n%s", stdout)
		}
		for _, a := range answers {
			if strings.Contains(a, s) {
				t.Errorf("an answer holds a token: %q", a)
			}
		}
	}
}

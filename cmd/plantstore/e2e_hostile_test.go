//go:build unix

package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit"
)

// These tests drive the real server, started in-process by run, with raw
// TCP clients that misbehave: they are slow, idle, oversized, or send
// bodies past the limit. Every wait ends by itself: a connection the
// server does not close within hostileWait fails the test. The file builds
// on Unix only, for the open-file limit.

const hostileWait = 30 * time.Second

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

// A connWatch reads everything the server sends on a connection until the
// server closes it or hostileWait passes.
type connWatch struct {
	done chan struct{} // closed when reading has ended
	data []byte        // what the server sent, once done is closed
	err  error         // why reading ended: nil for a clean close
}

func watch(conn net.Conn) *connWatch {
	w := &connWatch{done: make(chan struct{})}
	conn.SetReadDeadline(time.Now().Add(hostileWait))
	go func() {
		defer close(w.done)
		w.data, w.err = io.ReadAll(conn)
	}()
	return w
}

// closedByServer reports whether reading ended because the server closed
// the connection (cleanly or with a reset), not because the wait ran out.
func (w *connWatch) closedByServer() bool {
	<-w.done
	return w.err == nil || errors.Is(w.err, syscall.ECONNRESET)
}

// trickle writes data one byte every interval until it is all written, a
// write fails, or stop is closed, and returns how many bytes it wrote.
func trickle(conn net.Conn, data []byte, interval time.Duration, stop <-chan struct{}) int {
	for i := range data {
		select {
		case <-stop:
			return i
		case <-time.After(interval):
		}
		if _, err := conn.Write(data[i : i+1]); err != nil {
			return i
		}
	}
	return len(data)
}

// isSuccess reports whether data starts with an HTTP 2xx status line.
func isSuccess(data []byte) bool {
	return bytes.HasPrefix(data, []byte("HTTP/1.1 2")) || bytes.HasPrefix(data, []byte("HTTP/1.0 2"))
}

// errorCode returns the "error" member of an Error body, or 0.
func errorCode(body []byte) int {
	var e struct{ Error int }
	json.Unmarshal(body, &e)
	return e.Error
}

// get sends GET path with the test token and returns the status and body.
func get(t *testing.T, url, path string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+procToken)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, body
}

// checkServing fails the test unless the server still answers a health
// check and stores a new plant.
func checkServing(t *testing.T, url string, id int64) {
	t.Helper()
	if status, body := get(t, url, "/healthz"); status != 200 {
		t.Errorf("GET /healthz = %d %s, want 200", status, body)
	}
	if status, code, err := create(url, id, "still serving"); err != nil || status != 200 {
		t.Errorf("create after the hostile client = %d (error %d), %v, want 200", status, code, err)
	}
}

func createHead(extra string) string {
	return "POST /plants HTTP/1.1\r\nHost: plantstore\r\nAuthorization: Bearer " + procToken +
		"\r\nContent-Type: application/json\r\n" + extra + "\r\n"
}

// TestSlowHeadersAreCutOff sends request headers one byte at a time, far
// slower than the header timeout allows: the server closes the connection
// before the headers are complete, without answering success, and keeps
// serving other clients. With -read-header-timeout 0, -read-timeout bounds
// the headers.
func TestSlowHeadersAreCutOff(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-read-header-timeout", "500ms"},
		{"-read-header-timeout", "0", "-read-timeout", "500ms"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			slowHeaders(t, append([]string{"-db", "memory"}, args...)...)
		})
	}
}

func slowHeaders(t *testing.T, args ...string) {
	url := startServer(t, args...)
	conn := dial(t, url)
	w := watch(conn)
	head := createHead("Content-Length: 27\r\n")
	// At one byte per 100 ms the header would take over 10 s to send.
	sent := trickle(conn, []byte(head), 100*time.Millisecond, w.done)
	if !w.closedByServer() {
		t.Fatalf("the server did not close a connection whose headers trickled in: %v", w.err)
	}
	if sent == len(head) {
		t.Errorf("all %d header bytes were sent before the server closed the connection, want it cut off part way", sent)
	}
	if isSuccess(w.data) {
		t.Errorf("the server answered incomplete headers with %q", w.data)
	}
	t.Logf("cut off after %d of %d header bytes; the server sent %q", sent, len(head), w.data)
	checkServing(t, url, 1)
}

// TestSlowBodyIsCutOff sends complete headers for a 100-byte body that
// would store a plant, then trickles the body: the server closes the
// connection before the body is complete, and stores nothing.
func TestSlowBodyIsCutOff(t *testing.T) {
	t.Parallel()
	url := startServer(t, "-db", "memory",
		"-read-header-timeout", "500ms", "-read-timeout", "1s")
	const id = 7001
	body := fmt.Sprintf(`{"id":%d,"name":"trickled"}`, id)
	body += strings.Repeat(" ", 100-len(body))
	conn := dial(t, url)
	w := watch(conn)
	if _, err := io.WriteString(conn, createHead("Content-Length: 100\r\n")); err != nil {
		t.Fatal(err)
	}
	// At one byte per 100 ms the body would take 10 s to send.
	sent := trickle(conn, []byte(body), 100*time.Millisecond, w.done)
	if !w.closedByServer() {
		t.Fatalf("the server did not close a connection whose body trickled in: %v", w.err)
	}
	if sent == len(body) {
		t.Errorf("all %d body bytes were sent before the server closed the connection, want it cut off part way", sent)
	}
	if isSuccess(w.data) {
		t.Errorf("the server answered an incomplete body with %q", w.data)
	}
	t.Logf("cut off after %d of %d body bytes; the server sent %q", sent, len(body), w.data)
	if _, ok := listAll(t, url)[id]; ok {
		t.Errorf("plant %d from the cut-off body is stored", id)
	}
	checkServing(t, url, 1)
}

// TestSlowBodyStillAnswered sends a create's body over longer than
// -write-timeout, within -read-timeout: the server's write deadline runs
// from the end of the headers, so it must leave room for the body and the
// database besides the write, or the plant would be stored and its answer
// never sent.
func TestSlowBodyStillAnswered(t *testing.T) {
	t.Parallel()
	url := startServer(t, "-db", "memory", "-write-timeout", "1s", "-read-timeout", "10s")
	conn := dial(t, url)
	body := `{"id":4242,"name":"slow"}`
	if _, err := io.WriteString(conn, createHead(fmt.Sprintf("Content-Length: %d\r\n", len(body)))+body[:10]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // the slow client: past -write-timeout, on purpose
	if _, err := io.WriteString(conn, body[10:]); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a create whose body took longer than -write-timeout: %v", err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(got) != `{"name":"slow"}` {
		t.Errorf("answer = %d %s, want 200 {\"name\":\"slow\"}", resp.StatusCode, got)
	}
}

// TestUnreadAnswersAreCutOff pipelines thousands of requests for the
// OpenAPI document, through a small receive buffer, and reads none of the
// answers for a while: the server drops the connection once an answer
// has gone unwritten for the write timeout, rather than wait on it for as
// long as the client likes, and keeps serving other clients.
func TestUnreadAnswersAreCutOff(t *testing.T) {
	t.Parallel()
	url := startServer(t, "-db", "memory", "-write-timeout", "300ms", "-read-timeout", "300ms", "-read-header-timeout", "300ms", "-db-timeout", "300ms")
	d := net.Dialer{Timeout: hostileWait, Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10)
		})
		return errors.Join(err, serr)
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })

	const n = 4000
	req := "GET /openapi.json HTTP/1.1\r\nHost: plantstore\r\n\r\n"
	go io.WriteString(conn, strings.Repeat(req, n)) // fails once the server drops the connection
	// The client reads nothing until the server has given up on its
	// stalled writes: reading any earlier would let them go on. Linux
	// shows the server's end leave ESTABLISHED when the server closes it;
	// where it does not, the client waits longer than the server's write
	// deadline (the three timeouts, 0.9 s) instead.
	if _, ok := serverEndState(conn); ok {
		testkit.WaitUntil(t, time.Minute, "the server to close the connection whose answers go unread", func() bool {
			state, ok := serverEndState(conn)
			return !ok || state != tcpEstablished
		})
	} else {
		time.Sleep(2 * time.Second)
	}
	w := watch(conn)
	if !w.closedByServer() {
		t.Fatalf("the server kept a connection whose answers went unread: %v (got %d bytes, %d answers)", w.err, len(w.data), bytes.Count(w.data, []byte("HTTP/1.1 200")))
	}
	if got := bytes.Count(w.data, []byte("HTTP/1.1 200")); got >= n {
		t.Errorf("the client got all %d answers, want the server to give up part way", got)
	} else {
		t.Logf("the server gave up after sending %d of %d answers", got, n)
	}
	checkServing(t, url, 1)
}

// tcpEstablished is the ESTABLISHED state in Linux's /proc/net/tcp.
const tcpEstablished = "01"

// serverEndState returns the state of the server's end of conn, an IPv4
// loopback connection, as Linux's /proc/net/tcp gives it; ok is false when
// the table cannot be read or does not hold that end, as once a reset has
// closed it.
func serverEndState(conn net.Conn) (state string, ok bool) {
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return "", false
	}
	// The server's end is local at the client's remote port and remote at
	// its local one: "sl local rem st ...", ports in hex.
	local := fmt.Sprintf(":%04X", conn.RemoteAddr().(*net.TCPAddr).Port)
	remote := fmt.Sprintf(":%04X", conn.LocalAddr().(*net.TCPAddr).Port)
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 3 && strings.HasSuffix(f[1], local) && strings.HasSuffix(f[2], remote) {
			return f[3], true
		}
	}
	return "", false
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
	// TestSlowHeadersAreCutOff covers that cut.
	url := startServer(t, "-db", "memory",
		"-read-header-timeout", "5m", "-read-timeout", "5m")

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

// exchange writes req on a new connection while reading the answer, and
// returns the response (nil when the server closed the connection without
// one) and its body. The connection is closed when the test ends.
func exchange(t *testing.T, url string, req io.Reader) (net.Conn, *bufio.Reader, *http.Response, []byte) {
	t.Helper()
	conn := dial(t, url)
	go io.Copy(conn, req) // fails once the server closes; the test ends it by closing conn
	conn.SetReadDeadline(time.Now().Add(hostileWait))
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("no answer and no close within %v", hostileWait)
		}
		return conn, r, nil, nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("reading the response body: %v", err)
	}
	return conn, r, resp, body
}

// TestOversizedHeadersAreRefused sends requests whose headers are far past
// the server's header limit: each is refused with 431 or a closed
// connection, and the server keeps serving.
func TestOversizedHeadersAreRefused(t *testing.T) {
	t.Parallel()
	url := startServer(t, "-db", "memory")
	big := strings.Repeat("a", 1<<20)
	var many strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&many, "X-Filler-%d: v\r\n", i)
	}
	tests := []struct {
		name string
		req  string
	}{
		{"one 1 MiB header line", "GET /healthz HTTP/1.1\r\nHost: plantstore\r\nX-Filler: " + big + "\r\n\r\n"},
		{"20,000 small headers", "GET /healthz HTTP/1.1\r\nHost: plantstore\r\n" + many.String() + "\r\n"},
		{"1 MiB request target", "GET /healthz?" + big + " HTTP/1.1\r\nHost: plantstore\r\n\r\n"},
		{"1 MiB bearer token on a create", "POST /plants HTTP/1.1\r\nHost: plantstore\r\nAuthorization: Bearer " + big +
			"\r\nContent-Type: application/json\r\nContent-Length: 22\r\n\r\n" + `{"id":9001,"name":"x"}`},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, resp, body := exchange(t, url, strings.NewReader(tt.req))
			switch {
			case resp == nil:
				t.Logf("refused by closing the connection")
			case resp.StatusCode == http.StatusRequestHeaderFieldsTooLarge:
				t.Logf("refused with %s", resp.Status)
			default:
				t.Errorf("oversized headers answered with %s %q, want 431 or a closed connection", resp.Status, body)
			}
			checkServing(t, url, int64(i+1))
		})
	}
	if _, ok := listAll(t, url)[9001]; ok {
		t.Error("the create with an oversized token is stored")
	}
}

// TestBodyOverLimitIsRefusedUnread declares a 10 MiB body to a server
// limited to 1 KiB and sends only 512 bytes of it: the Error with code 413
// arrives anyway, so the server answered without reading the body, and
// the server then closes the connection rather than leave the unread body
// on it.
func TestBodyOverLimitIsRefusedUnread(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		wantStatus int
	}{
		{"contract status", nil, http.StatusBadRequest},
		{"conventional status", []string{"-conventional-status"}, http.StatusRequestEntityTooLarge},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := startServer(t, append([]string{"-db", "memory", "-max-body", "1024"}, tt.args...)...)
			id := 8000 + i
			part := fmt.Sprintf(`{"id":%d,"name":"huge","pad":"`, id)
			part += strings.Repeat("x", 512-len(part))
			conn, r, resp, body := exchange(t, url, strings.NewReader(createHead("Content-Length: 10485760\r\n")+part))
			if resp == nil {
				t.Fatal("the server closed the connection without answering, want the Error with code 413")
			}
			if resp.StatusCode != tt.wantStatus || errorCode(body) != 413 {
				t.Errorf("answer = %s %s, want status %d with error 413", resp.Status, body, tt.wantStatus)
			}
			if !resp.Close {
				t.Errorf("the answer does not say Connection: close; the unread body would be taken for the next request")
			}
			// The server closes the connection: a following request gets
			// no answer.
			io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: plantstore\r\n\r\n")
			conn.SetReadDeadline(time.Now().Add(hostileWait))
			rest, err := io.ReadAll(r)
			if err != nil && !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("after the 413 the connection was not closed: %v", err)
			}
			if len(rest) > 0 {
				t.Errorf("after the 413 the server sent %q on the same connection, want it closed", rest)
			}
			if _, ok := listAll(t, url)[int64(id)]; ok {
				t.Errorf("plant %d from the refused body is stored", id)
			}
			checkServing(t, url, 1)
		})
	}
}

// chunkedCreate returns a chunked POST /plants whose body, size bytes of
// JSON, would store plant id if accepted.
func chunkedCreate(id, size int) io.Reader {
	body := fmt.Sprintf(`{"id":%d,"name":"chunked","pad":""}`, id)
	body = body[:len(body)-2] + strings.Repeat("x", size-len(body)) + `"}`
	var b strings.Builder
	b.WriteString(createHead("Transfer-Encoding: chunked\r\n"))
	for len(body) > 0 {
		n := min(len(body), 4096)
		fmt.Fprintf(&b, "%x\r\n%s\r\n", n, body[:n])
		body = body[n:]
	}
	b.WriteString("0\r\n\r\n")
	return strings.NewReader(b.String())
}

// TestChunkedBodyOverLimit sends chunked bodies without a Content-Length to
// a server limited to 1 KiB: a body of exactly the limit is stored, any
// longer one is refused with code 413 and not stored, and the server
// closes the connection after refusing.
func TestChunkedBodyOverLimit(t *testing.T) {
	t.Parallel()
	url := startServer(t, "-db", "memory", "-max-body", "1024")
	tests := []struct {
		name     string
		id, size int
		want     int // the Error code, or 200
	}{
		{"exactly the limit", 1, 1024, 200},
		{"one byte over", 2, 1025, 413},
		{"ten times over", 3, 10 << 10, 413},
		{"10 MiB", 4, 10 << 20, 413},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, r, resp, body := exchange(t, url, chunkedCreate(tt.id, tt.size))
			if resp == nil {
				t.Fatalf("the server closed the connection without answering, want %d", tt.want)
			}
			got := resp.StatusCode
			if got != 200 {
				got = errorCode(body)
			}
			if got != tt.want {
				t.Fatalf("answer = %s %s, want %d", resp.Status, body, tt.want)
			}
			_, stored := listAll(t, url)[int64(tt.id)]
			if stored != (tt.want == 200) {
				t.Errorf("plant %d stored = %v after a %d answer", tt.id, stored, tt.want)
			}
			if tt.want == 413 {
				conn.SetReadDeadline(time.Now().Add(hostileWait))
				if rest, err := io.ReadAll(r); (err != nil && !errors.Is(err, syscall.ECONNRESET)) || len(rest) > 0 {
					t.Errorf("after the 413 the connection was not closed: %v, %q", err, rest)
				}
			}
		})
	}
	checkServing(t, url, 100)
}

// TestTokensNeverLeak sends accepted, rejected and malformed credentials
// to a server logging at debug level: no token appears in the log, on
// standard output, or in any answer.
//
// It is one piece: every request it sends is then looked for in the one log.
func TestTokensNeverLeak(t *testing.T) {
	t.Parallel()
	random := func(prefix string) string {
		b := make([]byte, 12)
		rand.Read(b)
		return prefix + hex.EncodeToString(b)
	}
	good := random("accepted-")
	rejected := random("rejected-")
	url, stdout, stderr, stop := startRun(t, []string{"-addr", "127.0.0.1:0", "-db", "memory", "-log-level", "debug"},
		map[string]string{"PLANTSTORE_TOKENS": good})
	secrets := []string{good, rejected, good[len("accepted-"):], rejected[len("rejected-"):]}

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
				got = errorCode(body)
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
		w := watch(conn)
		io.WriteString(conn, raw)
		if !w.closedByServer() {
			t.Errorf("the server did not close a connection after a malformed request: %v", w.err)
		}
		answers = append(answers, string(w.data))
	}

	if err := stop(); err != nil {
		t.Fatalf("run after shutdown = %v, want nil", err)
	}
	logs := stderr.String()
	if !strings.Contains(logs, "level=DEBUG") || !strings.Contains(logs, "token rejected") {
		t.Errorf("the debug log does not record the rejected tokens, so it was not checked:\n%s", logs)
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

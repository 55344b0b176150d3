//go:build unix

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/server"
)

// The tests of this file send the same hostile requests to this example
// and to the plantstore binary, each as a user runs it (the example with
// its defaults, the binary with -db memory and alice-token), and check
// that they answer alike: the same status, the same Error code in the
// same content type, and the connection closed at the same point. Every
// wait ends by itself: hostileWait bounds it.

const hostileWait = 90 * time.Second

// A host is a running server and where the API is mounted in it.
type host struct {
	name   string
	addr   string // host:port
	prefix string // the API's paths begin with it
}

// startHosts starts this example and the binary, and creates plant 1 in
// each.
func startHosts(t *testing.T) []host {
	t.Helper()
	embed := testkit.Start(t, testkit.Build(t, "."), testkit.Env("PLANTSTORE_ADDR=127.0.0.1:0"))
	bin := testkit.Start(t, testkit.Build(t, "../../cmd/plantstore"), testkit.Env("PLANTSTORE_TOKENS=alice-token"),
		"-addr", "127.0.0.1:0", "-db", "memory")
	hosts := []host{
		{"examples/embed", strings.TrimPrefix(embed.URL, "http://"), "/api"},
		{"cmd/plantstore", strings.TrimPrefix(bin.URL, "http://"), ""},
	}
	for _, h := range hosts {
		if a := h.exchange(t, h.create(`{"id":1,"name":"Monstera"}`)); a.Status != 200 {
			t.Fatalf("%s: create = %+v", h.name, a)
		}
	}
	return hosts
}

// request returns the head of a request of method for the host's path,
// with alice's token and the header lines extra.
func (h host) request(method, path, extra string) string {
	return method + " " + h.prefix + path + " HTTP/1.1\r\nHost: plantstore\r\nAuthorization: Bearer alice-token\r\n" + extra + "\r\n"
}

// create returns a POST of body to the host's /plants.
func (h host) create(body string) string {
	return h.request("POST", "/plants", fmt.Sprintf("Content-Type: application/json\r\nContent-Length: %d\r\n", len(body))) + body
}

func (h host) dial(t *testing.T, d *net.Dialer) net.Conn {
	t.Helper()
	conn, err := d.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(hostileWait))
	return conn
}

// An answer is what a host did with a request: what it answered, in
// which shape, and whether it closed the connection after.
type answer struct {
	Status      int
	ContentType string
	Code        int  // the Error body's code; 0 when the body is no Error
	Closed      bool // the server closed the connection after its answer
}

// exchange sends req on a new connection, reading while it writes, and
// returns the answer; Closed is read after another request is sent on
// the same connection.
func (h host) exchange(t *testing.T, req string) answer {
	t.Helper()
	conn := h.dial(t, &net.Dialer{})
	go io.WriteString(conn, req) // fails once the server closes; ended by closing conn
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("%s: no answer and no close within %v", h.name, hostileWait)
		}
		return answer{Closed: true}
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	a := answer{Status: resp.StatusCode, ContentType: resp.Header.Get("Content-Type"), Code: testkit.ErrorCode(body)}
	if resp.Close {
		io.WriteString(conn, "GET "+h.prefix+"/healthz HTTP/1.1\r\nHost: plantstore\r\n\r\n")
		rest, err := io.ReadAll(r)
		a.Closed = len(rest) == 0 && (err == nil || errors.Is(err, syscall.ECONNRESET))
	}
	return a
}

// alike runs do on every host at once and fails unless they all give the
// same result as the first.
func alike[T any](t *testing.T, hosts []host, what string, do func(host) T) T {
	t.Helper()
	got := make([]T, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Go(func() { got[i] = do(h) })
	}
	wg.Wait()
	for i := 1; i < len(hosts); i++ {
		if diff := cmp.Diff(got[0], got[i]); diff != "" {
			t.Errorf("%s: %s and %s answer differently (-%s +%s):\n%s", what, hosts[0].name, hosts[i].name, hosts[0].name, hosts[i].name, diff)
		}
	}
	t.Logf("%s: %+v", what, got[0])
	return got[0]
}

// TestHostileRequestsAnsweredAlike sends oversized headers, oversized
// bodies and escaped paths.
func TestHostileRequestsAnsweredAlike(t *testing.T) {
	t.Parallel()
	hosts := startHosts(t)
	overLimit := "X-Filler: " + strings.Repeat("a", server.DefaultMaxHeaderBytes+8<<10) + "\r\n"
	pastServer := "X-Filler: " + strings.Repeat("a", 2*server.DefaultMaxHeaderBytes+8<<10) + "\r\n"
	chunked := func(h host) string {
		return h.request("POST", "/plants", "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n") +
			strings.Repeat("1000\r\n"+strings.Repeat(" ", 4096)+"\r\n", 300) + "0\r\n\r\n"
	}
	req := func(method, path, extra string) func(host) string {
		return func(h host) string { return h.request(method, path, extra) }
	}
	tests := []struct {
		name string
		req  func(host) string
		want answer // what the binary answers, checked too
	}{
		{"headers over the handler's limit", req("GET", "/plants", overLimit), answer{400, "application/json", 431, false}},
		{"headers past what the server reads", func(h host) string {
			return "GET " + h.prefix + "/plants HTTP/1.1\r\nHost: plantstore\r\n" + pastServer + "\r\n"
		}, answer{431, "text/plain; charset=utf-8", 0, true}},
		{"a 10 MiB body announced", func(h host) string {
			return strings.Replace(h.create(`{"id":2,"name":"huge"}`), "Content-Length: 22", "Content-Length: 10485760", 1)
		}, answer{400, "application/json", 413, true}},
		{"a chunked body past the limit", chunked, answer{400, "application/json", 413, true}},
		{"an escaped slash and dots", req("GET", "/plants%2F..", ""), answer{400, "application/json", 404, false}},
		{"an escaped slash before an id", req("DELETE", "/plants%2F1", ""), answer{400, "application/json", 404, false}},
		{"escaped dots between slashes", req("GET", "/plants/%2e%2e/plants", ""), answer{400, "application/json", 404, false}},
		{"escaped digits as an id", req("DELETE", "/plants/%31", ""), answer{400, "application/json", 400, false}},
		{"an escaped letter", req("GET", "/%70lants/1", ""), answer{400, "application/json", 404, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := alike(t, hosts, tt.name, func(h host) answer { return h.exchange(t, tt.req(h)) })
			if got != tt.want {
				t.Errorf("%s answered %+v, want %+v", tt.name, got, tt.want)
			}
		})
	}
	// Plant 1 is still there in both: no escape reached it.
	alike(t, hosts, "plant 1 afterwards", func(h host) answer { return h.exchange(t, h.request("GET", "/plants/1", "")) })
}

// TestSlowHeadersCutOffAlike trickles a request's headers, one byte every
// 100 ms, which would take over 10 s: both servers close the connection
// at the same point, without an answer.
func TestSlowHeadersCutOffAlike(t *testing.T) {
	t.Parallel()
	hosts := startHosts(t)
	type cutOff struct {
		Closed   bool
		Answered string
		Seconds  int // how long the server waited, rounded to seconds
	}
	alike(t, hosts, "slow headers", func(h host) cutOff {
		conn := h.dial(t, &net.Dialer{})
		head := h.create(`{"id":3,"name":"slow"}`)
		start := time.Now()
		done := make(chan []byte)
		go func() {
			b, _ := io.ReadAll(conn)
			done <- b
		}()
		for i := range len(head) {
			select {
			case got := <-done:
				return cutOff{true, string(got), int(time.Since(start).Round(time.Second) / time.Second)}
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := conn.Write([]byte{head[i]}); err != nil {
				break
			}
		}
		got := <-done
		return cutOff{false, string(got), int(time.Since(start).Round(time.Second) / time.Second)}
	})
}

// TestUnreadListsCutOffAlike pipelines thousands of requests for a page of
// plants through a small receive buffer and reads none of the answers:
// both servers drop the connection once an answer has gone unwritten for
// their write deadline, the defaults' read + handler + write, 45 s, at
// the same point within a few seconds.
func TestUnreadListsCutOffAlike(t *testing.T) {
	testkit.Long(t, "waits for the 45 s write deadline")
	t.Parallel()
	hosts := startHosts(t)
	name := strings.Repeat("n", 200)
	for _, h := range hosts {
		for id := 10; id < 200; id++ {
			if a := h.exchange(t, h.create(fmt.Sprintf(`{"id":%d,"name":%q}`, id, name))); a.Status != 200 {
				t.Fatalf("%s: create = %+v", h.name, a)
			}
		}
	}
	type cutOff struct {
		Closed  bool
		Partial bool // fewer answers than requests arrived
	}
	var mu sync.Mutex
	waited := map[string]time.Duration{}
	got := alike(t, hosts, "unread lists", func(h host) cutOff {
		conn := h.dial(t, &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
			var serr error
			err := c.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10)
			})
			return errors.Join(err, serr)
		}})
		const n = 4000
		start := time.Now()
		go io.WriteString(conn, strings.Repeat(h.request("GET", "/plants", ""), n))
		testkit.WaitUntil(t, hostileWait, h.name+" to close the connection whose answers go unread", func() bool {
			state, ok := serverEndState(conn)
			return !ok || state != tcpEstablished
		})
		mu.Lock()
		waited[h.name] = time.Since(start)
		mu.Unlock()
		data, err := io.ReadAll(conn)
		return cutOff{Closed: err == nil || errors.Is(err, syscall.ECONNRESET),
			Partial: strings.Count(string(data), "HTTP/1.1 200") < n}
	})
	if !got.Closed || !got.Partial {
		t.Errorf("unread lists: %+v, want the connection closed part way", got)
	}
	a, b := waited[hosts[0].name], waited[hosts[1].name]
	if d := a - b; d > 3*time.Second || d < -3*time.Second || a < 40*time.Second {
		t.Errorf("%s closed after %v, %s after %v: want both at the 45 s write deadline, within 3 s", hosts[0].name, a, hosts[1].name, b)
	}
	t.Logf("closed after %v (%s) and %v (%s)", a, hosts[0].name, b, hosts[1].name)
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

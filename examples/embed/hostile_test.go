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

// hostileWait bounds every wait of TestHostileRequestsAnsweredAlike.
const hostileWait = 30 * time.Second

// A host is a running server and where the API is mounted in it.
type host struct {
	name   string
	addr   string // host:port
	prefix string // the API's paths begin with it
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
	conn, err := net.Dial("tcp", h.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(hostileWait))
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
// bodies and escaped paths to this example and to the plantstore binary,
// each as a user runs it (the example with its defaults, the binary with
// -db memory and alice-token), and checks that they answer alike: the
// same status, the same Error code in the same content type, and the
// connection closed at the same point. Both run on server's default
// deadlines (TestDeadlinesInNetHTTPTerms; the binary's, TestTimeoutFlags),
// which cut off slow headers and unread answers (server's
// TestSlowHeadersAreCutOff and TestUnreadAnswerIsCutOff).
func TestHostileRequestsAnsweredAlike(t *testing.T) {
	t.Parallel()
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

package server_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/memstore"
	"github.com/plantstore/plantstore/server"
)

// These tests drive a Server over loopback with raw TCP clients that
// misbehave: slow, oversized, or not reading. Every wait ends by itself:
// a connection the server does not close within wait fails the test.

// echo answers each request with its body.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	w.Write(b)
})

// dial opens a raw TCP connection to srv, closed when the test ends, on
// which reads end at the latest after wait.
func dial(t *testing.T, srv *running) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", srv.Addr().String(), wait)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(wait))
	t.Cleanup(func() { conn.Close() })
	return conn
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

// checkCutOff writes head to a new connection to srv at once, then
// trickles slow, the request's what, at one byte per 100 ms, and checks
// that the server closes the connection before all of slow is sent,
// without answering with a success.
func checkCutOff(t *testing.T, srv *running, head, slow, what string) {
	t.Helper()
	conn := dial(t, srv)
	done := make(chan struct{})
	var got []byte
	var err error
	go func() {
		defer close(done)
		got, err = io.ReadAll(conn)
	}()
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	sent := trickle(conn, []byte(slow), 100*time.Millisecond, done)
	<-done
	if !isClosed(err) {
		t.Fatalf("the server did not close a connection whose %s trickled in: %v", what, err)
	}
	if success := bytes.HasPrefix(got, []byte("HTTP/1.1 2")) || bytes.HasPrefix(got, []byte("HTTP/1.0 2")); sent == len(slow) || success {
		t.Errorf("%d of %d %s bytes sent and %q answered before the server closed the connection, want it cut off part way, without a success",
			sent, len(slow), what, got)
	}
	t.Logf("cut off after %d of %d %s bytes; the server sent %q", sent, len(slow), what, got)
}

// exchange writes req on a new connection to srv, without waiting for
// net/http to read all of it, and returns the answer, its body, and what
// follows it on the connection.
func exchange(t *testing.T, srv *running, req string) (*http.Response, string, io.Reader) {
	t.Helper()
	conn := dial(t, srv)
	go io.WriteString(conn, req) // net/http may stop reading part way
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatalf("no answer to %.60q: %v", req, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body), r
}

// checkServing fails the test unless srv still answers a request.
func checkServing(t *testing.T, srv *running) {
	t.Helper()
	resp, err := http.Post(srv.url, "text/plain", strings.NewReader("still serving"))
	if err != nil {
		t.Fatalf("a request after the hostile client: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 100))
	if resp.StatusCode != 200 || string(b) != "still serving" {
		t.Errorf("a request after the hostile client = %d %q, want 200 and its body", resp.StatusCode, b)
	}
}

// TestSlowHeadersAreCutOff sends request headers one byte at a time, far
// slower than ReadHeader allows (Read when ReadHeader is zero), and a
// create's body likewise after its headers, slower than Read allows: the
// server closes the connection before the request is complete, answers no
// success, stores nothing, and keeps serving other clients.
func TestSlowHeadersAreCutOff(t *testing.T) {
	t.Parallel()
	const headers = "POST / HTTP/1.1\r\nHost: plantstore\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n"
	body := `{"id":1,"name":"trickled"}`
	body += strings.Repeat(" ", 100-len(body))
	for _, tt := range []struct {
		name       string
		t          server.Timeouts
		head, slow string // slow is what trickles, at one byte per 100 ms
		what       string
	}{
		{"headers/ReadHeader", server.Timeouts{ReadHeader: 500 * time.Millisecond, Read: time.Minute}, "", headers, "header"},
		{"headers/Read when ReadHeader is zero", server.Timeouts{Read: 500 * time.Millisecond}, "", headers, "header"},
		{"body", server.Timeouts{ReadHeader: 500 * time.Millisecond, Read: time.Second},
			"POST /plants HTTP/1.1\r\nHost: plantstore\r\nAuthorization: Bearer tok\r\n" +
				"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n", body, "body"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ps := plantstore.New(memstore.New())
			mux := http.NewServeMux()
			mux.Handle("/plants", httpapi.New(ps, httpapi.WithTokens("tok")))
			mux.Handle("/", echo)
			srv := start(t, mux, server.WithTimeouts(tt.t))
			checkCutOff(t, srv, tt.head, tt.slow, tt.what)
			if _, err := ps.Plant(context.Background(), 1); !errors.Is(err, plantstore.ErrNotFound) {
				t.Errorf("the plant of the cut-off request: %v, want it not stored", err)
			}
			checkServing(t, srv)
		})
	}
}

// TestSlowBodyWithinReadIsAnswered sends a request's body over longer
// than Write, within Read: the write deadline runs from the end of the
// headers, so it must leave room for the body (and the handler) besides
// the write, or the handler's work would be done and its answer never
// sent.
func TestSlowBodyWithinReadIsAnswered(t *testing.T) {
	t.Parallel()
	srv := start(t, echo, server.WithTimeouts(server.Timeouts{Read: 10 * time.Second, Write: time.Second}))
	conn := dial(t, srv)
	body := "a body sent slowly"
	if _, err := fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: plantstore\r\nContent-Length: %d\r\n\r\n%s", len(body), body[:5]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // the slow client: past Write, on purpose
	if _, err := io.WriteString(conn, body[5:]); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a request whose body took longer than Write: %v", err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(got) != body {
		t.Errorf("answer = %d %q, want 200 %q", resp.StatusCode, got, body)
	}
}

// TestUnreadAnswerIsCutOff sends a request for an endless answer and
// reads none of it: once the kernel's buffers are full, the handler's
// write waits on the client until the write deadline ends it, and the
// server drops the connection rather than wait as long as the client
// likes.
func TestUnreadAnswerIsCutOff(t *testing.T) {
	t.Parallel()
	writeErr := make(chan error, 1)
	chunk := make([]byte, 64<<10)
	endless := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/endless" {
			echo(w, r)
			return
		}
		for {
			if _, err := w.Write(chunk); err != nil {
				writeErr <- err
				return
			}
		}
	})
	srv := start(t, endless, server.WithTimeouts(server.Timeouts{Read: 300 * time.Millisecond, Write: 300 * time.Millisecond}))
	conn := dial(t, srv)
	if _, err := io.WriteString(conn, "GET /endless HTTP/1.1\r\nHost: plantstore\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-writeErr:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("the handler's write ended with %v, want the write deadline", err)
		}
	case <-time.After(wait):
		t.Fatalf("the handler still writes to a client that reads nothing after %v", wait)
	}
	n, err := io.Copy(io.Discard, conn)
	if !isClosed(err) {
		t.Errorf("the server kept the connection whose answer went unread: %v after %d bytes", err, n)
	}
	checkServing(t, srv)
}

// TestAnswersNetHTTPGivesItself lists the requests that net/http answers
// before any handler runs, with the server's default header limit, so that
// they cannot carry the API's Error: it writes the answer itself, as
// text/plain (or with no body), and closes the connection.
// docs/operations.md's "Answers net/http gives itself" names them. Headers
// over the handler's limit, up to twice it, still reach the handler, which
// answers with the API's Error in JSON. Every request carries a token,
// which neither an answer nor the server's log, at debug level, holds.
func TestAnswersNetHTTPGivesItself(t *testing.T) {
	t.Parallel()
	const limit = server.DefaultMaxHeaderBytes
	tok := httpapi.NewToken()
	var logs testkit.Buffer
	srv := start(t, httpapi.New(plantstore.New(memstore.New()), httpapi.WithTokens(tok),
		httpapi.WithMaxHeaderBytes(limit), httpapi.WithConventionalStatus()), server.WithLogger(testkit.NewLogger(&logs, slog.LevelDebug)))
	auth := "Authorization: Bearer " + tok + "\r\n"
	create := func(extra string) string {
		return "POST /plants HTTP/1.1\r\nHost: plantstore\r\n" + auth + "Content-Type: application/json\r\n" + extra + "\r\n"
	}
	filler := func(n int) string {
		return "GET /healthz HTTP/1.1\r\nHost: plantstore\r\n" + auth + "X-Filler: " + strings.Repeat("a", n) + "\r\n\r\n"
	}
	const text, json = "text/plain; charset=utf-8", "application/json"
	tests := []struct {
		name       string
		req        string
		wantStatus int
		wantType   string
		wantCode   int // the API's Error's; 0 for an answer of net/http's, which closes the connection
	}{
		{"headers within the handler's limit", filler(limit / 2), 200, json, 0},
		{"headers over the handler's limit", filler(limit * 3 / 2), 431, json, 431},
		{"malformed request line", "GET\r\nHost: plantstore\r\n" + auth + "\r\n", 400, text, 0},
		{"missing Host", "GET /healthz HTTP/1.1\r\n" + auth + "\r\n", 400, text, 0},
		{"malformed Host", "GET /healthz HTTP/1.1\r\nHost: a b\r\n" + auth + "\r\n", 400, text, 0},
		{"invalid header name", "GET /healthz HTTP/1.1\r\nHost: plantstore\r\n" + auth + "X Y: z\r\n\r\n", 400, text, 0},
		{"control character in the token", "GET /plants HTTP/1.1\r\nHost: plantstore\r\nAuthorization: Bearer " + tok + "\x01\r\n\r\n", 400, text, 0},
		{"two Content-Lengths", create("Content-Length: 2\r\nContent-Length: 3\r\n") + "{}", 400, text, 0},
		{"token in the query and a malformed Content-Length", "GET /plants?" + tok + " HTTP/1.1\r\nHost: plantstore\r\n" + auth + "Content-Length: x" + tok + "\r\n\r\n", 400, text, 0},
		{"unsupported Transfer-Encoding", create("Transfer-Encoding: gzip\r\n"), 501, text, 0},
		{"two Hosts", "GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n" + auth + "\r\n", 400, text, 0},
		{"two Transfer-Encodings", create("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"), 501, text, 0},
		{"unsupported HTTP version", "GET /healthz HTTP/2.0\r\nHost: plantstore\r\n" + auth + "\r\n", 505, text, 0},
		{"headers past what net/http reads", filler(2*limit + 8<<10), 431, text, 0},
		{"an expectation other than 100-continue", "GET /healthz HTTP/1.1\r\nHost: plantstore\r\n" + auth + "Expect: tea\r\n\r\n", 417, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body, rest := exchange(t, srv, tt.req)
			if resp.StatusCode != tt.wantStatus || resp.Header.Get("Content-Type") != tt.wantType || testkit.ErrorCode([]byte(body)) != tt.wantCode {
				t.Errorf("answered %s (Content-Type %q) %q, want %d (Content-Type %q) with Error %d",
					resp.Status, resp.Header.Get("Content-Type"), body, tt.wantStatus, tt.wantType, tt.wantCode)
			}
			if fromNetHTTP := tt.wantType != json; resp.Close != fromNetHTTP {
				t.Errorf("answer %s closes the connection: %v, want %v", resp.Status, resp.Close, fromNetHTTP)
			} else if fromNetHTTP {
				if _, err := io.Copy(io.Discard, rest); !isClosed(err) {
					t.Errorf("the server did not close the connection after answering %s: %v", resp.Status, err)
				}
			}
			if answer := fmt.Sprint(resp.Status, resp.Header, body); strings.Contains(answer, tok) {
				t.Errorf("the answer holds the token: %q", answer)
			}
		})
	}
	if srv.stop(); strings.Contains(logs.String(), tok) {
		t.Errorf("the log holds the token:\n%s", logs.String())
	}
}

// TestUnboundedDeadlinesWarnBeyondLoopback checks that Listen warns, once
// per listener, when every client deadline is off on an address beyond
// loopback, and says nothing on loopback or with any deadline set.
func TestUnboundedDeadlinesWarnBeyondLoopback(t *testing.T) {
	t.Parallel()
	const warning = "every client deadline is off"
	for _, tt := range []struct {
		addr     string
		timeouts server.Timeouts
		metrics  string
		want     int
	}{
		{"0.0.0.0:0", server.Timeouts{}, "", 1},
		{"0.0.0.0:0", server.Timeouts{}, "0.0.0.0:0", 2},
		{"0.0.0.0:0", server.Timeouts{}, "127.0.0.1:0", 1},
		{"127.0.0.1:0", server.Timeouts{}, "", 0},
		{"[::1]:0", server.Timeouts{}, "", 0},
		{"0.0.0.0:0", server.Timeouts{Idle: time.Minute}, "", 0},
		{"0.0.0.0:0", server.DefaultTimeouts, "", 0},
	} {
		var logs testkit.Buffer
		opts := []server.Option{server.WithLogger(testkit.NewLogger(&logs, slog.LevelInfo)), server.WithReloadOn(nil), server.WithTimeouts(tt.timeouts)}
		if tt.metrics != "" {
			opts = append(opts, server.WithMetrics(tt.metrics, http.NotFoundHandler()))
		}
		srv, err := server.Listen(tt.addr, opts...)
		if err != nil {
			if strings.HasPrefix(tt.addr, "[::1]") {
				continue // no IPv6 loopback here
			}
			t.Fatal(err)
		}
		srv.Close()
		if got := strings.Count(logs.String(), warning); got != tt.want {
			t.Errorf("Listen(%s, %+v, metrics %q) warned %d times, want %d:\n%s", tt.addr, tt.timeouts, tt.metrics, got, tt.want, logs.String())
		}
		if tt.want > 0 && !strings.Contains(logs.String(), "level=WARN") {
			t.Errorf("the warning is not at level Warn:\n%s", logs.String())
		}
	}
}

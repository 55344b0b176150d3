package server_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/server"
)

// wait bounds every wait of these tests; none should come near it.
const wait = 30 * time.Second

// A running is a Server that Serve serves until stop, with what it
// logged.
type running struct {
	*server.Server
	url  string // http://ADDR, or https://ADDR with WithTLS
	logs *testkit.Buffer
	// stop ends Serve's context and returns Serve's error.
	stop func() error
}

// listen listens on a free loopback port with opts, after a logger of
// its own and no reloading by signal, which opts may replace, until the
// test ends, and returns the Server and what it logs.
func listen(t *testing.T, opts ...server.Option) (*server.Server, *testkit.Buffer) {
	t.Helper()
	logs := &testkit.Buffer{}
	opts = append([]server.Option{server.WithLogger(testkit.NewLogger(logs, slog.LevelInfo)), server.WithReloadOn(nil)}, opts...)
	srv, err := server.Listen("127.0.0.1:0", opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, logs
}

// start listens as listen does and serves h until the test ends.
func start(t *testing.T, h http.Handler, opts ...server.Option) *running {
	t.Helper()
	srv, logs := listen(t, opts...)
	return serveOn(t, srv, h, logs)
}

// serveOn serves h on srv, which logs to logs, until the test ends.
func serveOn(t *testing.T, srv *server.Server, h http.Handler, logs *testkit.Buffer) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ctx, h) }()
	var once sync.Once
	var serveErr error
	r := &running{Server: srv, logs: logs, stop: func() error {
		once.Do(func() {
			cancel()
			serveErr = <-errc
		})
		return serveErr
	}}
	scheme := "http"
	if srv.TLS() {
		scheme = "https"
	}
	r.url = scheme + "://" + srv.Addr().String()
	t.Cleanup(func() {
		r.stop()
		srv.Close()
	})
	return r
}

// get GETs url and returns the answer's status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	status, _, body, err := testkit.Get(http.DefaultClient, url, "")
	if err != nil {
		t.Fatal(err)
	}
	return status, string(body)
}

// reloadOn sends a signal on c, which r reloads on, and waits until r
// has logged its nth reload.
func (r *running) reloadOn(t *testing.T, c chan<- os.Signal, n int) {
	t.Helper()
	c <- os.Interrupt
	testkit.WaitUntil(t, wait, fmt.Sprintf("reload %d's log line", n), func() bool {
		return testkit.Logged(r.logs.String(), "configuration reloaded") == n
	})
}

// refused reports whether a connection to addr is refused: nothing
// listens there.
func refused(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, wait)
	if err != nil {
		return true
	}
	conn.Close()
	return false
}

// isClosed reports whether err is how a read ends on a connection the
// server closed (cleanly or with a reset), rather than the test's own
// deadline.
func isClosed(err error) bool {
	return err == nil || !errors.Is(err, os.ErrDeadlineExceeded)
}

//go:build unix

package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/memstore"
	"github.com/plantstore/plantstore/server"
)

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

// TestIdleConnectionsDoNotStarveClients holds 1,000 idle connections open
// (half after one request, half that never sent a byte) while a client
// creates 100 plants: every create succeeds, and every idle connection is
// still open and served afterwards.
func TestIdleConnectionsDoNotStarveClients(t *testing.T) {
	t.Parallel()
	const idle, creates = 1000, 100
	// A client and a server descriptor per connection, plus slack.
	raiseFileLimit(t, 2*idle+1024)
	// Long read deadlines keep the server from cutting the connections
	// that never sent a byte before the test is done with them;
	// TestSlowHeadersAreCutOff covers that cut.
	limits := server.DefaultTimeouts
	limits.ReadHeader, limits.Read = 5*time.Minute, 5*time.Minute
	ps := plantstore.New(memstore.New())
	srv := start(t, httpapi.New(ps, httpapi.WithTokens("tok")), server.WithTimeouts(limits))
	// Before the server stops, drop the client's idle connections: the
	// transport may have dialed some it never used, and Shutdown waits a
	// few seconds for those in case a request is on its way.
	client := &http.Client{Timeout: wait, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	t.Cleanup(client.CloseIdleConnections)

	// healthz sends GET /healthz on conn, read through r, and reads the
	// answer, leaving the connection open.
	healthz := func(conn net.Conn, r *bufio.Reader) error {
		conn.SetDeadline(time.Now().Add(wait))
		if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: plantstore\r\n\r\n"); err != nil {
			return err
		}
		resp, err := http.ReadResponse(r, nil)
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
	conns := make([]net.Conn, idle)
	readers := make([]*bufio.Reader, idle)
	for i := range conns {
		conns[i] = dial(t, srv)
		readers[i] = bufio.NewReader(conns[i])
		if i%2 == 0 {
			if err := healthz(conns[i], readers[i]); err != nil {
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
			for id := next.Add(1); id <= creates; id = next.Add(1) {
				if status, code, err := testkit.Create(context.Background(), client, srv.url, "tok", id, fmt.Sprint("busy-", id)); err != nil || status != 200 {
					t.Errorf("create %d with %d idle connections open = %d (error %d), %v, want 200", id, idle, status, code, err)
				}
			}
		})
	}
	wg.Wait()
	if got := len(testkit.Plants(t, client, srv.url, "tok")); got != creates {
		t.Errorf("%d plants stored, want %d", got, creates)
	}

	for i, conn := range conns {
		if err := healthz(conn, readers[i]); err != nil {
			t.Fatalf("idle connection %d after the creates: %v, want it open and served", i, err)
		}
	}
}

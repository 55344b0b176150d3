//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plantstore/plantstore/server"
)

// These tests drive the real server with requests that cost the server
// more than they cost the client, and measure what the server spends: the
// memory of the started process, read from /proc, or the bytes of its
// answers. The file builds on Linux only, for /proc.

// procMemory returns a field of /proc/<pid>/status, such as VmRSS (the
// resident memory now) or VmHWM (the most it has been), in bytes.
func procMemory(t *testing.T, pid int, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("/proc/%d/status: %s: %v", pid, line, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("/proc/%d/status has no %s", pid, field)
	return 0
}

// TestClaimedBodiesDoNotReserveMemory opens rounds of connections that
// each send a create's headers claiming a body of the full 1 MiB limit, and
// then one byte of it, as a client can at almost no cost. The server must
// spend memory on the bytes it received, not on the bytes claimed: the
// process's peak resident memory (VmHWM) over all rounds may grow by far
// less than the claimed bodies would take. Each round lasts until the read
// timeout has answered or closed every connection, so every handler has
// run while its connection was open.
func TestClaimedBodiesDoNotReserveMemory(t *testing.T) {
	t.Parallel()
	const (
		conns  = 300
		rounds = 3
		// What the claims would take at once is conns MiB; a server that
		// holds a few KiB per connection stays far below this.
		bound = 48 << 20
	)
	raiseFileLimit(t, conns+256)
	p := startProcess(t, "-db", "memory", "-read-header-timeout", "2s", "-read-timeout", "2s")
	pid := p.Cmd.Process.Pid
	checkServing(t, p.URL, 1)
	before := procMemory(t, pid, "VmRSS")
	head := createHead("Content-Length: " + strconv.Itoa(1<<20) + "\r\n")
	for round := range rounds {
		var wg sync.WaitGroup
		errs := make(chan error, conns)
		for range conns {
			conn := dial(t, p.URL)
			if _, err := io.WriteString(conn, head+`{`); err != nil {
				t.Fatal(err)
			}
			w := watch(conn)
			wg.Go(func() {
				if !w.closedByServer() {
					errs <- fmt.Errorf("round %d: the server neither answered nor closed a connection: %v", round, w.err)
				}
				conn.Close()
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	peak, after := procMemory(t, pid, "VmHWM"), procMemory(t, pid, "VmRSS")
	t.Logf("VmRSS before %d MiB, peak (VmHWM) %d MiB, after %d MiB, over %d rounds of %d connections claiming 1 MiB each",
		before>>20, peak>>20, after>>20, rounds, conns)
	if peak-before > bound {
		t.Errorf("resident memory grew by %d MiB under claimed bodies, want at most %d MiB", (peak-before)>>20, bound>>20)
	}
	checkServing(t, p.URL, 2)
}

// TestListPagesAreBoundedInBytes stores plants with 512 KiB names, three
// times the default page's 4 MiB, and lists them with the largest limit:
// each page stays within the byte bound and holds at least one plant, a
// short page carries a Link to the rest, and following the links yields
// every plant once.
func TestListPagesAreBoundedInBytes(t *testing.T) {
	t.Parallel()
	const (
		n        = 24
		pageSize = 4 << 20 // httpapi.DefaultMaxPageBytes
	)
	url := startServer(t, "-db", "memory")
	name := strings.Repeat("n", 512<<10)
	for id := range int64(n) {
		if status, code, err := create(url, id, name); err != nil || status != 200 {
			t.Fatalf("create %d = %d (error %d), %v", id, status, code, err)
		}
	}
	seen, pages := 0, 0
	for query := "?limit=1000"; ; pages++ {
		req, err := http.NewRequest("GET", url+"/plants"+query, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+procToken)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET /plants%s = %d, %v", query, resp.StatusCode, err)
		}
		var page []struct{ ID int64 }
		if err := json.Unmarshal(body, &page); err != nil {
			t.Fatalf("GET /plants%s: %v", query, err)
		}
		if len(body) > pageSize {
			t.Errorf("GET /plants%s answered %d bytes, want at most %d", query, len(body), pageSize)
		}
		for _, p := range page {
			if p.ID != int64(seen) {
				t.Fatalf("GET /plants%s lists id %d, want %d", query, p.ID, seen)
			}
			seen++
		}
		link := resp.Header.Get("Link")
		if seen < n {
			if len(page) == 0 || link == "" {
				t.Fatalf("GET /plants%s listed %d plants with Link %q, %d of %d seen: want a page and a Link to the rest", query, len(page), link, seen, n)
			}
		}
		if link == "" {
			break
		}
		next, _, ok := strings.Cut(strings.TrimPrefix(link, "<"), ">")
		if !ok || !strings.HasPrefix(next, "?limit=1000&") {
			t.Fatalf("Link %q does not keep the limit in a query-only reference", link)
		}
		query = next
	}
	if seen != n {
		t.Errorf("paging saw %d plants, want %d", seen, n)
	}
	if pages < n*len(name)/pageSize {
		t.Errorf("%d plants of %d KiB came in %d pages, want each page within %d bytes", n, len(name)>>10, pages, pageSize)
	}
	t.Logf("%d plants of %d KiB listed in %d pages", n, len(name)>>10, pages)
}

// TestEscapedPathsAreNotDecodedIntoRoutes sends paths whose %-escapes
// decode to a route or an id: they are matched as sent, so none reaches
// the plant they spell once decoded, and the plant is still there.
func TestEscapedPathsAreNotDecodedIntoRoutes(t *testing.T) {
	t.Parallel()
	url := startServer(t, "-db", "memory")
	const id = 31337
	if status, code, err := create(url, id, "escaped"); err != nil || status != 200 {
		t.Fatalf("create = %d (error %d), %v", status, code, err)
	}
	tests := []struct {
		method, path string
		wantCode     int
		reason       string
	}{
		{"DELETE", "/plants%2F31337", 404, "an escaped slash is not a path separator"},
		{"DELETE", "/plants%2f31337", 404, "nor in lower case"},
		{"GET", "/plants%2F31337", 404, ""},
		{"DELETE", "/plants/%2B31337", 400, "an escaped plus sign is not a canonical id"},
		{"DELETE", "/plants/%33%31%33%33%37", 400, "escaped digits are not a canonical id"},
		{"GET", "/plants/%33", 400, ""},
		{"GET", "/%70lants/31337", 404, "an escaped letter spells no route"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			conn := dial(t, url)
			fmt.Fprintf(conn, "%s %s HTTP/1.1\r\nHost: plantstore\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n",
				tt.method, tt.path, procToken)
			conn.SetReadDeadline(time.Now().Add(hostileWait))
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if got := errorCode(body); got != tt.wantCode {
				t.Errorf("%s %s = %s %s, want the Error with code %d (%s)", tt.method, tt.path, resp.Status, body, tt.wantCode, tt.reason)
			}
		})
	}
	if got := listAll(t, url); got[id] != "escaped" {
		t.Errorf("plant %d after the escaped requests: %q, want it kept", id, got[id])
	}
}

// TestHeadersOverLimitGetTheError sends a request whose headers are over
// the server's 64 KiB limit but within what net/http reads: the answer is
// 431 as the API's Error, in JSON. Headers far past it are refused by
// net/http itself, as TestOversizedHeadersAreRefused checks.
func TestHeadersOverLimitGetTheError(t *testing.T) {
	t.Parallel()
	url := startServer(t, "-db", "memory", "-conventional-status")
	filler := "X-Filler: " + strings.Repeat("a", 80<<10) + "\r\n"
	tests := []struct {
		name string
		req  string
	}{
		{"GET /healthz", "GET /healthz HTTP/1.1\r\nHost: plantstore\r\n" + filler + "\r\n"},
		{"POST /plants", createHead(filler+"Content-Length: 22\r\n") + `{"id":9001,"name":"x"}`},
		{"request target", "GET /plants?x=" + strings.Repeat("a", 80<<10) + " HTTP/1.1\r\nHost: plantstore\r\n\r\n"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, resp, body := exchange(t, url, strings.NewReader(tt.req))
			if resp == nil {
				t.Fatal("the server closed the connection without an answer")
			}
			if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || resp.Header.Get("Content-Type") != "application/json" || errorCode(body) != 431 {
				t.Errorf("headers over the limit answered %s (%s) %q, want 431 with the Error in JSON",
					resp.Status, resp.Header.Get("Content-Type"), body)
			}
			checkServing(t, url, int64(i+1))
		})
	}
	if _, ok := listAll(t, url)[9001]; ok {
		t.Error("the create with oversized headers is stored")
	}
}

// TestAnswersNetHTTPGivesItself lists the requests that net/http answers
// before any handler runs, so that they cannot carry the API's Error: it
// writes the answer itself, as text/plain (or with no body), and closes
// the connection. docs/operations.md's "Answers net/http gives itself" names them.
func TestAnswersNetHTTPGivesItself(t *testing.T) {
	t.Parallel()
	url := startServer(t, "-db", "memory")
	tests := []struct {
		name       string
		req        string
		wantStatus int
		wantType   string
	}{
		{"malformed request line", "GET\r\nHost: plantstore\r\n\r\n", 400, "text/plain; charset=utf-8"},
		{"missing Host", "GET /healthz HTTP/1.1\r\n\r\n", 400, "text/plain; charset=utf-8"},
		{"malformed Host", "GET /healthz HTTP/1.1\r\nHost: a b\r\n\r\n", 400, "text/plain; charset=utf-8"},
		{"invalid header name", "GET /healthz HTTP/1.1\r\nHost: plantstore\r\nX Y: z\r\n\r\n", 400, "text/plain; charset=utf-8"},
		{"two Content-Lengths", createHead("Content-Length: 2\r\nContent-Length: 3\r\n") + "{}", 400, "text/plain; charset=utf-8"},
		{"unsupported Transfer-Encoding", createHead("Transfer-Encoding: gzip\r\n"), 501, "text/plain; charset=utf-8"},
		{"two Hosts", "GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "text/plain; charset=utf-8"},
		{"two Transfer-Encodings", createHead("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"), 501, "text/plain; charset=utf-8"},
		{"unsupported HTTP version", "GET /healthz HTTP/2.0\r\nHost: plantstore\r\n\r\n", 505, "text/plain; charset=utf-8"},
		{"headers past what net/http reads", "GET /healthz HTTP/1.1\r\nHost: plantstore\r\nX-Filler: " +
			strings.Repeat("a", 2*server.DefaultMaxHeaderBytes+8<<10) + "\r\n\r\n", 431, "text/plain; charset=utf-8"},
		{"an expectation other than 100-continue", "GET /healthz HTTP/1.1\r\nHost: plantstore\r\nExpect: tea\r\n\r\n", 417, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, resp, body := exchange(t, url, strings.NewReader(tt.req))
			if resp == nil {
				t.Fatal("the server closed the connection without an answer")
			}
			if resp.StatusCode != tt.wantStatus || resp.Header.Get("Content-Type") != tt.wantType {
				t.Errorf("answered %s (Content-Type %q) %q, want %d (Content-Type %q) from net/http",
					resp.Status, resp.Header.Get("Content-Type"), body, tt.wantStatus, tt.wantType)
			}
			if !resp.Close {
				t.Errorf("net/http's answer %s keeps the connection open", resp.Status)
			}
			checkServing(t, url, int64(i+1))
		})
	}
}

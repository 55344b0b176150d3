package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/dirtest"
	"github.com/plantstore/plantstore/internal/faultproxy"
	"github.com/plantstore/plantstore/internal/testkit"
)

// readyzCode sends GET /readyz with a client that gives up after limit,
// and returns the Error code of the answer, 0 for a 200, or the client's
// error when no answer came in time.
func readyzCode(base string, limit time.Duration) (int, error) {
	status, _, body, err := testkit.Get(&http.Client{Timeout: limit}, base+"/readyz", "")
	if err != nil || status == 200 {
		return 0, err
	}
	return testkit.ErrorCode(body), nil
}

// TestDiskFullReadiness runs the binary on a SQLite file on a 2 MiB
// filesystem and fills it with creates: once creates answer error 503,
// GET /readyz does too, though the file can still be read; freeing space
// makes GET /readyz answer 200 again with no client write, and creates
// succeed. Every acknowledged create is stored.
//
// It is one piece: each step acts on what the steps before it left, on one full filesystem.
func TestDiskFullReadiness(t *testing.T) {
	t.Parallel()
	dir := dirtest.Tmpfs(t, 2<<20)
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, 512<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, "-db", filepath.Join(dir, "plants.db"), "-log-level", "warn")
	t.Cleanup(client.CloseIdleConnections)
	bound := 3 * time.Second // three times the default -ready-timeout

	if code, err := readyzCode(p.URL, bound); err != nil || code != 0 {
		t.Fatalf("GET /readyz on an empty disk = error %d, %v, want 200", code, err)
	}
	acked := map[int64]string{}
	inDoubt := map[int64]string{}
	id := int64(0)
	// Large names fill the disk fast; smaller ones then use up what is
	// left, so that even the probe's small write finds no room.
	for _, size := range []int{32 << 10, 4 << 10, 256} {
		for {
			id++
			name := fmt.Sprintf("%d-%s", id, strings.Repeat("x", size))
			status, code, err := create(p.URL, id, name)
			if err != nil {
				t.Fatalf("create %d: %v", id, err)
			}
			if status == 200 {
				acked[id] = name
				continue
			}
			if code == 504 {
				inDoubt[id] = name
				continue
			}
			if code != 503 {
				t.Fatalf("create %d of %d bytes = %d with error %d, want 200 or error 503", id, size, status, code)
			}
			break
		}
	}
	t.Logf("disk full after %d acknowledged creates (%d of unknown outcome)", len(acked), len(inDoubt))
	if len(acked) == 0 {
		t.Fatal("no create succeeded before the disk filled")
	}
	testkit.WaitUntil(t, time.Minute, "GET /readyz to answer 503 on a full disk", func() bool {
		code, err := readyzCode(p.URL, bound)
		if err != nil {
			t.Fatalf("GET /readyz on a full disk: %v", err)
		}
		return code == 503
	})
	if got := getCode(t, p.URL+"/healthz", ""); got != 200 {
		t.Errorf("GET /healthz on a full disk = %d, want 200", got)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	testkit.WaitUntil(t, time.Minute, "GET /readyz to answer 200 once space is free", func() bool {
		code, err := readyzCode(p.URL, bound)
		if err != nil {
			t.Fatalf("GET /readyz after freeing space: %v", err)
		}
		return code == 0
	})
	id++
	name := fmt.Sprintf("%d-after", id)
	if status, code, err := create(p.URL, id, name); err != nil || status != 200 {
		t.Fatalf("create after freeing space = %d with error %d, %v, want 200", status, code, err)
	}
	acked[id] = name

	stored := listAll(t, p.URL)
	for id, name := range acked {
		if stored[id] != name {
			t.Errorf("plant %d was acknowledged but is not stored as sent", id)
		}
	}
	for id := range stored {
		if _, ok := acked[id]; !ok {
			if _, ok := inDoubt[id]; !ok {
				t.Errorf("plant %d is stored but its create was refused", id)
			}
		}
	}
}

// proxiedPostgres returns a DSN for a fresh schema on the test PostgreSQL
// server reached through a fault proxy.
func proxiedPostgres(t *testing.T) (string, *faultproxy.Proxy) {
	t.Helper()
	dsn, err := url.Parse(testkit.PostgresDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	target := dsn.Host
	if dsn.Port() == "" {
		target = net.JoinHostPort(dsn.Hostname(), "5432")
	}
	proxy := faultproxy.New(t, target)
	dsn.Host = proxy.Addr()
	q := dsn.Query()
	q.Set("connect_timeout", "2")
	dsn.RawQuery = q.Encode()
	return dsn.String(), proxy
}

// TestOutageLogIsBounded cuts the binary off PostgreSQL under a burst of
// creates: each is answered error 503, but the log gets a line for the
// first failure of each kind and then a summary per kind every few
// seconds, not a line per request.
func TestOutageLogIsBounded(t *testing.T) {
	t.Parallel()
	dsn, proxy := proxiedPostgres(t)
	p := startProcess(t, "-db", dsn, "-log-level", "warn")
	t.Cleanup(client.CloseIdleConnections)
	if status, code, err := create(p.URL, 1, "before"); err != nil || status != 200 {
		t.Fatalf("create before the outage = %d with error %d, %v", status, code, err)
	}
	proxy.Cut()
	start := time.Now()
	const workers, perWorker = 8, 100
	var failed atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				id := int64(1000 + w*perWorker + i)
				status, code, err := create(p.URL, id, "during")
				switch {
				case err != nil:
					t.Errorf("create %d: %v", id, err)
					return
				case code == 503 || code == 504:
					failed.Add(1)
				default:
					t.Errorf("create %d during the outage = %d with error %d, want error 503", id, status, code)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	testkit.WaitUntil(t, time.Minute, "the first failure to be logged", func() bool {
		return testkit.Logged(p.Stderr.String(), "httpapi: storage unavailable") > 0
	})
	var lines int
	for l := range strings.Lines(p.Stderr.String()) {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			lines++
		}
	}
	// At most a first line and a summary per interval of 5 s, for each
	// kind: storage unavailable, outcome unknown, and two to spare.
	summaries := int(elapsed/(5*time.Second)) + 2
	if limit := 4 * summaries; lines > limit {
		t.Errorf("%d failed creates over %v logged %d lines, want at most %d:\n%s", failed.Load(), elapsed, lines, limit, p.Stderr)
	}
	t.Logf("%d creates failed over %v; %d warning lines logged", failed.Load(), elapsed.Round(time.Millisecond), lines)
	proxy.Restore()
}

// TestStalledStderrDoesNotStallServing runs the server with its stderr a
// pipe nobody reads. Requests keep being answered while the access lines
// pile up; the lines that do not fit are dropped and counted, and once the
// pipe is read again a line says how many were lost. How a LogWriter drops
// and reports is server's TestLogWriterDropsInsteadOfBlocking.
func TestStalledStderrDoesNotStallServing(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	t.Cleanup(func() { w.Close() }) // once run has stopped
	base, _, _ := startRunTo(t, []string{"-addr", "127.0.0.1:0", "-db", "memory", "-log-level", "info"},
		map[string]string{"PLANTSTORE_TOKENS": procToken}, w)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	t.Cleanup(c.CloseIdleConnections)

	// send makes one request and reports whether it was answered 200,
	// failing the test when not.
	send := func(i int64) bool {
		var req *http.Request
		if i%2 == 0 {
			req, _ = http.NewRequest("GET", base+"/healthz", nil)
		} else {
			req, _ = http.NewRequest("POST", base+"/plants", strings.NewReader(fmt.Sprintf(`{"id":%d,"name":"p"}`, i)))
			req.Header.Set("Authorization", "Bearer "+procToken)
			req.Header.Set("Content-Type", "application/json")
		}
		// A long request id makes long access lines.
		req.Header.Set("X-Request-Id", fmt.Sprintf("%0128d", i))
		resp, err := c.Do(req)
		if err != nil {
			t.Errorf("request %d with stderr stalled: %v", i, err)
			return false
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("request %d with stderr stalled = %d, want 200", i, resp.StatusCode)
			return false
		}
		return true
	}
	dropped := func() float64 {
		m := find(t, testkit.Scrape(t, http.DefaultClient, base+"/metrics", procToken), "plantstore_log_lines_dropped_total", nil)
		if m == nil {
			t.FailNow()
		}
		return m.GetCounter().GetValue()
	}
	var next atomic.Int64
	for sent := 0; dropped() == 0; sent += 8 * 500 {
		if sent > 200_000 {
			t.Fatalf("%d requests sent with stderr stalled, no log line dropped", sent)
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 500 {
					if !send(next.Add(1)) {
						return
					}
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
	}
	n := dropped()
	t.Logf("%d requests answered with stderr stalled; %v log lines dropped", next.Load(), n)
	send(0)
	send(next.Add(1))

	// Reading the pipe again lets the logs through, with the count.
	var logs testkit.Buffer
	go io.Copy(&logs, r)
	testkit.WaitUntil(t, time.Minute, "a line reporting the dropped log lines", func() bool {
		return testkit.Logged(logs.String(), "log lines dropped: the log output did not take them in time") > 0
	})
}

// TestSQLiteStoppedWriterMakesUnready holds SQLite's write lock on the
// binary's file from another connection, as another process stopped in
// the middle of a write transaction would: SQLite lets one writer at a
// time have the file, so the binary's creates answer error 503 and its
// GET /readyz answers 503 too, until the lock is let go; then both answer
// 200 again.
func TestSQLiteStoppedWriterMakesUnready(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "plants.db")
	p := startProcess(t, "-db", path, "-log-level", "warn", "-db-timeout", "1s", "-ready-timeout", "1s")
	if status, code, err := create(p.URL, 1, "before"); err != nil || status != 200 {
		t.Fatalf("create before the lock = %d (error %d), %v, want 200", status, code, err)
	}
	db := openSQLiteFile(t, path)
	held, err := db.Begin() // BEGIN IMMEDIATE: the DSN says so
	if err != nil {
		t.Fatal(err)
	}
	defer held.Rollback()
	if _, err := held.Exec(`INSERT INTO plants (id, name) VALUES (1000, 'held')`); err != nil {
		t.Fatal(err)
	}
	if status, code, err := create(p.URL, 2, "during"); err != nil || code != 503 {
		t.Errorf("create while another process holds the write lock = %d (error %d), %v, want error 503", status, code, err)
	}
	if code, err := readyzCode(p.URL, 10*time.Second); err != nil || code != 503 {
		t.Errorf("GET /readyz while another process holds the write lock = error %d, %v, want 503", code, err)
	}
	if err := held.Rollback(); err != nil {
		t.Fatal(err)
	}
	// A check that ended as the lock was let go answers for its interval.
	testkit.WaitUntil(t, 10*time.Second, "GET /readyz to answer 200 once the lock is let go", func() bool {
		code, err := readyzCode(p.URL, 10*time.Second)
		return err == nil && code == 0
	})
	if status, code, err := create(p.URL, 3, "after"); err != nil || status != 200 {
		t.Errorf("create once the lock is let go = %d (error %d), %v, want 200", status, code, err)
	}
}

package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/dirtest"
	"github.com/plantstore/plantstore/internal/testkit"
)

// waitReadyz polls GET /readyz, each with a client that gives up after
// 3 s (three times the default -ready-timeout), until it answers want (200,
// or an Error's code), failing t on an answer that does not come in time.
func waitReadyz(t *testing.T, base string, want int, what string) {
	t.Helper()
	testkit.WaitUntil(t, time.Minute, fmt.Sprintf("GET /readyz to answer %d %s", want, what), func() bool {
		status, _, body, err := testkit.Get(&http.Client{Timeout: 3 * time.Second}, base+"/readyz", "")
		if err != nil {
			t.Fatalf("GET /readyz %s: %v", what, err)
		}
		return status == want || testkit.ErrorCode(body) == want
	})
}

// TestSQLiteWritesDownMakesUnready runs the binary on a SQLite file on a
// 2 MiB filesystem. First another connection holds SQLite's write lock on
// the file, as another process stopped in the middle of a write
// transaction would: SQLite lets one writer at a time have the file, so
// creates answer error 503 and GET /readyz answers 503 too, until the lock
// is let go. Then creates fill the filesystem: once they answer error 503,
// GET /readyz does too, though the file can still be read; freeing space
// makes GET /readyz answer 200 again with no client write, and creates
// succeed. Every acknowledged create is stored.
//
// It is one piece: each step acts on what the steps before it left, on one file.
func TestSQLiteWritesDownMakesUnready(t *testing.T) {
	t.Parallel()
	dir := dirtest.Tmpfs(t, 2<<20)
	filler, path := filepath.Join(dir, "filler"), filepath.Join(dir, "plants.db")
	if err := os.WriteFile(filler, make([]byte, 512<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, "-db", path, "-log-level", "warn", "-db-timeout", "1s", "-ready-timeout", "1s")
	t.Cleanup(client.CloseIdleConnections)
	waitReadyz(t, p.URL, 200, "on an empty disk")
	acked := map[int64]string{}
	inDoubt := map[int64]string{}
	id := int64(1)
	if status, code, err := create(p.URL, id, "before"); err != nil || status != 200 {
		t.Fatalf("create before the lock = %d (error %d), %v, want 200", status, code, err)
	}
	acked[id] = "before"

	held, err := openSQLiteFile(t, path).Begin() // BEGIN IMMEDIATE: the DSN says so
	if err != nil {
		t.Fatal(err)
	}
	defer held.Rollback()
	if _, err := held.Exec(`INSERT INTO plants (id, name) VALUES (1000000, 'held')`); err != nil {
		t.Fatal(err)
	}
	id++
	if status, code, err := create(p.URL, id, "during"); err != nil || code != 503 {
		t.Errorf("create while another process holds the write lock = %d (error %d), %v, want error 503", status, code, err)
	}
	waitReadyz(t, p.URL, 503, "while another process holds the write lock")
	if err := held.Rollback(); err != nil {
		t.Fatal(err)
	}
	// A check that ended as the lock was let go answers for its interval.
	waitReadyz(t, p.URL, 200, "once the lock is let go")

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
	if len(acked) < 2 {
		t.Fatal("no create succeeded before the disk filled")
	}
	waitReadyz(t, p.URL, 503, "on a full disk")
	if got := getCode(t, p.URL+"/healthz", ""); got != 200 {
		t.Errorf("GET /healthz on a full disk = %d, want 200", got)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitReadyz(t, p.URL, 200, "once space is free")
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

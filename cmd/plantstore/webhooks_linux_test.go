//go:build linux

package main

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit"
)

// vmRSS returns the resident set size of process pid, in bytes, from
// /proc/<pid>/status.
func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS line %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmRSS in /proc/%d/status", pid)
	return 0
}

// deletePlant sends DELETE /plants/{id} and returns the status.
func deletePlant(t *testing.T, url string, id int64) int {
	t.Helper()
	req, err := http.NewRequest("DELETE", fmt.Sprintf("%s/plants/%d", url, id), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+procToken)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestMemoryOutboxStaysBoundedWithADeadSubscriber creates and deletes one
// id 400 times with a 1 MB name, on memory storage with a subscriber that
// refuses every connection, and checks that the binary's resident memory
// stays bounded although every event stays undelivered: the in-memory
// outbox drops its oldest events past -webhook-max-pending-bytes (64 MiB
// by default). Without the bound it grew by about 1 GB (400 MB of names,
// plus what the garbage collector lets accumulate).
func TestMemoryOutboxStaysBoundedWithADeadSubscriber(t *testing.T) {
	t.Parallel()
	testkit.Long(t, "pushes 400 MB of names through one binary")
	const (
		cycles    = 400
		nameLen   = 1_000_000
		maxGrowth = 300 << 20
	)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte(testkit.WebhookSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startProcess(t, "-db", "memory", "-log-level", "error",
		"-webhook", "http://127.0.0.1:1/dead", "-webhook-secret-file", secret)
	pid := p.Cmd.Process.Pid
	name := strings.Repeat("a", nameLen)
	// One cycle first, so that the baseline includes the buffers every
	// request of this size needs.
	if status, code, err := create(p.URL, 1, name); err != nil || status != 200 {
		t.Fatalf("create = %d (error %d), %v", status, code, err)
	}
	if status := deletePlant(t, p.URL, 1); status != http.StatusNoContent {
		t.Fatalf("delete = %d, want 204", status)
	}
	before, start := vmRSS(t, pid), time.Now()
	for i := range cycles {
		if status, code, err := create(p.URL, 1, name); err != nil || status != 200 {
			t.Fatalf("create %d = %d (error %d), %v: a full outbox must never refuse a create", i, status, code, err)
		}
		if status := deletePlant(t, p.URL, 1); status != http.StatusNoContent {
			t.Fatalf("delete %d = %d, want 204", i, status)
		}
	}
	after := vmRSS(t, pid)
	t.Logf("VmRSS %d MiB before, %d MiB after %d create/delete cycles of a %d-byte name (growth %d MiB, bound %d MiB)",
		before>>20, after>>20, cycles, nameLen, (after-before)>>20, maxGrowth>>20)
	if after-before > maxGrowth {
		t.Errorf("VmRSS grew by %d MiB, want at most %d MiB: the in-memory outbox is not bounded", (after-before)>>20, maxGrowth>>20)
	}
	// 64 MiB holds 63 of these events: the rest were dropped, and said so.
	if m := find(t, testkit.Scrape(t, http.DefaultClient, p.URL+"/metrics", procToken), "plantstore_webhook_dropped_total", nil); m != nil {
		if got := m.GetCounter().GetValue(); got < cycles-100 {
			t.Errorf("plantstore_webhook_dropped_total = %v, want at least %d", got, cycles-100)
		}
	}
	// The first drop is logged at once, then one summary a minute.
	maxLines := 1 + int(time.Since(start)/time.Minute)
	if n := testkit.Logged(p.Stderr.String(), "webhook: memory outbox full: dropped the oldest pending events, undelivered"); n < 1 || n > maxLines {
		t.Errorf("%d log lines about dropped events, want 1 to %d:\n%s", n, maxLines, p.Stderr)
	}
}

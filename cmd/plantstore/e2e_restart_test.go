package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit"
)

// TestKilledInstanceTakesBackItsDeliveries kills a single instance with
// SIGKILL while its subscriber holds deliveries leased for an hour, starts
// it again on the same address, and checks that every plant is delivered
// within the test's minute: the restarted process takes back the leases of
// its previous run (its instance is named by its host and address) at
// once, since the run lock in its state directory shows that run gone,
// instead of waiting out -webhook-lease.
func TestKilledInstanceTakesBackItsDeliveries(t *testing.T) {
	t.Parallel()
	const n = 10
	var (
		hold      atomic.Bool
		held      atomic.Int64
		mu        sync.Mutex
		delivered = map[int64]int{}
	)
	hold.Store(true)
	subscriber := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if hold.Load() {
			held.Add(1)
			<-r.Context().Done() // held until the process that sent it dies
			return
		}
		var p struct{ ID int64 }
		if err := json.Unmarshal(body, &p); err != nil {
			t.Errorf("delivery body %q: %v", body, err)
		}
		mu.Lock()
		delivered[p.ID]++
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(subscriber.Close)

	addr := testkit.FreeAddr(t)
	env := testkit.Env("PLANTSTORE_TOKENS=tok", "PLANTSTORE_WEBHOOK_SECRET="+testkit.WebhookSecret, "STATE_DIRECTORY="+t.TempDir())
	args := []string{"-addr", addr, "-db", filepath.Join(t.TempDir(), "plants.db"), "-webhook", subscriber.URL + "/hook", "-webhook-lease", "1h"}
	first := testkit.Start(t, binary(t), env, args...)
	for id := range int64(n) {
		if status, resp := post(t, first.URL, "tok", fmt.Sprintf(`{"id":%d,"name":"p"}`, id)); status != 200 {
			t.Fatalf("create %d: %d %s", id, status, resp)
		}
	}
	testkit.WaitUntil(t, 30*time.Second, "the subscriber to hold a delivery", func() bool { return held.Load() > 0 })
	if err := first.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-first.Exited()
	killed := time.Now()
	hold.Store(false)

	second := testkit.Start(t, binary(t), env, args...)
	testkit.WaitUntil(t, time.Minute, "every plant delivered after the restart", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(delivered) == n
	})
	t.Logf("every plant delivered %v after the kill", time.Since(killed).Round(10*time.Millisecond))
	second.Stop(t)
	if got := second.Stderr.String(); !strings.Contains(got, "took back the deliveries this instance's previous run held") || !strings.Contains(got, `known_gone_by="run lock"`) {
		t.Errorf("the restarted instance did not say it took back its deliveries, its previous run known gone by the run lock:\n%s", got)
	}
}

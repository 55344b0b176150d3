package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"

	"github.com/plantstore/plantstore/webhook"
)

// TestRunDeliversWebhooks creates plants through the server and checks
// that a subscriber receives each one, signed, over loopback.
func TestRunDeliversWebhooks(t *testing.T) {
	for _, db := range []string{"memory", filepath.Join(t.TempDir(), "hooks.db")} {
		t.Run(filepath.Base(db), func(t *testing.T) {
			const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
			var (
				mu  sync.Mutex
				got = map[string]string{} // webhook-id → body
			)
			receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				if err := webhook.Verify([]byte(secret), r.Header, body, time.Now(), 0); err != nil {
					t.Errorf("delivery does not verify: %v", err)
					http.Error(w, "unverified", http.StatusUnauthorized)
					return
				}
				mu.Lock()
				got[r.Header.Get("webhook-id")] = string(body)
				mu.Unlock()
			}))
			t.Cleanup(receiver.Close)

			url, _, _, stop := startRun(t, []string{"-addr", "127.0.0.1:0", "-db", db, "-webhook", receiver.URL + "/hook"},
				map[string]string{"PLANTSTORE_TOKENS": "tok", "PLANTSTORE_WEBHOOK_SECRET": secret})
			want := map[string]bool{}
			for i := range 20 {
				body := fmt.Sprintf(`{"id":%d,"name":"p%d"}`, i, i)
				if i%2 == 0 {
					body = fmt.Sprintf(`{"id":%d,"name":"p%d","tag":""}`, i, i)
				}
				if status, resp := post(t, url, "tok", body); status != 200 {
					t.Fatalf("create: %d %s", status, resp)
				}
				want[body] = true
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				mu.Lock()
				n := len(got)
				mu.Unlock()
				if n >= len(want) || time.Now().After(deadline) {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			stop()
			mu.Lock()
			defer mu.Unlock()
			bodies := map[string]bool{}
			for _, b := range got {
				bodies[b] = true
			}
			if diff := cmp.Diff(want, bodies); diff != "" {
				t.Errorf("delivered bodies (-want +got):\n%s", diff)
			}
			if len(got) != len(want) {
				t.Errorf("%d distinct webhook-ids for %d creates", len(got), len(want))
			}
		})
	}
}

// TestRunBoundsTheDatabaseOutbox runs the binary on SQLite with
// -webhook-max-pending 5 and a subscriber that refuses everything, and
// checks what an operator sees: the subscriber down, the events past the
// bound dropped and logged, and the outbox depth held at the bound.
func TestRunBoundsTheDatabaseOutbox(t *testing.T) {
	const n, bound = 30, 5
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	t.Cleanup(refusing.Close)
	url, _, stderr, stop := startRun(t, []string{"-addr", "127.0.0.1:0", "-db", filepath.Join(t.TempDir(), "hooks.db"),
		"-webhook", refusing.URL + "/hook", "-webhook-max-pending", strconv.Itoa(bound)},
		map[string]string{"PLANTSTORE_TOKENS": "tok", "PLANTSTORE_WEBHOOK_SECRET": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"})
	defer stop()
	for i := range n {
		if status, resp := post(t, url, "tok", fmt.Sprintf(`{"id":%d,"name":"p"}`, i)); status != 200 {
			t.Fatalf("create: %d %s", status, resp)
		}
	}
	value := func(mfs map[string]*dto.MetricFamily, name string) float64 {
		for _, m := range mfs[name].GetMetric() {
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
		return -1
	}
	lines := []string{"webhook: outbox full: dropped the oldest pending events", "webhook: subscriber down"}
	logged := func() bool {
		for _, line := range lines {
			if !strings.Contains(stderr.String(), line) {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mfs := scrape(t, url+"/metrics")
		dropped, depth, down := value(mfs, "plantstore_webhook_dropped_total"), value(mfs, "plantstore_webhook_outbox_depth"),
			value(mfs, "plantstore_webhook_subscribers_down")
		if dropped == n-bound && depth == bound && down == 1 && logged() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("dropped %v, depth %v, subscribers down %v; want %d, %d, 1; and the lines %q in the logs:\n%s",
				dropped, depth, down, n-bound, bound, lines, stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

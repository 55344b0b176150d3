package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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

package main

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/webhook"
)

// TestRunDeliversWebhooks creates plants through run on a SQLite file and
// checks that a subscriber receives each one, signed with
// PLANTSTORE_WEBHOOK_SECRET, over loopback, and that /metrics counts the
// deliveries and shows the outbox empty once they are done. The memory
// outbox delivers in TestDrainedCreatesAreDelivered and
// TestSIGHUPReloadsTheFiles; what a payload holds, and each delivered
// once, are webhook's TestPayload and TestDeliver.
func TestRunDeliversWebhooks(t *testing.T) {
	t.Parallel()
	var (
		mu  sync.Mutex
		got = map[string]bool{} // webhook-ids
	)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := webhook.Verify([]byte(testkit.WebhookSecret), r.Header, body, time.Now(), 0); err != nil {
			t.Errorf("delivery does not verify: %v", err)
			http.Error(w, "unverified", http.StatusUnauthorized)
			return
		}
		mu.Lock()
		got[r.Header.Get("webhook-id")] = true
		mu.Unlock()
	}))
	t.Cleanup(receiver.Close)
	path := filepath.Join(t.TempDir(), "hooks.db")
	url, _, _, _ := startRun(t, []string{"-addr", "127.0.0.1:0", "-db", path, "-webhook", receiver.URL + "/hook"},
		map[string]string{"PLANTSTORE_TOKENS": "tok", "PLANTSTORE_WEBHOOK_SECRET": testkit.WebhookSecret})
	const n = 20
	for i := range n {
		if status, resp := post(t, url, "tok", fmt.Sprintf(`{"id":%d,"name":"p%d"}`, i, i)); status != 200 {
			t.Fatalf("create: %d %s", status, resp)
		}
	}
	// The depth gauge counts the outbox at most once every 5 s, so the
	// first scrape waits until the deliveries' acks have emptied it.
	db := openSQLiteFile(t, path)
	testkit.WaitUntil(t, 30*time.Second, "the outbox to empty", func() bool {
		events, deliveries := outboxRows(t, db)
		return events == 0 && deliveries == 0
	})
	mu.Lock()
	if len(got) != n {
		t.Errorf("%d distinct webhook-ids for %d creates", len(got), n)
	}
	mu.Unlock()
	testkit.WaitUntil(t, 10*time.Second, "plantstore_webhook_deliveries_total 20 and plantstore_webhook_outbox_depth 0", func() bool {
		mfs := testkit.Scrape(t, http.DefaultClient, url+"/metrics", "tok")
		delivered := find(t, mfs, "plantstore_webhook_deliveries_total", nil).GetCounter().GetValue()
		depth := find(t, mfs, "plantstore_webhook_outbox_depth", nil).GetGauge().GetValue()
		return delivered == n && depth == 0
	})
}

// TestRunBoundsTheDatabaseOutbox runs the binary on SQLite with
// -webhook-max-pending 5 and a subscriber that refuses everything, and
// checks that the flag bounds the outbox and that the drops and the
// subscriber going down reach the binary's log, the latter once. The
// drops, the depth and the delivery of the newest events are webhook's
// TestBoundedSQLOutboxWithADeadSubscriber; their metrics, promstats'
// TestWebhooks.
func TestRunBoundsTheDatabaseOutbox(t *testing.T) {
	t.Parallel()
	const n, bound = 30, 5
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	t.Cleanup(refusing.Close)
	path := filepath.Join(t.TempDir(), "hooks.db")
	url, _, stderr, _ := startRun(t, []string{"-addr", "127.0.0.1:0", "-db", path,
		"-webhook", refusing.URL + "/hook", "-webhook-max-pending", strconv.Itoa(bound)},
		map[string]string{"PLANTSTORE_TOKENS": "tok", "PLANTSTORE_WEBHOOK_SECRET": testkit.WebhookSecret})
	for i := range n {
		if status, resp := post(t, url, "tok", fmt.Sprintf(`{"id":%d,"name":"p"}`, i)); status != 200 {
			t.Fatalf("create: %d %s", status, resp)
		}
	}
	db := openSQLiteFile(t, path)
	testkit.WaitUntil(t, 30*time.Second, "the outbox to hold the bound, and the drops and the subscriber down logged", func() bool {
		events, _ := outboxRows(t, db)
		out := stderr.String()
		return events == bound &&
			testkit.Logged(out, "webhook: outbox full: dropped the oldest pending events, undelivered") >= 1 &&
			testkit.Logged(out, "webhook: subscriber down: deliveries paused but for one probe at a time") == 1
	})
}

// TestWebhookSecretSources checks that the variable gives its secret
// trimmed of the newline an editor or a shell leaves, as a file does
// (webhook's TestReadSecretFile, with what a file may hold and the
// warning for one others may read).
func TestWebhookSecretSources(t *testing.T) {
	t.Parallel()
	const secret = testkit.WebhookSecret
	for _, env := range []string{secret + "\n", "  " + secret + "\t"} {
		o := &options{webhooks: listFlag{"http://127.0.0.1:1/hook"}}
		got, err := readWebhookSecret(o, func(k string) string {
			return map[string]string{"PLANTSTORE_WEBHOOK_SECRET": env}[k]
		}, slog.New(slog.DiscardHandler))
		if err != nil || got != secret {
			t.Errorf("PLANTSTORE_WEBHOOK_SECRET=%q: readWebhookSecret = %q, %v; want %q", env, got, err, secret)
		}
	}
}

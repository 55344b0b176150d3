package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/internal/secretfile"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/webhook"
)

// TestRunDeliversWebhooks creates plants through run on a SQLite file and
// checks that a subscriber receives each one once, signed, over loopback,
// and that /metrics counts the deliveries and shows the outbox empty once
// they are done. The memory outbox delivers in
// TestDrainedCreatesAreDelivered and TestSIGHUPReloadsTheFiles; what a
// payload holds is webhook's TestPayload.
func TestRunDeliversWebhooks(t *testing.T) {
	t.Parallel()
	var (
		mu  sync.Mutex
		got = map[string]string{} // webhook-id → body
	)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := webhook.Verify([]byte(testkit.WebhookSecret), r.Header, body, time.Now(), 0); err != nil {
			t.Errorf("delivery does not verify: %v", err)
			http.Error(w, "unverified", http.StatusUnauthorized)
			return
		}
		mu.Lock()
		got[r.Header.Get("webhook-id")] = string(body)
		mu.Unlock()
	}))
	t.Cleanup(receiver.Close)
	path := filepath.Join(t.TempDir(), "hooks.db")
	url, _, _, _ := startRun(t, []string{"-addr", "127.0.0.1:0", "-db", path, "-webhook", receiver.URL + "/hook"},
		map[string]string{"PLANTSTORE_TOKENS": "tok", "PLANTSTORE_WEBHOOK_SECRET": testkit.WebhookSecret})
	const n = 20
	want := map[string]bool{}
	for i := range n {
		body := fmt.Sprintf(`{"id":%d,"name":"p%d"}`, i, i)
		if i%2 == 0 {
			body = fmt.Sprintf(`{"id":%d,"name":"p%d","tag":""}`, i, i)
		}
		if status, resp := post(t, url, "tok", body); status != 200 {
			t.Fatalf("create: %d %s", status, resp)
		}
		want[body] = true
	}
	// The depth gauge counts the outbox at most once every 5 s, so the
	// first scrape waits until the deliveries' acks have emptied it.
	db := openSQLiteFile(t, path)
	testkit.WaitUntil(t, 30*time.Second, "the outbox to empty", func() bool {
		events, deliveries := outboxRows(t, db)
		return events == 0 && deliveries == 0
	})
	mu.Lock()
	bodies := map[string]bool{}
	for _, b := range got {
		bodies[b] = true
	}
	if diff := cmp.Diff(want, bodies); diff != "" {
		t.Errorf("delivered bodies (-want +got):\n%s", diff)
	}
	if len(got) != n {
		t.Errorf("%d distinct webhook-ids for %d creates", len(got), n)
	}
	mu.Unlock()
	var delivered, depth float64
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("last seen: plantstore_webhook_deliveries_total %v, plantstore_webhook_outbox_depth %v", delivered, depth)
		}
	})
	testkit.WaitUntil(t, 10*time.Second, "plantstore_webhook_deliveries_total 20 and plantstore_webhook_outbox_depth 0", func() bool {
		mfs := testkit.Scrape(t, http.DefaultClient, url+"/metrics", "tok")
		delivered = find(t, mfs, "plantstore_webhook_deliveries_total", nil).GetCounter().GetValue()
		depth = find(t, mfs, "plantstore_webhook_outbox_depth", nil).GetGauge().GetValue()
		return delivered == n && depth == 0
	})
}

// TestRunRefusesAWeakWebhookSecret checks that a signing secret with a
// key shorter than webhook.MinKeyBytes stops the binary before it opens
// the database, with an error naming where the secret came from and how
// to make a good one, and without the secret.
func TestRunRefusesAWeakWebhookSecret(t *testing.T) {
	t.Parallel()
	const weak = "s3cre"
	tests := []struct {
		name    string
		env     string // PLANTSTORE_WEBHOOK_SECRET
		file    string // -webhook-secret-file's contents; none when ""
		wantErr error
	}{
		{name: "5 bytes in the variable", env: weak, wantErr: webhook.ErrSecret},
		{name: "5 bytes in the file", env: testkit.WebhookSecret, file: weak + "\n", wantErr: webhook.ErrSecret},
		{name: "file past 1 MiB", file: strings.Repeat("x", secretfile.MaxSize+1), wantErr: secretfile.ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"-addr", "127.0.0.1:0", "-db", filepath.Join(dir, "plants.db"), "-webhook", "http://127.0.0.1:1/hook"}
			file := ""
			if tt.file != "" {
				file = filepath.Join(dir, "secret")
				if err := os.WriteFile(file, []byte(tt.file), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append(args, "-webhook-secret-file", file)
			}
			var stdout, stderr testkit.Buffer
			err := run(context.Background(), args, func(k string) string {
				return map[string]string{"PLANTSTORE_WEBHOOK_SECRET": tt.env, "PLANTSTORE_TOKENS": "tok"}[k]
			}, &stdout, &stderr)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("run = %v, want %v", err, tt.wantErr)
			}
			// The error names where the secret came from.
			if file == "" && !strings.HasPrefix(err.Error(), "PLANTSTORE_WEBHOOK_SECRET: ") {
				t.Errorf("run = %v, want it to name PLANTSTORE_WEBHOOK_SECRET", err)
			} else if fe, ok := errors.AsType[*webhook.SecretFileError](err); file != "" && errors.Is(tt.wantErr, webhook.ErrSecret) && (!ok || fe.Path != file || !strings.Contains(err.Error(), file)) {
				t.Errorf("run = %v, want a *webhook.SecretFileError naming file %q", err, file)
			} else if file != "" && !errors.Is(tt.wantErr, webhook.ErrSecret) {
				if se, ok := errors.AsType[*secretfile.Error](err); !ok || se.Path != file {
					t.Errorf("run = %v, want a *secretfile.Error for %s", err, file)
				}
			}
			// The log is text the operator reads: only its text can tell
			// that it does not show the secret.
			if strings.Contains(stderr.String(), weak) {
				t.Errorf("the log shows the secret:\n%s", stderr.String())
			}
			if _, err := os.Stat(filepath.Join(dir, "plants.db")); err == nil {
				t.Error("the failed run created the database")
			}
		})
	}
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

// TestWebhookSecretSources checks that the variable and the file give the
// same secret, trimmed alike of the newline an editor or a shell leaves.
// What a file may hold and the warning for one others may read are
// webhook's TestReadSecretFile.
func TestWebhookSecretSources(t *testing.T) {
	t.Parallel()
	const secret = testkit.WebhookSecret
	private := filepath.Join(t.TempDir(), "private")
	if err := os.WriteFile(private, []byte(secret+"\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, env, file string }{
		{name: "variable with a newline", env: secret + "\n"},
		{name: "variable with spaces", env: "  " + secret + "\t"},
		{name: "file", file: private},
	} {
		o := &options{webhooks: listFlag{"http://127.0.0.1:1/hook"}, webhookSecretFile: tt.file}
		got, err := readWebhookSecret(o, func(k string) string {
			return map[string]string{"PLANTSTORE_WEBHOOK_SECRET": tt.env}[k]
		}, slog.New(slog.DiscardHandler))
		if err != nil || got != secret {
			t.Errorf("%s: readWebhookSecret = %q, %v; want %q", tt.name, got, err, secret)
		}
	}
}

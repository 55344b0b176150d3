package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/webhook"
)

// TestRunRefusesAWeakWebhookSecret checks that a signing secret with a
// key shorter than webhook.MinKeyBytes stops the binary before it opens
// the database, with an error naming where the secret came from and how
// to make a good one, and without the secret.
func TestRunRefusesAWeakWebhookSecret(t *testing.T) {
	const weak = "s3cre"
	tests := []struct {
		name     string
		env      string // PLANTSTORE_WEBHOOK_SECRET
		file     string // -webhook-secret-file's contents; none when ""
		wantErr  error
		wantFrom string
	}{
		{name: "5 bytes in the variable", env: weak, wantErr: webhook.ErrSecret, wantFrom: "PLANTSTORE_WEBHOOK_SECRET"},
		{name: "5 bytes in the file", env: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", file: weak + "\n", wantErr: webhook.ErrSecret, wantFrom: "secret"},
		{name: "file past 1 MiB", file: strings.Repeat("x", maxSecretFile+1), wantErr: errFileTooLarge, wantFrom: "secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"-addr", "127.0.0.1:0", "-db", filepath.Join(dir, "plants.db"), "-webhook", "http://127.0.0.1:1/hook"}
			if tt.file != "" {
				file := filepath.Join(dir, "secret")
				if err := os.WriteFile(file, []byte(tt.file), 0o600); err != nil {
					t.Fatal(err)
				}
				args = append(args, "-webhook-secret-file", file)
				tt.wantFrom = file
			}
			var stdout, stderr lockedBuffer
			err := run(context.Background(), args, func(k string) string {
				return map[string]string{"PLANTSTORE_WEBHOOK_SECRET": tt.env, "PLANTSTORE_TOKENS": "tok"}[k]
			}, &stdout, &stderr)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("run = %v, want %v", err, tt.wantErr)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.wantFrom) {
				t.Errorf("the error %q does not name %q", msg, tt.wantFrom)
			}
			if errors.Is(tt.wantErr, webhook.ErrSecret) && !strings.Contains(msg, "head -c 32 /dev/urandom | base64") {
				t.Errorf("the error %q does not say how to make a secret", msg)
			}
			if strings.Contains(stderr.String(), weak) {
				t.Errorf("the log shows the secret:\n%s", stderr.String())
			}
			if _, err := os.Stat(filepath.Join(dir, "plants.db")); err == nil {
				t.Error("the failed run created the database")
			}
		})
	}
}

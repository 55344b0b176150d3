package webhook_test

import (
	"bytes"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/internal/secretfile"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/webhook"
)

// TestReadSecretFile checks that a secret file gives its secret trimmed
// of the newline an editor or a shell leaves, with one warning naming the
// chmod that fixes a file group or others may read; and that a file that
// cannot be used is a *SecretFileError naming it, for the reason, without
// the secret.
func TestReadSecretFile(t *testing.T) {
	t.Parallel()
	const secret = testkit.WebhookSecret
	const weak = "s3cre"
	dir := t.TempDir()
	write := func(name, content string, perm os.FileMode) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), perm); err != nil {
			t.Fatal(err)
		}
		return path
	}
	tests := []struct {
		name     string
		path     string
		wantErr  error
		wantWarn bool
	}{
		{name: "private file", path: write("private", secret+"\r\n", 0o600)},
		{name: "shared file", path: write("shared", " "+secret+"\n", 0o644), wantWarn: true},
		{name: "weak secret", path: write("weak", weak+"\n", 0o600), wantErr: webhook.ErrSecret},
		{name: "empty file", path: write("empty", "\n", 0o600), wantErr: webhook.ErrSecret},
		{name: "file past 1 MiB", path: write("large", strings.Repeat("x", secretfile.MaxSize+1), 0o600), wantErr: secretfile.ErrTooLarge},
		{name: "missing file", path: filepath.Join(dir, "missing"), wantErr: fs.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			got, err := webhook.ReadSecretFile(tt.path, testkit.NewLogger(&logs, slog.LevelInfo))
			if tt.wantErr == nil {
				if err != nil || string(got) != secret {
					t.Fatalf("ReadSecretFile = %q, %v; want %q", got, err, secret)
				}
			} else {
				fe, ok := errors.AsType[*webhook.SecretFileError](err)
				if !errors.Is(err, tt.wantErr) || !ok || fe.Path != tt.path || !strings.Contains(err.Error(), tt.path) {
					t.Fatalf("ReadSecretFile = %v, want a *SecretFileError naming %s and wrapping %v", err, tt.path, tt.wantErr)
				}
				if strings.Contains(err.Error(), weak) {
					t.Errorf("the error shows the secret: %v", err)
				}
			}
			warned := testkit.Logged(logs.String(), "webhook secret file is readable by group or others; chmod 600 it")
			if tt.wantWarn != (warned == 1) || warned > 1 {
				t.Errorf("%d warnings about the file's mode, want %v:\n%s", warned, tt.wantWarn, &logs)
			}
			if tt.wantWarn && !strings.Contains(logs.String(), `fix="chmod 600 `+tt.path+`"`) {
				t.Errorf("the warning does not name the chmod that fixes it:\n%s", &logs)
			}
		})
	}
}

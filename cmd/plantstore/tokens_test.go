package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/internal/secretfile"
	"github.com/plantstore/plantstore/internal/testkit"
)

// TestLoadTokensRefusesTokensNoClientCanSend checks that a token no bearer
// header can carry stops the start with an error naming where it is and
// the rule, and never the token itself.
func TestLoadTokensRefusesTokensNoClientCanSend(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		file     string // contents of -token-file; none when ""
		env      string // PLANTSTORE_TOKENS
		secret   string // the bad token, which the error must not show
		wantLine int    // the bad token's line in the file, or item in the variable
	}{
		{name: "inner equals sign in the file", file: "# ops\ngood-1\nabc=def\n", secret: "abc=def", wantLine: 3},
		{name: "space in the file", file: "good-1\n\n  tok en1  \n", secret: "tok en1", wantLine: 3},
		{name: "non-ASCII in the file", file: "pässwört\n", secret: "pässwört", wantLine: 1},
		{name: "inner equals sign in the variable", env: "good-1, abc=def", secret: "abc=def", wantLine: 2},
		{name: "non-ASCII in the variable", env: "good-1,,pässwört", secret: "pässwört", wantLine: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := ""
			if tt.file != "" {
				file = filepath.Join(t.TempDir(), "tokens")
				if err := os.WriteFile(file, []byte(tt.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			getenv := func(k string) string { return map[string]string{"PLANTSTORE_TOKENS": tt.env}[k] }
			_, err := loadTokens(file, getenv, slog.New(slog.DiscardHandler))
			if !errors.Is(err, httpapi.ErrTokenSyntax) {
				t.Fatalf("loadTokens = %v, want ErrTokenSyntax", err)
			}
			be, ok := errors.AsType[*badTokenError](err)
			if !ok || be.File != file || be.Line != tt.wantLine {
				t.Errorf("loadTokens = %v, want a *badTokenError at line or item %d of %q", err, tt.wantLine, file)
			}
			// The message is what the operator reads: it must not show
			// the token, which only its text can tell.
			if msg := err.Error(); strings.Contains(msg, tt.secret) {
				t.Errorf("the error %q shows the token", msg)
			}
		})
	}
}

func TestLoadTokensBoundsTheFile(t *testing.T) {
	t.Parallel()
	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, []byte(strings.Repeat("tok\n", secretfile.MaxSize/4)+"x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"/dev/zero", big} {
		if _, err := os.Stat(file); err != nil {
			t.Logf("skipping %s: %v", file, err)
			continue
		}
		_, err := loadTokens(file, func(string) string { return "" }, slog.New(slog.DiscardHandler))
		if se, ok := errors.AsType[*secretfile.Error](err); !ok || se.Path != file || !errors.Is(err, secretfile.ErrTooLarge) {
			t.Errorf("loadTokens(%s) = %v, want secretfile.ErrTooLarge in a *secretfile.Error for the file", file, err)
		}
	}
}

// TestLoadTokensFromAPipe checks that a token file need not be regular, so
// that -token-file /dev/stdin and process substitution keep working.
func TestLoadTokensFromAPipe(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	path := fmt.Sprintf("/dev/fd/%d", r.Fd())
	if _, err := os.Stat(path); err != nil {
		t.Skipf("no %s on this system: %v", path, err)
	}
	go func() {
		io.WriteString(w, "piped-1\n# comment\npiped-2\n")
		w.Close()
	}()
	got, err := loadTokens(path, func(string) string { return "" }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("loadTokens(%s) = %v", path, err)
	}
	if diff := cmp.Diff([]string{"piped-1", "piped-2"}, got); diff != "" {
		t.Errorf("tokens from a pipe (-want +got):\n%s", diff)
	}
}

// TestRunRefusesABadToken checks the whole binary: a bad token stops it
// before it listens or prints a generated token, naming the variable.
func TestRunRefusesABadToken(t *testing.T) {
	t.Parallel()
	var stdout, stderr testkit.Buffer
	err := run(context.Background(), []string{"-addr", "127.0.0.1:0", "-db", "memory"},
		func(k string) string { return map[string]string{"PLANTSTORE_TOKENS": "abc=def"}[k] }, &stdout, &stderr)
	if !errors.Is(err, httpapi.ErrTokenSyntax) {
		t.Fatalf("run = %v, want ErrTokenSyntax", err)
	}
	if stdout.String() != "" {
		t.Errorf("stdout = %q, want nothing", stdout.String())
	}
	if strings.Contains(stderr.String(), "abc=def") {
		t.Errorf("the log shows the token:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "PLANTSTORE_TOKENS") {
		t.Errorf("the log does not name PLANTSTORE_TOKENS:\n%s", stderr.String())
	}
}

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
)

// TestLoadTokensRefusesTokensNoClientCanSend checks that a token no bearer
// header can carry stops the start with an error naming where it is and
// the rule, and never the token itself.
func TestLoadTokensRefusesTokensNoClientCanSend(t *testing.T) {
	tests := []struct {
		name      string
		file      string // contents of -token-file; none when ""
		env       string // PLANTSTORE_TOKENS
		secret    string // the bad token, which the error must not show
		wantWhere string
	}{
		{name: "inner equals sign in the file", file: "# ops\ngood-1\nabc=def\n", secret: "abc=def", wantWhere: "line 3"},
		{name: "space in the file", file: "good-1\n\n  tok en1  \n", secret: "tok en1", wantWhere: "line 3"},
		{name: "non-ASCII in the file", file: "pässwört\n", secret: "pässwört", wantWhere: "line 1"},
		{name: "inner equals sign in the variable", env: "good-1, abc=def", secret: "abc=def", wantWhere: "PLANTSTORE_TOKENS, item 2"},
		{name: "non-ASCII in the variable", env: "good-1,,pässwört", secret: "pässwört", wantWhere: "PLANTSTORE_TOKENS, item 3"},
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
			msg := err.Error()
			if strings.Contains(msg, tt.secret) {
				t.Errorf("the error %q shows the token", msg)
			}
			for _, want := range []string{tt.wantWhere, "RFC 6750", file} {
				if !strings.Contains(msg, want) {
					t.Errorf("the error %q does not name %q", msg, want)
				}
			}
		})
	}
}

func TestLoadTokensBoundsTheFile(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, []byte(strings.Repeat("tok\n", maxSecretFile/4)+"x"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"/dev/zero", big} {
		if _, err := os.Stat(file); err != nil {
			t.Logf("skipping %s: %v", file, err)
			continue
		}
		_, err := loadTokens(file, func(string) string { return "" }, slog.New(slog.DiscardHandler))
		if !errors.Is(err, errFileTooLarge) || !strings.Contains(err.Error(), file) {
			t.Errorf("loadTokens(%s) = %v, want errFileTooLarge naming the file", file, err)
		}
	}
}

// TestLoadTokensFromAPipe checks that a token file need not be regular, so
// that -token-file /dev/stdin and process substitution keep working.
func TestLoadTokensFromAPipe(t *testing.T) {
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
	var stdout, stderr lockedBuffer
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

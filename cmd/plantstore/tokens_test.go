package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/internal/testkit"
)

// TestEnvTokensRefusesTokensNoClientCanSend checks that a token no bearer
// header can carry in PLANTSTORE_TOKENS stops the start with an error
// naming its position and the rule, and never the token itself. (A token
// file's are checked by httpapi.OpenTokenFile, and its tests.)
func TestEnvTokensRefusesTokensNoClientCanSend(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		env      string // PLANTSTORE_TOKENS
		secret   string // the bad token, which the error must not show
		wantItem int    // the bad token's item in the variable
	}{
		{name: "inner equals sign in the variable", env: "good-1, abc=def", secret: "abc=def", wantItem: 2},
		{name: "non-ASCII in the variable", env: "good-1,,pässwört", secret: "pässwört", wantItem: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string { return map[string]string{"PLANTSTORE_TOKENS": tt.env}[k] }
			_, err := envTokens(getenv)
			if !errors.Is(err, httpapi.ErrTokenSyntax) {
				t.Fatalf("envTokens = %v, want ErrTokenSyntax", err)
			}
			be, ok := errors.AsType[*badTokenError](err)
			if !ok || be.Item != tt.wantItem {
				t.Errorf("envTokens = %v, want a *badTokenError at item %d", err, tt.wantItem)
			}
			// The message is what the operator reads: it must not show
			// the token, which only its text can tell.
			if msg := err.Error(); strings.Contains(msg, tt.secret) {
				t.Errorf("the error %q shows the token", msg)
			}
		})
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

package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/internal/testkit"
)

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

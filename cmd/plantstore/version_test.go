package main

import (
	"errors"
	"strings"
	"testing"
)

// TestUnknownVariables checks that a misspelt PLANTSTORE_ variable is named
// with the one it is closest to, and that the variables plantstore reads,
// other programs' and the test suite's are not.
func TestUnknownVariables(t *testing.T) {
	t.Parallel()
	o, err := parseFlags(nil, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	// The misspelt names are made, so that no file spells them out
	// (TestVariablesAreSpelledOneWay).
	p := envPrefix
	got := unknownVariables([]string{
		p + "TOKEN=s3cret", p + "TOKENS=s3cret", p + "LOGLEVEL=debug",
		p + "DB=memory", p + "TEST_POSTGRES_DSN=x", p + "COLOUR=green", "HOME=/root",
	}, o.fs)
	want := []string{
		p + "TOKEN is not a variable plantstore reads; did you mean " + p + "TOKENS?",
		p + "LOGLEVEL is not a variable plantstore reads; did you mean " + p + "LOG_LEVEL?",
		p + "COLOUR is not a variable plantstore reads",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestWebhookSecretWithoutWebhook checks that a webhook secret file with no
// -webhook to sign for is refused as a flag error, whether the file comes
// from the command line or from its variable, rather than read and unused.
func TestWebhookSecretWithoutWebhook(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		env  map[string]string
	}{
		{[]string{"-db", "memory", "-webhook-secret-file", "/dev/null"}, nil},
		{[]string{"-db", "memory"}, map[string]string{"PLANTSTORE_WEBHOOK_SECRET_FILE": "/dev/null"}},
	} {
		_, err := parseFlags(c.args, func(k string) string { return c.env[k] })
		fe, ok := errors.AsType[*flagError](err)
		if !ok || fe.Flag != "webhook-secret-file" || !strings.Contains(err.Error(), "needs -webhook") {
			t.Errorf("parseFlags(%q, %v) = %v, want a *flagError for -webhook-secret-file saying it needs -webhook", c.args, c.env, err)
		}
	}
	if _, err := parseFlags([]string{"-db", "memory", "-webhook-secret-file", "/dev/null", "-webhook", "http://127.0.0.1:1/hook"}, func(string) string { return "" }); err != nil {
		t.Errorf("parseFlags with -webhook too = %v, want nil", err)
	}
}

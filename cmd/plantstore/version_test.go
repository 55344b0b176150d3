package main

import (
	"errors"
	"runtime/debug"
	"strings"
	"testing"
)

// TestDescribeBuild checks that -version names the module version and the
// commit of each way plantstore is built: from a clone (the go command
// stamps vcs.revision), with -buildvcs=false and the commit given at link
// time, by go install of a pseudo-version or of a tag, and with nothing at
// all, where it says why no commit is known.
func TestDescribeBuild(t *testing.T) {
	t.Parallel()
	const path = "github.com/plantstore/plantstore"
	main := debug.Module{Path: path, Version: "(devel)"}
	for _, c := range []struct {
		reason                  string
		bi                      debug.BuildInfo
		linkVersion, linkCommit string
		want                    []string
	}{
		{"a build in a clone", debug.BuildInfo{Main: main, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "d1be8db0a1b2c3d4"}, {Key: "vcs.modified", Value: "true"}}},
			"", "", []string{"(devel)", "revision d1be8db0a1b2c3d4 (modified)"}},
		{"-buildvcs=false with -ldflags -X", debug.BuildInfo{Main: main}, "v1.4.0", "0123456789ab",
			[]string{"v1.4.0", "revision 0123456789ab"}},
		{"go install …@commit", debug.BuildInfo{Main: debug.Module{Path: path, Version: "v0.0.0-20261125054009-d1be8db0a1b2"}},
			"", "", []string{"v0.0.0-20261125054009-d1be8db0a1b2", "revision d1be8db0a1b2"}},
		{"go install …@tag", debug.BuildInfo{Main: debug.Module{Path: path, Version: "v1.2.0"}},
			"", "", []string{"v1.2.0", "revision of tag v1.2.0"}},
		{"a pre-release pseudo-version", debug.BuildInfo{Main: debug.Module{Path: path, Version: "v1.2.1-0.20261125054009-abcdef012345+dirty"}},
			"", "", []string{"revision abcdef012345"}},
		{"nothing stamped", debug.BuildInfo{Main: main}, "", "",
			[]string{"(devel)", "revision unknown (built without version control information"}},
	} {
		got := describeBuild(&c.bi, c.linkVersion, c.linkCommit)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q, want it to contain %q", c.reason, got, w)
			}
		}
		if !strings.HasPrefix(got, "plantstore "+path+" ") {
			t.Errorf("%s: %q, want it to name the module", c.reason, got)
		}
	}
}

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

package main

import (
	"context"
	"encoding/json"
	"flag"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/plantstore/plantstore/internal/testkit"
)

// TestFlagsFromEnvironment checks what each row's flags and variables set.
func TestFlagsFromEnvironment(t *testing.T) {
	t.Parallel()
	// settings are the options a row checks.
	type settings struct {
		Addr         string
		DB           string
		MaxBody      int64
		LogLevel     slog.Level
		LogFormat    string
		Conventional bool
		ReadTimeout  time.Duration
		Webhooks     []string
		FromEnv      map[string]string
	}
	defaults := func(change func(*settings)) settings {
		s := settings{Addr: "127.0.0.1:8080", DB: "plantstore.db", MaxBody: 1 << 20, LogFormat: "text",
			ReadTimeout: 10 * time.Second, FromEnv: map[string]string{}}
		change(&s)
		return s
	}
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		want   settings
		reason string
	}{
		{"none", nil, nil, defaults(func(*settings) {}), ""},
		{"each kind of flag", nil, map[string]string{
			"PLANTSTORE_ADDR":                "127.0.0.1:9999",
			"PLANTSTORE_DB":                  "memory",
			"PLANTSTORE_MAX_BODY":            "4096",
			"PLANTSTORE_LOG_LEVEL":           "warn",
			"PLANTSTORE_LOG_FORMAT":          "json",
			"PLANTSTORE_CONVENTIONAL_STATUS": "true",
			"PLANTSTORE_READ_TIMEOUT":        "3s",
		}, defaults(func(s *settings) {
			s.Addr, s.DB, s.MaxBody, s.LogLevel, s.LogFormat, s.Conventional, s.ReadTimeout =
				"127.0.0.1:9999", "memory", 4096, slog.LevelWarn, "json", true, 3*time.Second
			s.FromEnv = map[string]string{"addr": "PLANTSTORE_ADDR", "db": "PLANTSTORE_DB", "max-body": "PLANTSTORE_MAX_BODY",
				"log-level": "PLANTSTORE_LOG_LEVEL", "log-format": "PLANTSTORE_LOG_FORMAT",
				"conventional-status": "PLANTSTORE_CONVENTIONAL_STATUS", "read-timeout": "PLANTSTORE_READ_TIMEOUT"}
		}), ""},
		{"flags beat variables", []string{"-addr", "127.0.0.1:1", "-max-body", "100", "-log-format", "text"}, map[string]string{
			"PLANTSTORE_ADDR":       "127.0.0.1:9999",
			"PLANTSTORE_MAX_BODY":   "not even a number",
			"PLANTSTORE_LOG_FORMAT": "json",
			"PLANTSTORE_DB":         "memory",
		}, defaults(func(s *settings) {
			s.Addr, s.MaxBody, s.DB = "127.0.0.1:1", 100, "memory"
			s.FromEnv = map[string]string{"db": "PLANTSTORE_DB"}
		}), "a variable of a flag on the command line is not even parsed"},
		{"empty variable", nil, map[string]string{"PLANTSTORE_ADDR": ""}, defaults(func(*settings) {}),
			"an empty variable is an unset one"},
		{"repeatable flag", nil, map[string]string{"PLANTSTORE_WEBHOOK": "http://a.example/h1, http://b.example/h2,"},
			defaults(func(s *settings) {
				s.Webhooks = []string{"http://a.example/h1", "http://b.example/h2"}
				s.FromEnv = map[string]string{"webhook": "PLANTSTORE_WEBHOOK"}
			}), "a comma-separated list, spaces and empty items dropped"},
		{"repeatable flag on the command line", []string{"-webhook", "http://c.example/h"},
			map[string]string{"PLANTSTORE_WEBHOOK": "http://a.example/h1,http://b.example/h2"},
			defaults(func(s *settings) { s.Webhooks = []string{"http://c.example/h"} }),
			"the command line's list replaces the variable's, it does not add to it"},
		{"version and probe are not read from the environment", nil, map[string]string{envName("version"): "true", envName("probe"): "/readyz"},
			defaults(func(*settings) {}), "neither may turn a server into something else"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := parseFlags(tt.args, func(k string) string { return tt.env[k] })
			if err != nil {
				t.Fatalf("parseFlags = %v", err)
			}
			got := settings{Addr: o.addr, DB: o.db, MaxBody: o.maxBody, LogLevel: o.logLevel, LogFormat: o.logFormat,
				Conventional: o.conventional, ReadTimeout: o.readTimeout, Webhooks: o.webhooks, FromEnv: o.fromEnv}
			if o.version || o.probe != "" {
				t.Errorf("-version %v, -probe %q: want neither set", o.version, o.probe)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("options mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEnvironmentReachesFlagsAddedLater checks that the environment is
// applied to whatever flags a FlagSet has, not to a list of known ones.
func TestEnvironmentReachesFlagsAddedLater(t *testing.T) {
	t.Parallel()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	metricsAddr := fs.String("metrics-addr", "", "")
	var peers listFlag
	fs.Var(&peers, "peer", "")
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{envName("metrics-addr"): "127.0.0.1:9090", envName("peer"): "a,b"}
	fromEnv, err := applyEnv(fs, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if *metricsAddr != "127.0.0.1:9090" {
		t.Errorf("-metrics-addr = %q, want its variable's 127.0.0.1:9090", *metricsAddr)
	}
	if diff := cmp.Diff(listFlag{"a", "b"}, peers); diff != "" {
		t.Errorf("-peer mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"metrics-addr": envName("metrics-addr"), "peer": envName("peer")}, fromEnv); diff != "" {
		t.Errorf("flags set from the environment (-want +got):\n%s", diff)
	}
}

// TestHelp checks that -h prints the usage, which mentions every flag and
// its variable, and -version the Go version (the rest is
// TestProcessExits'), on stdout, and that a command's -h prints the
// command's usage on stderr; none does anything else.
func TestHelp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	want := []string{"Usage: plantstore", "PLANTSTORE_TOKENS", "PLANTSTORE_WEBHOOK_SECRET", "Examples:"}
	o, _ := parseFlags(nil, func(string) string { return "" })
	o.fs.VisitAll(func(f *flag.Flag) {
		want = append(want, "-"+f.Name)
		if !noEnv[f.Name] {
			want = append(want, envName(f.Name))
		}
	})
	for _, tt := range []struct {
		args     []string
		want     []string // in the usage
		onStderr bool
	}{
		{[]string{"-h"}, want, false},
		{[]string{"-version"}, []string{runtime.Version()}, false},
		{[]string{"backup", "-h", "-db", filepath.Join(dir, "plants.db")}, []string{"Usage: plantstore backup"}, true},
		{[]string{"restore", "-h", "-db", filepath.Join(dir, "new.db")}, []string{"Usage: plantstore restore"}, true},
	} {
		var stdout, stderr testkit.Buffer
		if err := run(context.Background(), tt.args, func(string) string { return "" }, &stdout, &stderr); err != nil {
			t.Errorf("run %v = %v, want nil", tt.args, err)
		}
		usage, other := stdout.String(), stderr.String()
		if tt.onStderr {
			usage, other = other, usage
		}
		for _, w := range tt.want {
			if !strings.Contains(usage, w) {
				t.Errorf("run %v does not mention %s:\n%s", tt.args, w, usage)
			}
		}
		if other != "" {
			t.Errorf("run %v wrote %q besides its usage", tt.args, other)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Errorf("-h left %v behind", entries)
	}
}

// jsonLines parses every line of logs as a JSON object.
func jsonLines(t *testing.T, logs string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSuffix(logs, "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q is not a JSON object: %v", l, err)
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := m[k]; !ok {
				t.Errorf("log line %q has no %q", l, k)
			}
		}
		lines = append(lines, m)
	}
	return lines
}

// TestVariablesAreSpelledOneWay checks that every PLANTSTORE_ variable
// the commands, examples, scripts and documents mention is one the binary
// reads, or one of the tests' and scripts' PLANTSTORE_TEST_ ones, which it
// ignores by that prefix, so that no program spells one differently.
func TestVariablesAreSpelledOneWay(t *testing.T) {
	t.Parallel()
	known := map[string]bool{}
	for _, v := range secretVariables {
		known[v] = true
	}
	o, _ := parseFlags(nil, func(string) string { return "" })
	o.fs.VisitAll(func(f *flag.Flag) {
		if !noEnv[f.Name] {
			known[envName(f.Name)] = true
		}
	})
	variable := regexp.MustCompile(`PLANTSTORE_[A-Z0-9_]*[A-Z0-9]`)
	checked := 0
	err := filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// ../../fleet is deploy/fleet.sh's state, with its binary,
			// when an operator ran it at the repository's root.
			if name := d.Name(); name == ".git" || name == "testdata" || path == "../../fleet" {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".sh", ".service", "":
		default:
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		for _, v := range variable.FindAllString(string(b), -1) {
			if !known[v] && v != envPrefix+"TEST" && !strings.HasPrefix(v, envPrefix+"TEST_") {
				t.Errorf("%s mentions %s, which nothing reads", path, v)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 20 {
		t.Fatalf("checked %d files, want the whole repository", checked)
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

package main

import (
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDocFlagsTable checks that docs/operations.md's table of flags has a
// row for every flag the binary defines, and none for a flag it does not.
func TestDocFlagsTable(t *testing.T) {
	b, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	start := strings.Index(doc, "## The binary")
	end := strings.Index(doc[start+1:], "\n## ")
	if start < 0 || end < 0 {
		t.Fatal(`docs/operations.md has no "## The binary" section`)
	}
	rows := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `-([a-z0-9-]+)").FindAllStringSubmatch(doc[start:start+1+end], -1) {
		rows[m[1]] = true
	}
	o, _ := parseFlags(nil, func(string) string { return "" })
	o.fs.VisitAll(func(f *flag.Flag) {
		if !rows[f.Name] {
			t.Errorf("docs/operations.md's table of flags has no row for -%s", f.Name)
		}
		delete(rows, f.Name)
	})
	delete(rows, "h")
	for name := range rows {
		t.Errorf("docs/operations.md's table of flags has a row for -%s, which the binary does not define", name)
	}
}

// TestTracingSettings checks when tracing is on and where -otlp-endpoint
// sends spans.
func TestTracingSettings(t *testing.T) {
	for _, tt := range []struct {
		flag string
		env  map[string]string
		want bool
	}{
		{"", nil, false},
		{"http://c:4318", nil, true},
		{"", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, true},
		{"", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, true},
		{"", map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "a=b"}, false},
		{"http://c:4318", map[string]string{"OTEL_SDK_DISABLED": "true"}, false},
		{"http://c:4318", map[string]string{"OTEL_TRACES_EXPORTER": "none"}, false},
	} {
		o := &options{otlpEndpoint: tt.flag}
		if got := tracingOn(o, func(k string) string { return tt.env[k] }); got != tt.want {
			t.Errorf("tracingOn(-otlp-endpoint %q, %v) = %v, want %v", tt.flag, tt.env, got, tt.want)
		}
	}
	for base, want := range map[string]string{
		"http://c:4318":          "http://c:4318/v1/traces",
		"https://c/otlp/":        "https://c/otlp/v1/traces",
		"http://u:p@c:4318/base": "http://u:p@c:4318/base/v1/traces",
	} {
		if got := tracesURL(base); got != want {
			t.Errorf("tracesURL(%q) = %q, want %q", base, got, want)
		}
	}
}

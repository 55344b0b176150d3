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

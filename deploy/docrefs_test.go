package deploy_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	// docRef is a reference to a document of the repository, and to one of
	// its sections: docs/operations.md#systemd.
	docRef = regexp.MustCompile(`\b(README\.md|docs/[A-Za-z0-9_.-]+\.md)(#[A-Za-z0-9_-]+)?`)
	// namedSection is a reference to a section by its title: see "Run in
	// production" in the README.
	namedSection = regexp.MustCompile(`"([^"]+)" in (?:the )?(README|docs/[A-Za-z0-9_.-]+\.md)`)
)

// TestDocReferences checks that every document, and every section of one,
// that the files of deploy/ and the Dockerfile send their reader to exists:
// a section is a heading of the document, named as GitHub's anchors name
// it.
func TestDocReferences(t *testing.T) {
	t.Parallel()
	files := []string{"../Dockerfile"}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".go") {
			return err
		}
		files = append(files, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range docRef.FindAllStringSubmatch(string(b), -1) {
			checked++
			anchors, err := headingAnchors("../" + m[1])
			if err != nil {
				t.Errorf("%s refers to %s: %v", file, m[0], err)
				continue
			}
			if m[2] != "" && !anchors[m[2][1:]] {
				t.Errorf("%s refers to %s, but %s has no such heading", file, m[0], m[1])
			}
		}
		for _, m := range namedSection.FindAllStringSubmatch(string(b), -1) {
			checked++
			doc := m[2]
			if doc == "README" {
				doc = "README.md"
			}
			anchors, err := headingAnchors("../" + doc)
			if err != nil || !anchors[anchor(m[1])] {
				t.Errorf("%s refers to the section %q of %s, which has none of that name", file, m[1], doc)
			}
		}
	}
	if checked == 0 {
		t.Fatal("found no reference to a document: the patterns no longer match how files refer to them")
	}
}

// headingAnchors returns the anchors of the headings of the Markdown file
// path, fenced code left out.
func headingAnchors(path string) (map[string]bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	anchors := map[string]bool{}
	fenced := false
	for line := range strings.Lines(string(b)) {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if title, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " "); !fenced && ok && strings.HasPrefix(line, "#") {
			anchors[anchor(strings.TrimSpace(title))] = true
		}
	}
	return anchors, nil
}

// anchor returns the anchor GitHub gives a heading: in lower case, without
// punctuation, spaces turned into hyphens.
func anchor(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

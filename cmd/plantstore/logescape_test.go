package main

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestLogsEscapeWhatDoesNotPrint sends requests whose paths hold
// characters that do not print, a right-to-left override among them, and
// checks that neither log format writes any of them as it is, and that
// each JSON line still decodes to the path that was sent.
func TestLogsEscapeWhatDoesNotPrint(t *testing.T) {
	t.Parallel()
	paths := []string{
		"/plants/\u202eevil",       // right-to-left override
		"/plants/a\u200bb\u2066c",  // zero width space, left-to-right isolate
		"/plants/\u0085x\u00a0y",   // a C1 control (next line), no-break space
		"/plants/\U000e0041\u2028", // a tag character (outside the BMP), line separator
	}
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			url, _, stderr, stop := startRun(t, []string{"-addr", "127.0.0.1:0", "-db", "memory", "-log-format", format},
				map[string]string{"PLANTSTORE_TOKENS": procToken})
			for _, p := range paths {
				req, err := http.NewRequest("GET", url+escapePath(p), nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+procToken)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			stop()
			logs := stderr.String()
			for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
				for _, r := range line {
					if r >= utf8.RuneSelf && !strconv.IsPrint(r) {
						t.Errorf("a %s log line holds %U as it is: %s", format, r, line)
					}
				}
			}
			if format != "json" {
				return
			}
			seen := map[string]bool{}
			for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
				var rec struct{ Path string }
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatalf("a JSON log line does not decode: %v: %s", err, line)
				}
				seen[rec.Path] = true
			}
			for _, p := range paths {
				if !seen[p] {
					t.Errorf("no JSON log line decodes to the path %q:\n%s", p, logs)
				}
			}
		})
	}
}

// escapePath %-escapes every byte of p but / and ASCII letters.
func escapePath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '/' || 'a' <= c && c <= 'z' {
			b.WriteByte(c)
		} else {
			b.WriteString("%" + strings.ToUpper(string("0123456789abcdef"[c>>4])+string("0123456789abcdef"[c&15])))
		}
	}
	return b.String()
}

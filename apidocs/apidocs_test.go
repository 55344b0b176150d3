package apidocs_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/apidocs"
	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/memstore"
)

// newServer serves the API with the reference page, as a host that opts in
// does, behind a token the page does not need.
func newServer(t *testing.T, opts ...httpapi.Option) *httptest.Server {
	t.Helper()
	opts = append([]httpapi.Option{httpapi.WithTokens("s3cret"), httpapi.WithLogger(slog.New(slog.DiscardHandler)),
		httpapi.WithDocs(apidocs.Handler())}, opts...)
	srv := httptest.NewServer(httpapi.New(plantstore.New(memstore.New()), opts...))
	t.Cleanup(srv.Close)
	return srv
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

// get sends method url with the headers given (name, value, ...) and no
// token, and returns the answer as sent: no transparent decompression.
func get(t *testing.T, method, url string, headers ...string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", "identity")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return answer{resp.StatusCode, resp.Header, b}
}

// pageRefs finds what the page loads: src and href values under docs/.
var pageRefs = regexp.MustCompile(`(?:src|href)="docs/([^"]+)"`)

// TestPage checks GET and HEAD /docs through httpapi without a token: the
// page, with the policy and no-cache, and the files it loads, each with its
// Content-Type, immutable, under a name that changes with its content.
func TestPage(t *testing.T) {
	srv := newServer(t)
	page := get(t, "GET", srv.URL+"/docs")
	if page.status != 200 {
		t.Fatalf("GET /docs without a token = %d %s, want 200", page.status, page.body)
	}
	wantHeaders(t, "/docs", page.header, map[string]string{
		"Content-Security-Policy": apidocs.ContentSecurityPolicy,
		"Content-Type":            "text/html; charset=utf-8",
		"Cache-Control":           "no-cache",
		"X-Content-Type-Options":  "nosniff",
	})
	if page.header.Get("Etag") == "" {
		t.Error("GET /docs has no ETag")
	}
	if head := get(t, "HEAD", srv.URL+"/docs"); head.status != 200 || len(head.body) != 0 ||
		head.header.Get("Content-Length") != page.header.Get("Content-Length") || head.header.Get("Content-Security-Policy") == "" {
		t.Errorf("HEAD /docs = %d, %d bytes, Content-Length %q, CSP %q; want 200, no body, GET's length and the policy",
			head.status, len(head.body), head.header.Get("Content-Length"), head.header.Get("Content-Security-Policy"))
	}
	if r := get(t, "GET", srv.URL+"/docs", "If-None-Match", page.header.Get("Etag")); r.status != 304 {
		t.Errorf("GET /docs with If-None-Match its ETag = %d, want 304", r.status)
	}

	wantTypes := map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
	refs := pageRefs.FindAllStringSubmatch(string(page.body), -1)
	if len(refs) != 3 {
		t.Fatalf("the page loads %d files under docs/, want 3 (Swagger UI's script and stylesheet, init.js):\n%s", len(refs), page.body)
	}
	for _, ref := range refs {
		name := ref[1]
		ext := name[strings.LastIndexByte(name, '.'):]
		path := "/docs/" + name
		r := get(t, "GET", srv.URL+path)
		if r.status != 200 || len(r.body) == 0 {
			t.Errorf("GET %s = %d, %d bytes; want 200 and the file", path, r.status, len(r.body))
			continue
		}
		wantHeaders(t, path, r.header, map[string]string{
			"Content-Security-Policy": apidocs.ContentSecurityPolicy,
			"Content-Type":            wantTypes[ext],
			"Cache-Control":           "public, max-age=31536000, immutable",
			"X-Content-Type-Options":  "nosniff",
		})
		sum := sha256.Sum256(r.body)
		if !strings.Contains(name, "."+hex.EncodeToString(sum[:6])+".") {
			t.Errorf("%s is not named by its content's hash (sha256 %x…)", path, sum[:6])
		}
		z := get(t, "GET", srv.URL+path, "Accept-Encoding", "br;q=1, gzip;q=0.5")
		if len(r.body) < 1<<10 {
			// Too small to compress: init.js.
			if z.header.Get("Content-Encoding") != "" || !bytes.Equal(z.body, r.body) {
				t.Errorf("GET %s of %d bytes accepting gzip: Content-Encoding %q, want the file as it is", path, len(r.body), z.header.Get("Content-Encoding"))
			}
			continue
		}
		if v := r.header.Values("Vary"); len(v) != 1 || v[0] != "Accept-Encoding" {
			t.Errorf("GET %s: Vary = %q, want Accept-Encoding", path, v)
		}
		if z.header.Get("Content-Encoding") != "gzip" || z.header.Get("Etag") == r.header.Get("Etag") {
			t.Errorf("GET %s accepting gzip: Content-Encoding %q, ETag %q (identity's %q); want gzip and an ETag of its own",
				path, z.header.Get("Content-Encoding"), z.header.Get("Etag"), r.header.Get("Etag"))
			continue
		}
		zr, err := gzip.NewReader(bytes.NewReader(z.body))
		if err != nil {
			t.Fatalf("GET %s gzip: %v", path, err)
		}
		if plain, err := io.ReadAll(zr); err != nil || !bytes.Equal(plain, r.body) {
			t.Errorf("GET %s gzip decompresses to %d bytes (err %v), want the %d of the file", path, len(plain), err, len(r.body))
		}
		if len(r.body) > 100<<10 && len(z.body) > len(r.body)/2 {
			t.Errorf("GET %s gzip is %d bytes of %d", path, len(z.body), len(r.body))
		}
	}
}

func wantHeaders(t *testing.T, path string, got http.Header, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if g := got.Values(k); len(g) != 1 || g[0] != v {
			t.Errorf("%s: %s = %q, want %q", path, k, g, v)
		}
	}
}

// TestNotServed checks what the handler does not serve: other paths,
// other names under /docs/ among them, and other methods. How httpapi
// answers the handler's 404 (its Error 404), other methods, and a handler
// without WithDocs, is httpapi's TestHooks and TestMetricsAndDocsOptional.
func TestNotServed(t *testing.T) {
	srv := httptest.NewServer(apidocs.Handler())
	defer srv.Close()
	for _, path := range []string{"/docs/nope.js", "/docs/swagger-ui-bundle.js", "/docs/VERSION", "/docs/index.html",
		"/", "/docs/", "/openapi.json", "/api/docs"} {
		if r := get(t, "GET", srv.URL+path); r.status != 404 || r.header.Get("Content-Security-Policy") == "" {
			t.Errorf("GET %s = %d, CSP %q; want 404 with the policy", path, r.status, r.header.Get("Content-Security-Policy"))
		}
	}
	if r := get(t, "DELETE", srv.URL+"/docs"); r.status != 405 || r.header.Get("Allow") != "GET, HEAD" {
		t.Errorf("DELETE /docs = %d, Allow %q; want 405 and GET, HEAD", r.status, r.header.Get("Allow"))
	}
}

// TestPolicyIsStrict checks that the policy allows no inline script or
// style, no eval, and nothing from another origin, and that the page keeps
// to it: no inline script, style or event handler.
func TestPolicyIsStrict(t *testing.T) {
	for _, bad := range []string{"unsafe-", "*", "http:", "https:", "blob:"} {
		if strings.Contains(apidocs.ContentSecurityPolicy, bad) {
			t.Errorf("the policy allows %s: %s", bad, apidocs.ContentSecurityPolicy)
		}
	}
	html, err := os.ReadFile("index.html")
	if err != nil {
		t.Fatal(err)
	}
	scripts := regexp.MustCompile(`(?s)<script([^>]*)>(.*?)</script>`).FindAllStringSubmatch(string(html), -1)
	if len(scripts) == 0 {
		t.Fatal("index.html has no script")
	}
	for _, s := range scripts {
		if !strings.Contains(s[1], `src="docs/`) || strings.TrimSpace(s[2]) != "" {
			t.Errorf("index.html has an inline script, which the policy blocks: %s", s[0])
		}
	}
	for _, inline := range []*regexp.Regexp{regexp.MustCompile(`<style`), regexp.MustCompile(`\sstyle=`), regexp.MustCompile(`\son[a-z]+=`)} {
		if m := inline.Find(html); m != nil {
			t.Errorf("index.html has %q, which the policy blocks", m)
		}
	}
}

// TestFilesAreThePinnedVersion checks Swagger UI's files against the
// sha256 sums scripts/update-apidocs.sh recorded in swagger-ui/VERSION,
// and that docs/dependencies.md names the version.
func TestFilesAreThePinnedVersion(t *testing.T) {
	index, err := os.ReadFile("swagger-ui/VERSION")
	if err != nil {
		t.Fatal(err)
	}
	version, sums := "", 0
	for line := range strings.Lines(string(index)) {
		line = strings.TrimSuffix(line, "\n")
		if v, ok := strings.CutPrefix(line, "version "); ok {
			version = v
			continue
		}
		sum, name, ok := strings.Cut(line, "  ")
		if !ok || len(sum) != 64 {
			continue
		}
		sums++
		b, err := os.ReadFile("swagger-ui/" + name)
		if err != nil {
			t.Error(err)
			continue
		}
		if got := sha256.Sum256(b); hex.EncodeToString(got[:]) != sum {
			t.Errorf("swagger-ui/%s has sha256 %x, VERSION records %s: run scripts/update-apidocs.sh", name, got, sum)
		}
	}
	if version == "" || sums < 5 {
		t.Fatalf("swagger-ui/VERSION names version %q and %d files; want a version and the 5 files", version, sums)
	}
	deps, err := os.ReadFile("../docs/dependencies.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(deps), "`swagger-ui-dist` (npm) | "+version+" |") {
		t.Errorf("docs/dependencies.md does not give swagger-ui-dist's version as %s", version)
	}
}

// TestOnlyWhoOptsInLinksThePage checks that httpapi and a host that does
// not ask for the page, examples/embed, do not link this package and its
// 1.9 MB of files.
func TestOnlyWhoOptsInLinksThePage(t *testing.T) {
	for _, pkg := range []string{"httpapi", "examples/embed"} {
		out, err := exec.Command("go", "list", "-deps", "../"+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps ./%s: %v\n%s", pkg, err, out)
		}
		if !strings.Contains(string(out), "github.com/plantstore/plantstore/httpapi\n") {
			t.Fatalf("go list -deps ./%s does not list httpapi itself:\n%s", pkg, out)
		}
		if strings.Contains(string(out), "github.com/plantstore/plantstore/apidocs\n") {
			t.Errorf("./%s links apidocs; only a host that opts in should", pkg)
		}
	}
}

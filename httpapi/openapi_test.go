package httpapi_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/memstore"
)

// servedDocument returns the document h serves at path.
func servedDocument(t *testing.T, h http.Handler, path string) []byte {
	t.Helper()
	rec := serve(h, httptest.NewRequest("GET", path, nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s = %d %s", path, rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

// TestWithBaseURL checks the document GET /openapi.json serves, without a
// token: OpenAPI() as it is by default, else with WithBaseURL's server,
// or WithPrefix's prefix unless WithBaseURL names another server. That it
// is valid, validatingTransport's router does.
func TestWithBaseURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, base, prefix, want string
	}{
		{name: "default", base: "", want: "/"},
		{name: "root", base: "/", want: "/"},
		{name: "prefix", base: "/api", want: "/api"},
		{name: "prefix with a slash", base: "/api/v1/", want: "/api/v1"},
		{name: "absolute", base: "https://plants.example.com/api", want: "https://plants.example.com/api"},
		{name: "needs escaping", base: `/a"b<c>`, want: `/a"b<c>`},
		{name: "WithPrefix", prefix: "/api/", want: "/api"},
		{name: "WithPrefix and absolute", prefix: "/api", base: "https://plants.example.com/v1", want: "https://plants.example.com/v1"},
	}
	var want map[string]any
	if err := json.Unmarshal(httpapi.OpenAPI(), &want); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := []httpapi.Option{discardLog}
			if tt.base != "" {
				opts = append(opts, httpapi.WithBaseURL(tt.base))
			}
			if tt.prefix != "" {
				opts = append(opts, httpapi.WithPrefix(tt.prefix))
			}
			served := servedDocument(t, httpapi.New(plantstore.New(memstore.New()), opts...), path.Join("/", tt.prefix, "openapi.json"))
			if tt.base == "" && tt.prefix == "" && !bytes.Equal(served, httpapi.OpenAPI()) {
				t.Error("served document differs from OpenAPI()")
			}
			var got map[string]any
			if err := json.Unmarshal(served, &got); err != nil {
				t.Fatalf("the served document does not parse: %v", err)
			}
			want["servers"] = []any{map[string]any{"url": tt.want}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("served document mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBaseURLUnderStripPrefix reads the document served under a prefix the
// way a client generator does, and checks every answer against it at the
// URLs it names, and that a list's next link keeps the prefix.
func TestBaseURLUnderStripPrefix(t *testing.T) {
	t.Parallel()
	ps := plantstore.New(memstore.New())
	mux := http.NewServeMux()
	mux.Handle("/api/", http.StripPrefix("/api", httpapi.New(ps, httpapi.WithTokens(testToken), httpapi.WithBaseURL("/api"))))

	doc, err := loadStrict(servedDocument(t, mux, "/api/openapi.json"))
	if err != nil {
		t.Fatalf("the served document is not valid: %v", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := router.FindRoute(httptest.NewRequest("GET", "/plants", nil)); err == nil {
		t.Error("the document served under /api routes /plants, which the mux does not serve")
	}
	e := serveEnv(t, mux, ps)
	e.client.Transport = validatingTransport{t: t, router: router}
	e.do("POST", "/api/plants", nil, `{"id":1,"name":"x"}`).wantOK(t, "create")
	e.do("GET", "/api/plants/1", nil, ``).wantOK(t, "read")
	e.do("GET", "/api/plants/2", nil, ``).wantError(t, 400, 404)
	e.do("POST", "/api/plants", noToken, `{"id":2,"name":"x"}`).wantError(t, 400, 401)
	// The next-page link resolves under the prefix.
	e.do("POST", "/api/plants", nil, `{"id":2,"name":"y"}`).wantOK(t, "create")
	r := e.do("GET", "/api/plants?limit=1", nil, ``).wantOK(t, "list")
	link := strings.TrimSuffix(strings.TrimPrefix(r.header.Get("Link"), "<"), `>; rel="next"`)
	base, _ := url.Parse(e.url + "/api/plants?limit=1")
	next, err := base.Parse(link)
	if err != nil || next.Path != "/api/plants" || next.Query().Get("after") != "1" {
		t.Errorf("Link %q resolves to %v (%v), want /api/plants?limit=1&after=1", r.header.Get("Link"), next, err)
	}
}

// lintVersion is the oldest Node.js the pinned validators run on.
var lintVersion = [2]int{20, 19}

// lintTools installs the validators pinned in testdata/openapi-lint into
// the user's cache directory, once for each version of the pins, and
// returns where. It skips the test when npm or a recent enough Node.js is
// missing, or when the install fails (the registry is unreachable), unless
// PLANTSTORE_TEST_REQUIRE_OPENAPI_LINT is set, as CI sets it.
func lintTools(t *testing.T) string {
	t.Helper()
	required := os.Getenv("PLANTSTORE_TEST_REQUIRE_OPENAPI_LINT") != ""
	if testing.Short() && !required {
		t.Skip("runs swagger-parser and Redocly under node; skipped in -short mode")
	}
	skip := func(format string, args ...any) {
		t.Helper()
		if required {
			t.Fatalf(format, args...)
		}
		t.Skipf(format+"; the document is checked by kin-openapi only", args...)
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		skip("npm is not installed, so swagger-parser and Redocly cannot be run")
	}
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		skip("node does not run: %v", err)
	}
	if v := strings.TrimSpace(string(out)); !nodeAtLeast(v, lintVersion) {
		skip("node %s is older than the v%d.%d the pinned validators need", v, lintVersion[0], lintVersion[1])
	}

	src := filepath.Join("testdata", "openapi-lint")
	files := []string{"package.json", "package-lock.json", "validate.cjs"}
	sum := sha256.New()
	contents := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		contents[f] = b
		sum.Write(b)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		skip("no cache directory to install the validators in: %v", err)
	}
	dir := filepath.Join(cache, "plantstore", "openapi-lint-"+hex.EncodeToString(sum.Sum(nil))[:16])
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil {
		return dir
	}

	// Install next to dir and rename, so that a test process running at
	// the same time never sees half an install.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		skip("cannot create the cache directory: %v", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), "install-")
	if err != nil {
		skip("cannot create the cache directory: %v", err)
	}
	defer os.RemoveAll(tmp)
	for f, b := range contents {
		if err := os.WriteFile(filepath.Join(tmp, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error")
	cmd.Dir = tmp
	if out, err := cmd.CombinedOutput(); err != nil {
		skip("npm ci of testdata/openapi-lint failed: %v\n%s", err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "node_modules")); serr != nil {
			t.Fatalf("install the validators: %v", err)
		}
		// Another test process installed them first.
	}
	return dir
}

// nodeAtLeast reports whether the Node.js version v ("v20.19.2") is at
// least min.
func nodeAtLeast(v string, min [2]int) bool {
	var major, minor int
	if _, err := fmt.Sscanf(strings.TrimPrefix(v, "v"), "%d.%d", &major, &minor); err != nil {
		return false
	}
	return major > min[0] || major == min[0] && minor >= min[1]
}

// TestOpenAPILint checks the document with two validators other than
// kin-openapi: @apidevtools/swagger-parser, and Redocly's recommended
// rules, where a warning fails too. Each tool runs once over every
// document: starting Node.js is most of the time they take.
func TestOpenAPILint(t *testing.T) {
	t.Parallel()
	tools := lintTools(t)
	h := newHandler(nil, httpapi.WithBaseURL("https://api.plantstore.dev/v1/"))
	tests := []struct {
		name      string
		doc       []byte
		wantValid bool
	}{
		{name: "the document", doc: httpapi.OpenAPI(), wantValid: true},
		{name: "served with a base URL", doc: servedDocument(t, h, "/openapi.json"), wantValid: true},
		{name: "license without identifier", wantValid: false,
			doc: bytes.Replace(httpapi.OpenAPI(), []byte(`"identifier": "MIT"`), []byte(`"x-identifier": "MIT"`), 1)},
		{name: "a dangling reference", wantValid: false,
			doc: bytes.Replace(httpapi.OpenAPI(), []byte(`#/components/schemas/Plant"`), []byte(`#/components/schemas/Plantt"`), 1)},
	}
	dir := t.TempDir()
	var paths []string
	for i, tt := range tests {
		if !tt.wantValid && bytes.Equal(tt.doc, httpapi.OpenAPI()) {
			t.Fatalf("%s: the broken document is not broken: the replacement did not match", tt.name)
		}
		path := filepath.Join(dir, strconv.Itoa(i)+".json")
		if err := os.WriteFile(path, tt.doc, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	parsed := swaggerParser(ctx, t, tools, paths)
	linted := redocly(ctx, t, tools, paths)
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if valid := parsed[i] == ""; valid != tt.wantValid {
				t.Errorf("swagger-parser: valid = %v, want %v: %s", valid, tt.wantValid, parsed[i])
			}
			if valid := len(linted[i]) == 0; valid != tt.wantValid {
				t.Errorf("redocly lint --extends recommended: valid = %v, want %v; problems:\n%s",
					valid, tt.wantValid, strings.Join(linted[i], "\n"))
			}
		})
	}
}

// lintReports runs cmd, a validator of n documents, and decodes the
// reports it prints, one per document, in order. It may exit with a
// failure for an invalid document.
func lintReports[T any](t *testing.T, cmd *exec.Cmd, n int) []T {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if _, ok := errors.AsType[*exec.ExitError](err); err != nil && !ok {
		t.Fatalf("run %s: %v", cmd, err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	reports := make([]T, n)
	for i := range reports {
		if jerr := dec.Decode(&reports[i]); jerr != nil {
			t.Fatalf("the report of %s does not parse (%v; exit: %v):\n%s\n%s", cmd, jerr, err, out, stderr.Bytes())
		}
	}
	return reports
}

// swaggerParser validates the documents at paths with swagger-parser and
// returns, for each, why it is invalid, or "".
func swaggerParser(ctx context.Context, t *testing.T, tools string, paths []string) []string {
	t.Helper()
	type report struct {
		Valid   bool
		Message string
	}
	cmd := exec.CommandContext(ctx, "node", append([]string{filepath.Join(tools, "validate.cjs")}, paths...)...)
	var why []string
	for _, r := range lintReports[report](t, cmd, len(paths)) {
		if !r.Valid && r.Message == "" {
			r.Message = "invalid, without a reason"
		}
		why = append(why, r.Message)
	}
	return why
}

// redocly lints the documents at paths with Redocly's recommended rules
// and returns the problems of each, warnings included, one line each.
func redocly(ctx context.Context, t *testing.T, tools string, paths []string) [][]string {
	t.Helper()
	type report struct {
		Totals   struct{ Errors, Warnings int }
		Problems []struct {
			RuleID            string `json:"ruleId"`
			Severity, Message string
			Location          []struct{ Pointer string }
		}
	}
	args := append([]string{"lint", "--extends", "recommended", "--format", "json"}, paths...)
	cmd := exec.CommandContext(ctx, filepath.Join(tools, "node_modules", ".bin", "redocly"), args...)
	cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true", "NO_COLOR=1")
	var all [][]string
	for _, r := range lintReports[report](t, cmd, len(paths)) {
		var problems []string
		for _, p := range r.Problems {
			where := ""
			if len(p.Location) > 0 {
				where = p.Location[0].Pointer
			}
			problems = append(problems, p.Severity+" "+p.RuleID+" at "+where+": "+p.Message)
		}
		if len(problems) == 0 && r.Totals.Errors+r.Totals.Warnings > 0 {
			t.Fatalf("redocly counts %d errors and %d warnings but lists none", r.Totals.Errors, r.Totals.Warnings)
		}
		all = append(all, problems)
	}
	return all
}

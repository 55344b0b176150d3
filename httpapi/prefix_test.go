package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/memstore"
)

// mounted is a handler in a host's mux under /api/, with the access lines
// it wrote and the Served and Routed hooks' reports, made as it serves in
// process.
type mounted struct {
	mux    *http.ServeMux
	logs   bytes.Buffer
	served []httpapi.Served
	routed []httpapi.Route
}

// mount returns a handler with opts mounted under /api/: with
// WithPrefix("/api") when prefixed, else inside http.StripPrefix.
func mount(t *testing.T, prefixed bool, opts ...httpapi.Option) *mounted {
	t.Helper()
	m := &mounted{mux: http.NewServeMux()}
	opts = append([]httpapi.Option{
		httpapi.WithTokens(testToken),
		httpapi.WithCORS("https://app.example.com"),
		httpapi.WithDocs(docsHandler),
		httpapi.WithAccessLog(&m.logs, httpapi.AccessLog{Format: httpapi.JSONLog}),
		httpapi.WithHooks(httpapi.Hooks{
			Routed: func(_ context.Context, rt httpapi.Route, _ string) { m.routed = append(m.routed, rt) },
			Served: func(s httpapi.Served) {
				s.Context, s.Start, s.Duration, s.RequestID = nil, time.Time{}, 0, ""
				m.served = append(m.served, s)
			},
		}),
	}, opts...)
	ps := plantstore.New(memstore.New())
	if prefixed {
		m.mux.Handle("/api/", httpapi.New(ps, append(opts, httpapi.WithPrefix("/api"))...))
	} else {
		m.mux.Handle("/api/", http.StripPrefix("/api", httpapi.New(ps, opts...)))
	}
	m.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("host page")) })
	return m
}

// prefixRequests are requests to a handler mounted under /api, each
// route, error and header the prefix could change.
var prefixRequests = []struct {
	method, path, body string
	header             map[string]string
}{
	{"POST", "/api/plants", `{"id":1,"name":"Monstera"}`, nil},
	{"POST", "/api/plants", `{"id":2,"name":"Pilea"}`, nil},
	{"POST", "/api/plants", `{"id":2,"name":"Pilea"}`, nil},
	{"GET", "/api/plants?limit=1", "", nil},
	{"GET", "/api/plants?limit=1&after=1", "", nil},
	{"GET", "/api/plants/1", "", nil},
	{"HEAD", "/api/plants/1", "", nil},
	{"GET", "/api/plants/x", "", nil},
	{"DELETE", "/api/plants/2", "", nil},
	{"GET", "/api/plants/2", "", nil},
	{"GET", "/api/plants", "", map[string]string{"Authorization": "Bearer wrong"}},
	{"GET", "/api/plants", "", noToken},
	{"PUT", "/api/plants", "", nil},
	{"GET", "/api/nowhere", "", nil},
	{"GET", "/api/plants%2F1", "", nil},
	{"DELETE", "/api/plants/%31", "", nil},
	{"GET", "/api/%70lants/1", "", nil},
	{"GET", "/api/healthz", "", nil},
	{"GET", "/api/readyz", "", nil},
	{"GET", "/api/metrics", "", nil},
	{"GET", "/api/openapi.json", "", nil},
	{"GET", "/api/docs", "", nil},
	{"GET", "/api/docs/page.js", "", nil},
	{"GET", "/api/docs/unknown.js", "", nil},
	{"OPTIONS", "/api/plants", "", map[string]string{"Origin": "https://app.example.com",
		"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type"}},
	{"GET", "/api/plants/1", "", map[string]string{"Origin": "https://app.example.com"}},
	{"OPTIONS", "/api/plants/1", "", nil},
	{"GET", "/", "", nil},
	{"GET", "/plants", "", nil},
}

type exchange struct {
	Status int
	Header http.Header
	Body   string
}

func (m *mounted) serve(method, path, body string, header map[string]string) exchange {
	rec := serve(m.mux, newRequest(method, path, header, strings.NewReader(body)))
	h := rec.Header().Clone()
	h.Del("X-Request-Id")
	return exchange{rec.Code, h, rec.Body.String()}
}

// TestPrefixServesAsStripPrefix sends the same requests to a handler
// mounted with WithPrefix and to one inside http.StripPrefix: the answers
// (statuses, headers such as Link, Allow and CORS's, bodies, the OpenAPI
// document's servers and the docs handler's paths) are the same, and so
// are the Routes the hooks report. The access lines differ only in their
// path, which under WithPrefix is the one the client sent.
func TestPrefixServesAsStripPrefix(t *testing.T) {
	t.Parallel()
	strip, prefix := mount(t, false, httpapi.WithBaseURL("/api")), mount(t, true)
	for _, rq := range prefixRequests {
		want := strip.serve(rq.method, rq.path, rq.body, rq.header)
		got := prefix.serve(rq.method, rq.path, rq.body, rq.header)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s %s: WithPrefix answers otherwise than StripPrefix (-strip +prefix):\n%s", rq.method, rq.path, diff)
		}
	}
	if diff := cmp.Diff(strip.routed, prefix.routed); diff != "" {
		t.Errorf("Routed hook's routes differ (-strip +prefix):\n%s", diff)
	}
	if len(prefix.served) != len(strip.served) {
		t.Fatalf("Served %d requests under WithPrefix, %d under StripPrefix", len(prefix.served), len(strip.served))
	}
	for i, s := range prefix.served {
		w := strip.served[i]
		if s.Path != "/api"+w.Path {
			t.Errorf("Served path %q under WithPrefix, want /api%s", s.Path, w.Path)
		}
		w.Path = s.Path
		if diff := cmp.Diff(w, s); diff != "" {
			t.Errorf("Served differs (-strip +prefix):\n%s", diff)
		}
	}
	// lines returns m's access lines but their times and request ids, with
	// pathPrefix before their paths.
	lines := func(m *mounted, pathPrefix string) (out []map[string]any) {
		for line := range strings.Lines(m.logs.String()) {
			var v map[string]any
			if err := json.Unmarshal([]byte(line), &v); err != nil {
				t.Fatalf("access line %q: %v", line, err)
			}
			delete(v, "time")
			delete(v, "duration")
			delete(v, "request_id")
			if p, ok := v["path"].(string); ok {
				v["path"] = pathPrefix + p
			}
			out = append(out, v)
		}
		return out
	}
	pre, str := lines(prefix, ""), lines(strip, "/api")
	if diff := cmp.Diff(str, pre); diff != "" {
		t.Errorf("access lines differ beyond the prefix of their path (-strip +prefix):\n%s", diff)
	}
	if len(pre) == 0 {
		t.Error("no access line written")
	}
}

// TestPrefixRoutes checks what only WithPrefix does: the routes without
// the prefix are not served, and "" and "/" are the root. Which server the
// OpenAPI document names is TestWithBaseURL's. That a
// prefix the router cannot take is refused is
// TestPanicsOnValuesThatCannotWork's.
func TestPrefixRoutes(t *testing.T) {
	t.Parallel()
	ps := plantstore.New(memstore.New())
	h := httpapi.New(ps, httpapi.WithTokens(testToken), httpapi.WithPrefix("/api/"))
	for _, path := range []string{"/plants", "/healthz", "/apiplants", "/api", "/openapi.json"} {
		recorded(serve(h, newRequest("GET", path, nil, nil))).wantError(t, 400, 404)
	}
	for _, p := range []string{"", "/"} {
		root := httpapi.New(ps, httpapi.WithPrefix(p))
		if rec := serve(root, httptest.NewRequest("GET", "/healthz", nil)); rec.Code != http.StatusOK {
			t.Errorf("WithPrefix(%q): GET /healthz = %d, want 200", p, rec.Code)
		}
	}
}

package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/httpapi"
)

// servedLog is a Served hook that keeps what it is told, durations left
// out, as "METHOD route code".
type servedLog struct {
	mu    sync.Mutex
	lines []string
	bad   []httpapi.Served // with a negative duration
}

func (l *servedLog) hooks() httpapi.Hooks {
	return httpapi.Hooks{Served: func(s httpapi.Served) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, s.Method+" "+s.Route.String()+" "+itoa(s.Code))
		if s.Duration < 0 {
			l.bad = append(l.bad, s)
		}
	}}
}

func (l *servedLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	lines := l.lines
	l.lines = nil
	return lines
}

func itoa(code int) string {
	if code == 0 {
		return "ok"
	}
	return strconv.Itoa(code)
}

// TestHooks checks the route, method and code the Served hook is told of
// each request, without and with an access log, which shares its
// recorder. Paths whose %-escapes decode to a route or an id are routed as
// sent, so they reach no plant.
func TestHooks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		method, path string
		headers      hdr
		body         string
		status       int    // 400: the Error of served's code
		served       string // "METHOD route code", as servedLog keeps it
	}{
		{"POST", "/plants", nil, `{"id":1,"name":"Fern"}`, 200, "POST /plants ok"},
		{"POST", "/plants", nil, `{"id":1,"name":"Fern"}`, 400, "POST /plants 409"},
		{"POST", "/plants", hdr{"Authorization": "Bearer wrong"}, `{"id":3}`, 400, "POST /plants 401"},
		{"POST", "/plants", hdr{"Content-Type": "text/plain"}, `{}`, 400, "POST /plants 415"},
		{"DELETE", "/plants%2F1", nil, "", 400, "DELETE other 404"},        // an escaped slash separates no segments
		{"GET", "/plants%2f1", nil, "", 400, "GET other 404"},              // nor in lower case
		{"DELETE", "/plants/%31", nil, "", 400, "DELETE /plants/{id} 400"}, // an escaped digit is no canonical id
		{"GET", "/plants/%2B1", nil, "", 400, "GET /plants/{id} 400"},      // nor an escaped plus sign
		{"GET", "/%70lants", nil, "", 400, "GET other 404"},                // an escaped letter spells no route
		{"GET", "/healthz%2F", nil, "", 400, "GET other 404"},
		{"GET", "/plants/1", nil, "", 200, "GET /plants/{id} ok"},
		{"GET", "/plants/01", nil, "", 400, "GET /plants/{id} 400"}, // a non-canonical id
		{"DELETE", "/plants/1", nil, "", 204, "DELETE /plants/{id} ok"},
		{"DELETE", "/plants/1", nil, "", 400, "DELETE /plants/{id} 404"},
		{"GET", "/plants/1/leaves", nil, "", 400, "GET other 404"},
		{"GET", "/secret-admin-path-x", nil, "", 400, "GET other 404"},
		{"PUT", "/plants", nil, "", 400, "PUT /plants 405"},
		{"BREW", "/plants", nil, "", 400, "BREW /plants 405"}, // a method HTTP does not define
		{"GET", "/healthz", noToken, "", 200, "GET /healthz ok"},
		{"OPTIONS", "/plants/7", nil, "", 204, "OPTIONS /plants/{id} ok"},
	}
	for _, accessLog := range []string{"off", "on"} {
		t.Run("log="+accessLog, func(t *testing.T) {
			var l servedLog
			opts := []httpapi.Option{httpapi.WithHooks(l.hooks())}
			if accessLog == "on" {
				opts = append(opts, httpapi.WithAccessLog(io.Discard, httpapi.AccessLog{}))
			}
			e := newEnv(t, nil, opts...)
			var want []string
			for _, tt := range tests {
				r := e.do(tt.method, tt.path, tt.headers, tt.body)
				if r.status != tt.status {
					t.Fatalf("%s %s = %d %s, want %d", tt.method, tt.path, r.status, r.body, tt.status)
				}
				if tt.status == 400 {
					code, _ := strconv.Atoi(tt.served[strings.LastIndex(tt.served, " ")+1:])
					r.wantError(t, 400, code)
				}
				want = append(want, tt.served)
			}
			if diff := cmp.Diff(want, l.take()); diff != "" {
				t.Errorf("requests served (-want +got):\n%s", diff)
			}
			if len(l.bad) > 0 {
				t.Errorf("negative durations: %v", l.bad)
			}
		})
	}
}

// TestRoutes checks the routes and methods a hook may be told of, and
// which routes machines poll: the probes and the metrics, and no route of
// the API itself.
func TestRoutes(t *testing.T) {
	t.Parallel()
	type route struct {
		Methods []string
		Polled  bool
	}
	got := map[string]route{}
	for _, r := range httpapi.Routes() {
		got[r.String()] = route{r.Methods(), r.Polled()}
	}
	want := map[string]route{
		"other":         {},
		"/plants":       {Methods: []string{"POST", "GET"}},
		"/plants/{id}":  {Methods: []string{"GET", "DELETE"}},
		"/openapi.json": {Methods: []string{"GET"}},
		"/healthz":      {Methods: []string{"GET"}, Polled: true},
		"/readyz":       {Methods: []string{"GET"}, Polled: true},
		"/metrics":      {Methods: []string{"GET"}, Polled: true},
		"/docs":         {Methods: []string{"GET"}},
		"/docs/{name}":  {Methods: []string{"GET"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Routes() mismatch (-want +got):\n%s", diff)
	}
}

// TestMetricsRoute checks GET /metrics: error 404 without a metrics
// handler; with one, behind the token unless public, GET and HEAD only,
// and through the request ids (validatingTransport's check) and the hooks
// like any route.
func TestMetricsRoute(t *testing.T) {
	t.Parallel()
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		io.WriteString(w, "plantstore_up 1\n")
	})
	t.Run("none", func(t *testing.T) {
		newEnv(t, nil).do("GET", "/metrics", nil, "").wantError(t, 400, 404)
	})
	t.Run("behind the token", func(t *testing.T) {
		var l servedLog
		e := newEnv(t, nil, httpapi.WithMetricsHandler(metrics), httpapi.WithHooks(l.hooks()))
		e.do("GET", "/metrics", noToken, "").wantError(t, 400, 401)
		r := e.do("GET", "/metrics", nil, "")
		if r.status != 200 || string(r.body) != "plantstore_up 1\n" {
			t.Errorf("GET /metrics with the token = %d %q, want the metrics", r.status, r.body)
		}
		e.do("HEAD", "/metrics", nil, "").wantOK(t, "HEAD /metrics")
		e.do("POST", "/metrics", nil, "").wantError(t, 400, 405)
		e.do("DELETE", "/metrics", nil, "").wantError(t, 400, 405)
		want := []string{"GET /metrics 401", "GET /metrics ok", "HEAD /metrics ok", "POST /metrics 405", "DELETE /metrics 405"}
		if diff := cmp.Diff(want, l.take()); diff != "" {
			t.Errorf("requests served (-want +got):\n%s", diff)
		}
	})
	t.Run("public", func(t *testing.T) {
		e := newEnv(t, nil, httpapi.WithMetricsHandler(metrics), httpapi.WithPublicMetrics())
		e.do("GET", "/metrics", noToken, "").wantOK(t, "GET /metrics without a token, public")
		e.do("GET", "/plants", noToken, "").wantError(t, 400, 401)
	})
}

// TestDocsRoute checks GET /docs and /docs/NAME: error 404 without a docs
// handler; with one, served by it without a token, GET and HEAD only, and
// through the request ids (validatingTransport's check) and the hooks like
// any route.
func TestDocsRoute(t *testing.T) {
	docs := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		if r.URL.Path == "/docs/unknown.js" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, "docs at "+r.URL.Path)
	})
	t.Run("none", func(t *testing.T) {
		e := newEnv(t, nil)
		e.do("GET", "/docs", noToken, "").wantError(t, 400, 404)
		e.do("GET", "/docs", nil, "").wantError(t, 400, 404)
		e.do("GET", "/docs/init.js", nil, "").wantError(t, 400, 404)
	})
	t.Run("given", func(t *testing.T) {
		var l servedLog
		e := newEnv(t, nil, httpapi.WithDocs(docs), httpapi.WithHooks(l.hooks()))
		for _, path := range []string{"/docs", "/docs/init.js"} {
			r := e.do("GET", path, noToken, "")
			if r.status != 200 || string(r.body) != "docs at "+path {
				t.Errorf("GET %s without a token = %d %q, want the docs handler's answer", path, r.status, r.body)
			}
		}
		e.do("HEAD", "/docs", noToken, "").wantOK(t, "HEAD /docs")
		e.do("POST", "/docs", nil, "").wantError(t, 400, 405)
		e.do("GET", "/docs/", nil, "").wantError(t, 400, 404)
		e.do("GET", "/docs/a/b", nil, "").wantError(t, 400, 404)
		e.do("GET", "/plants", noToken, "").wantError(t, 400, 401)
		want := []string{"GET /docs ok", "GET /docs/{name} ok", "HEAD /docs ok", "POST /docs 405", "GET other 404", "GET other 404", "GET /plants 401"}
		if diff := cmp.Diff(want, l.take()); diff != "" {
			t.Errorf("requests served (-want +got):\n%s", diff)
		}
	})
	// A name the docs handler answers 404 is answered with the API's
	// Error, and counted with its code.
	t.Run("unknown name", func(t *testing.T) {
		var l servedLog
		e := newEnv(t, nil, httpapi.WithDocs(docs), httpapi.WithHooks(l.hooks()))
		r := e.do("GET", "/docs/unknown.js", noToken, "")
		r.wantError(t, 400, 404)
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") || r.header.Get("X-Content-Type-Options") != "" {
			t.Errorf("GET /docs/unknown.js: Content-Type %q, X-Content-Type-Options %q; want JSON, and no header of the text answer", ct, r.header.Get("X-Content-Type-Options"))
		}
		want := []string{"GET /docs/{name} 404"}
		if diff := cmp.Diff(want, l.take()); diff != "" {
			t.Errorf("requests served (-want +got):\n%s", diff)
		}
	})
}

// TestHooksCompose gives the handler three sets of Hooks beside an access
// log: every set is told of each request, in the order the sets were
// given, Routed before Served, with the context the request came with.
func TestHooksCompose(t *testing.T) {
	t.Parallel()
	type ctxKey struct{}
	var calls []string
	set := func(name string) httpapi.Hooks {
		return httpapi.Hooks{
			Routed: func(ctx context.Context, route httpapi.Route, method string) {
				calls = append(calls, ctx.Value(ctxKey{}).(string)+" "+name+" routed "+method+" "+route.String())
			},
			Served: func(s httpapi.Served) {
				calls = append(calls, s.Context.Value(ctxKey{}).(string)+" "+name+" served "+s.Method+" "+s.Route.String()+" "+itoa(s.Code))
			},
		}
	}
	onlyServed := set("C")
	onlyServed.Routed = nil
	h := newHandler(nil, httpapi.WithHooks(set("A")), httpapi.WithAccessLog(io.Discard, httpapi.AccessLog{}),
		httpapi.WithHooks(httpapi.Hooks{}), httpapi.WithHooks(set("B")), httpapi.WithHooks(onlyServed))
	var want []string
	for i, rq := range []struct{ method, path, served string }{
		{"POST", "/plants", "POST /plants ok"}, {"GET", "/plants/42", "GET /plants/{id} 404"},
		{"DELETE", "/plants/7", "DELETE /plants/{id} 404"}, {"GET", "/plants/42/x", "GET other 404"}, {"PUT", "/plants", "PUT /plants 405"},
	} {
		id := string(rune('a' + i))
		req := newRequest(rq.method, rq.path, nil, strings.NewReader(`{"id":1,"name":"Fern"}`))
		serve(h, req.WithContext(context.WithValue(req.Context(), ctxKey{}, id)))
		routed := id + " %s routed " + rq.served[:strings.LastIndex(rq.served, " ")]
		served := id + " %s served " + rq.served
		want = append(want, fmt.Sprintf(routed, "A"), fmt.Sprintf(routed, "B"), fmt.Sprintf(served, "A"), fmt.Sprintf(served, "B"), fmt.Sprintf(served, "C"))
	}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("hook calls (-want +got):\n%s", diff)
	}
}

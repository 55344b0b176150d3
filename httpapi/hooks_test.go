package httpapi_test

import (
	"context"
	"io"
	"net/http"
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
	return string(rune('0'+code/100)) + string(rune('0'+code/10%10)) + string(rune('0'+code%10))
}

func TestHooks(t *testing.T) {
	t.Parallel()
	for _, accessLog := range []bool{false, true} {
		name := "log=off"
		if accessLog {
			name = "log=on"
		}
		t.Run(name, func(t *testing.T) {
			var l servedLog
			opts := []httpapi.Option{httpapi.WithHooks(l.hooks())}
			if accessLog {
				// The access log and the hooks share one recorder: the
				// Error codes must reach both.
				opts = append(opts, httpapi.WithAccessLog(io.Discard, httpapi.AccessLog{}))
			}
			e := newEnv(t, nil, opts...)
			send := func(method, path string, headers map[string]string, body string, wantStatus int) {
				t.Helper()
				if r := e.do(method, path, headers, body); r.status != wantStatus {
					t.Fatalf("%s %s = %d %s, want %d", method, path, r.status, r.body, wantStatus)
				}
			}
			send("POST", "/plants", nil, `{"id":1,"name":"Fern"}`, 200)
			send("POST", "/plants", nil, `{"id":1,"name":"Fern"}`, 400)                                  // 409
			send("POST", "/plants", map[string]string{"Authorization": "Bearer wrong"}, `{"id":3}`, 400) // 401
			send("POST", "/plants", map[string]string{"Content-Type": "text/plain"}, `{}`, 400)          // 415
			send("GET", "/plants/1", nil, "", 200)
			send("GET", "/plants/01", nil, "", 400)              // 400, a non-canonical id
			send("DELETE", "/plants/1", nil, "", 204)            // a success without a body
			send("DELETE", "/plants/1", nil, "", 400)            // 404
			send("GET", "/plants/1/leaves", nil, "", 400)        // 404, no such route
			send("GET", "/secret-admin-path-"+"x", nil, "", 400) // 404, no such route
			send("PUT", "/plants", nil, "", 400)                 // 405
			send("BREW", "/plants", nil, "", 400)                // 405, a method HTTP does not define
			send("GET", "/healthz", noToken, "", 200)
			send("OPTIONS", "/plants/7", nil, "", 204)
			want := []string{
				"POST /plants ok", "POST /plants 409", "POST /plants 401", "POST /plants 415",
				"GET /plants/{id} ok", "GET /plants/{id} 400", "DELETE /plants/{id} ok", "DELETE /plants/{id} 404",
				"GET other 404", "GET other 404", "PUT /plants 405", "BREW /plants 405", "GET /healthz ok",
				"OPTIONS /plants/{id} ok",
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
// and through the request ids and the hooks like any route.
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
		if r.status != 200 || string(r.body) != "plantstore_up 1\n" || r.header.Get("X-Request-Id") == "" {
			t.Errorf("GET /metrics with the token = %d %q (X-Request-Id %q), want the metrics and an id", r.status, r.body, r.header.Get("X-Request-Id"))
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
// through the request ids and the hooks like any route.
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
			if r.status != 200 || string(r.body) != "docs at "+path || r.header.Get("X-Request-Id") == "" {
				t.Errorf("GET %s without a token = %d %q (X-Request-Id %q), want the docs handler's answer and an id", path, r.status, r.body, r.header.Get("X-Request-Id"))
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
// given, Routed before Served.
func TestHooksCompose(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var calls []string
	set := func(name string) httpapi.Hooks {
		return httpapi.Hooks{
			Routed: func(_ context.Context, route httpapi.Route, method string) {
				mu.Lock()
				defer mu.Unlock()
				calls = append(calls, name+" routed "+method+" "+route.String())
			},
			Served: func(s httpapi.Served) {
				mu.Lock()
				defer mu.Unlock()
				calls = append(calls, name+" served "+s.Method+" "+s.Route.String()+" "+itoa(s.Code))
			},
		}
	}
	onlyServed := set("C")
	onlyServed.Routed = nil
	e := newEnv(t, nil, httpapi.WithHooks(set("A")), httpapi.WithAccessLog(io.Discard, httpapi.AccessLog{}),
		httpapi.WithHooks(httpapi.Hooks{}), httpapi.WithHooks(set("B")), httpapi.WithHooks(onlyServed))
	if r := e.do("GET", "/plants/7", nil, ""); r.status != 400 {
		t.Fatalf("GET /plants/7 = %d %s, want 400 (404)", r.status, r.body)
	}
	want := []string{
		"A routed GET /plants/{id}", "B routed GET /plants/{id}",
		"A served GET /plants/{id} 404", "B served GET /plants/{id} 404", "C served GET /plants/{id} 404",
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("hook calls (-want +got):\n%s", diff)
	}
}

package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
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
// each kind of request, without and with an access log, which shares its
// recorder; and that each answer carries back the client's X-Request-Id
// (validatingTransport's check). Paths whose %-escapes decode to a route
// or an id are routed as sent, so they reach no plant. /metrics is behind
// the token, /docs is not, and a name the docs handler answers 404 is
// answered with the API's Error, without the headers of the text answer.
// What the router answers itself needs no token: OPTIONS on a route is 204
// with the methods it takes in Allow, a method it does not take the Error
// 405 with the same Allow. WithConventionalStatus answers each Error with
// its code as the status.
func TestHooks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		method, path string
		headers      hdr
		body         string
		status       int    // 400: the Error of served's code, which WithConventionalStatus makes the status
		served       string // "METHOD route code", as servedLog keeps it
		answer       string // the body of a 200 from metrics or docs
	}{
		{"POST", "/plants", nil, `{"id":1,"name":"Fern"}`, 200, "POST /plants ok", ""},
		{"POST", "/plants", nil, `{"id":1,"name":"Fern"}`, 400, "POST /plants 409", ""},
		{"POST", "/plants", hdr{"Authorization": "Bearer wrong"}, `{"id":3}`, 400, "POST /plants 401", ""},
		{"POST", "/plants", hdr{"Content-Type": "text/plain"}, `{}`, 400, "POST /plants 415", ""},
		{"POST", "/plants", nil, `{"id":2,`, 400, "POST /plants 400", ""},
		{"POST", "/plants", nil, strings.Repeat(" ", httpapi.DefaultMaxBodyBytes+1), 400, "POST /plants 413", ""},
		{"GET", "/plants?limit=1", nil, "", 200, "GET /plants ok", ""},
		{"GET", "/plants?limit=0", nil, "", 400, "GET /plants 400", ""},
		{"GET", "/plants", noToken, "", 400, "GET /plants 401", ""},
		{"DELETE", "/plants%2F1", nil, "", 400, "DELETE other 404", ""},        // an escaped slash separates no segments
		{"GET", "/plants%2f1", nil, "", 400, "GET other 404", ""},              // nor in lower case
		{"DELETE", "/plants/%31", nil, "", 400, "DELETE /plants/{id} 400", ""}, // an escaped digit is no canonical id
		{"GET", "/plants/%2B1", nil, "", 400, "GET /plants/{id} 400", ""},      // nor an escaped plus sign
		{"GET", "/%70lants", nil, "", 400, "GET other 404", ""},                // an escaped letter spells no route
		{"GET", "/healthz%2F", nil, "", 400, "GET other 404", ""},
		{"GET", "/plants/1", nil, "", 200, "GET /plants/{id} ok", ""},
		{"GET", "/plants/01", nil, "", 400, "GET /plants/{id} 400", ""}, // a non-canonical id
		{"DELETE", "/plants/1", nil, "", 204, "DELETE /plants/{id} ok", ""},
		{"DELETE", "/plants/1", nil, "", 400, "DELETE /plants/{id} 404", ""},
		{"GET", "/plants/1/leaves", nil, "", 400, "GET other 404", ""},
		{"GET", "/secret-admin-path-x", noToken, "", 400, "GET other 404", ""},
		{"PUT", "/plants", nil, "", 400, "PUT /plants 405", ""},
		{"BREW", "/plants", nil, "", 400, "BREW /plants 405", ""}, // a method HTTP does not define
		{"GET", "/healthz", noToken, "", 200, "GET /healthz ok", ""},
		{"GET", "/readyz", noToken, "", 200, "GET /readyz ok", ""},
		{"GET", "/openapi.json", noToken, "", 200, "GET /openapi.json ok", ""},
		{"OPTIONS", "/plants/7", nil, "", 204, "OPTIONS /plants/{id} ok", ""},
		{"GET", "/metrics", noToken, "", 400, "GET /metrics 401", ""},
		{"GET", "/metrics", nil, "", 200, "GET /metrics ok", "plantstore_up 1\n"},
		{"HEAD", "/metrics", nil, "", 200, "HEAD /metrics ok", ""},
		{"POST", "/metrics", nil, "", 400, "POST /metrics 405", ""},
		{"DELETE", "/metrics", nil, "", 400, "DELETE /metrics 405", ""},
		{"GET", "/docs", noToken, "", 200, "GET /docs ok", "docs at /docs"},
		{"GET", "/docs/init.js", noToken, "", 200, "GET /docs/{name} ok", "docs at /docs/init.js"},
		{"HEAD", "/docs", noToken, "", 200, "HEAD /docs ok", ""},
		{"POST", "/docs", nil, "", 400, "POST /docs 405", ""},
		{"GET", "/docs/", nil, "", 400, "GET other 404", ""},
		{"GET", "/docs/a/b", nil, "", 400, "GET other 404", ""},
		{"GET", "/docs/unknown.js", noToken, "", 400, "GET /docs/{name} 404", ""},
		{"OPTIONS", "/plants", noToken, "", 204, "OPTIONS /plants ok", ""},
		{"OPTIONS", "/plants/x", noToken, "", 204, "OPTIONS /plants/{id} ok", ""}, // a bad id
		{"OPTIONS", "/openapi.json", noToken, "", 204, "OPTIONS /openapi.json ok", ""},
		{"OPTIONS", "/healthz", noToken, "", 204, "OPTIONS /healthz ok", ""},
		{"OPTIONS", "/readyz", noToken, "", 204, "OPTIONS /readyz ok", ""},
		{"OPTIONS", "/nowhere", noToken, "", 400, "OPTIONS other 404", ""},
		{"OPTIONS", "/plants/", noToken, "", 400, "OPTIONS other 404", ""}, // a trailing slash
		{"POST", "/plants/", noToken, "", 400, "POST other 404", ""},
		{"POST", "/Plants", noToken, "", 400, "POST other 404", ""}, // paths are case-sensitive
		{"POST", "/plants/1", noToken, "", 400, "POST /plants/{id} 405", ""},
		{"PATCH", "/plants/1", noToken, "", 400, "PATCH /plants/{id} 405", ""},
	}
	routes := map[string]httpapi.Route{}
	for _, rt := range httpapi.Routes() {
		routes[rt.String()] = rt
	}
	for _, variant := range []struct {
		name                    string
		accessLog, conventional bool
	}{{"log=off", false, false}, {"log=on/conventional", true, true}} {
		t.Run(variant.name, func(t *testing.T) {
			var l servedLog
			opts := []httpapi.Option{httpapi.WithHooks(l.hooks()), httpapi.WithMetricsHandler(metricsHandler), httpapi.WithDocs(docsHandler)}
			if variant.accessLog {
				opts = append(opts, httpapi.WithAccessLog(io.Discard, httpapi.AccessLog{}))
			}
			if variant.conventional {
				opts = append(opts, httpapi.WithConventionalStatus())
			}
			e := newEnv(t, nil, opts...)
			var want []string
			for i, tt := range tests {
				headers := hdr{"X-Request-Id": "client-" + strconv.Itoa(i)}
				maps.Copy(headers, tt.headers)
				r := e.do(tt.method, tt.path, headers, tt.body)
				fields := strings.Fields(tt.served) // method, route, code
				code, _ := strconv.Atoi(fields[2])
				status := tt.status
				if status == 400 && variant.conventional {
					status = code
				}
				if r.status != status || tt.answer != "" && string(r.body) != tt.answer {
					t.Fatalf("%s %s = %d %q, want %d %q", tt.method, tt.path, r.status, r.body, status, tt.answer)
				}
				if tt.status == 400 {
					r.wantError(t, status, code)
					if v := r.header.Get("X-Content-Type-Options"); v != "" {
						t.Errorf("%s %s: the Error carries X-Content-Type-Options %q", tt.method, tt.path, v)
					}
				}
				// Allow names the route's methods, HEAD and OPTIONS.
				wantAllow := ""
				if tt.method == "OPTIONS" && tt.status == 204 || code == 405 {
					methods := append(routes[fields[1]].Methods(), "HEAD", "OPTIONS")
					slices.Sort(methods)
					wantAllow = strings.Join(methods, ", ")
				}
				if got := r.header.Get("Allow"); got != wantAllow {
					t.Errorf("%s %s: Allow = %q, want %q", tt.method, tt.path, got, wantAllow)
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

// TestMetricsAndDocsOptional checks that /metrics and /docs are the
// Error 404 without their handlers, and that WithPublicMetrics opens
// /metrics, and only it, to requests without a token.
func TestMetricsAndDocsOptional(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	for _, path := range []string{"/metrics", "/docs", "/docs/init.js"} {
		e.do("GET", path, nil, "").wantError(t, 400, 404)
	}
	e.do("GET", "/docs", noToken, "").wantError(t, 400, 404)
	public := newEnv(t, nil, httpapi.WithMetricsHandler(metricsHandler), httpapi.WithPublicMetrics())
	public.do("GET", "/metrics", noToken, "").wantOK(t, "GET /metrics without a token, public")
	public.do("GET", "/plants", noToken, "").wantError(t, 400, 401)
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

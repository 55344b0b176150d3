package httpapi_test

import (
	"log/slog"
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
				opts = append(opts, httpapi.WithAccessLog(slog.New(slog.DiscardHandler)))
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
			send("GET", "/healthz", map[string]string{"Authorization": ""}, "", 200)
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

// TestRoutes checks the routes and methods a hook may be told of.
func TestRoutes(t *testing.T) {
	got := map[string][]string{}
	for _, r := range httpapi.Routes() {
		got[r.String()] = r.Methods()
	}
	want := map[string][]string{
		"other":         nil,
		"/plants":       {"POST", "GET"},
		"/plants/{id}":  {"GET", "DELETE"},
		"/openapi.json": {"GET"},
		"/healthz":      {"GET"},
		"/readyz":       {"GET"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Routes() mismatch (-want +got):\n%s", diff)
	}
}

package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/julienschmidt/httprouter"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/memstore"
)

// TestRouteOfMatchesRouter checks the Routes the hooks report against what
// they stand for: the paths of the OpenAPI document, and the router, which
// must find a handler for a path exactly when routeOf names a route.
func TestRouteOfMatchesRouter(t *testing.T) {
	t.Parallel()
	var doc struct {
		Paths map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openAPIDocument, &doc); err != nil {
		t.Fatal(err)
	}
	labelled := map[string]bool{}
	for _, l := range routeLabels[RouteOther+1:] {
		labelled[l] = true
	}
	for path := range doc.Paths {
		if !labelled[path] {
			t.Errorf("the document's path %s has no route label", path)
		}
		delete(labelled, path)
	}
	// /metrics serves the host's metrics, not the API: the document leaves
	// it out.
	delete(labelled, "/metrics")
	// /docs and its files are the document's reader, not the API.
	delete(labelled, "/docs")
	delete(labelled, "/docs/{name}")
	for l := range labelled {
		t.Errorf("route label %s is not a path of the document", l)
	}

	h := New(plantstore.New(memstore.New()), WithLogger(slog.New(slog.DiscardHandler))).(*handler)
	router, ok := h.routes.(*httprouter.Router)
	if !ok {
		t.Fatal("without WithCORS, the handler's routes are not the router itself")
	}
	paths := []string{
		"/", "", "/plants", "/plants/", "/plants/1", "/plants/-1", "/plants/abc", "/plants/1/",
		"/plants/1/x", "/plants//", "/plants//1", "/plantsx", "/plant", "/PLANTS", "/plants.json",
		"/openapi.json", "/openapi.json/", "/healthz", "/healthz/", "/readyz", "/readyzz", "//plants",
		"/plants/%2F", "/plants/a%2Fb", "/plants/" + strings.Repeat("9", 40),
		// The handler routes a path with escapes as it was sent.
		"/plants%2F1", "/plants/%31", "/%70lants",
		"/docs", "/docs/", "/docs/init.js", "/docs/a/b", "/docsx", "/docs//",
	}
	for p := range doc.Paths {
		paths = append(paths, strings.ReplaceAll(p, "{id}", "7"))
	}
	for _, path := range paths {
		routed := false
		for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
			if h, _, _ := router.Lookup(m, path); h != nil {
				routed = true
			}
		}
		route := routeOf(path)
		if routed != (route != RouteOther) {
			t.Errorf("routeOf(%q) = %s, but the router finds a handler: %v", path, route, routed)
		}
		if routed && route.String() != path && !(route.String() == "/plants/{id}" && strings.HasPrefix(path, "/plants/")) &&
			!(route.String() == "/docs/{name}" && strings.HasPrefix(path, "/docs/")) {
			t.Errorf("routeOf(%q) = %s, a route the path is not", path, route)
		}
	}
}

// TestErrorCodesHoldEveryCode checks that every Error the handler answers
// with has a code that ErrorCodes lists, so that a hook can count it apart.
func TestErrorCodesHoldEveryCode(t *testing.T) {
	t.Parallel()
	codes := map[int]bool{}
	for _, c := range ErrorCodes() {
		codes[c] = true
	}
	h := New(plantstore.New(memstore.New()), WithLogger(slog.New(slog.DiscardHandler)), WithMaxHeaderBytes(1)).(*handler)
	for _, e := range []*apiError{errMissingToken, errMalformedAuth, errInvalidToken, errNoAuthenticator,
		errCallerForbidden, errAuthUnavailable,
		errContentType, errContentEncoding, errNotFoundPath, errMethod, errInternal, errUnavailable,
		errOutcome, errConflict, errPlantMissing, errBadID, errMalformedQuery, errReadBody, errBodyTooLarge(1),
		errNotReady, errReadyTimeout, errRepeated("x").(*apiError), h.headerTooLarge} {
		if !codes[e.code] {
			t.Errorf("error %d (%q) is not in ErrorCodes() = %v", e.code, e.msg, ErrorCodes())
		}
	}
	for _, err := range []error{&syntaxError{}, &plantstore.ValidationError{Field: "name"}} {
		if code, _, _ := h.wireError(nil, err); !codes[code] {
			t.Errorf("error %d for %T is not in ErrorCodes() = %v", code, err, ErrorCodes())
		}
	}
}

// TestHooksOneSetIsNotWrapped checks that a field only one set of Hooks
// fills is called as it is: composing costs nothing when nothing is
// composed.
func TestHooksOneSetIsNotWrapped(t *testing.T) {
	t.Parallel()
	h := New(plantstore.New(memstore.New()), WithLogger(slog.New(slog.DiscardHandler)),
		WithHooks(Hooks{Served: servedHook}), WithHooks(Hooks{}), WithHooks(Hooks{Routed: routedHook})).(*handler)
	if reflect.ValueOf(h.hooks.Served).Pointer() != reflect.ValueOf(servedHook).Pointer() {
		t.Error("Served is wrapped, want the one set's func itself")
	}
	if reflect.ValueOf(h.hooks.Routed).Pointer() != reflect.ValueOf(routedHook).Pointer() {
		t.Error("Routed is wrapped, want the one set's func itself")
	}
}

func servedHook(Served)                         {}
func routedHook(context.Context, Route, string) {}

func TestAppendPlant(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		p      plantstore.Plant
		withID bool
		want   string
		reason string
	}{
		{name: "untagged", p: plantstore.Plant{ID: 7, Name: "Fern"}, want: `{"name":"Fern"}`},
		{name: "untagged with id", p: plantstore.Plant{ID: -7, Name: "Fern"}, withID: true, want: `{"id":-7,"name":"Fern"}`},
		{name: "empty tag", p: plantstore.Plant{ID: 1, Name: "", Tag: "", HasTag: true}, withID: true,
			want: `{"id":1,"name":"","tag":""}`, reason: "a tag that is present is written even when empty"},
		{name: "tag without HasTag", p: plantstore.Plant{ID: 1, Name: "a", Tag: "x"}, want: `{"name":"a"}`},
		{name: "escapes", p: plantstore.Plant{Name: "q\"b\\s/\b\f\n\r\t\x01\x1f\x7f", Tag: "<&>\u2028é😀", HasTag: true},
			want:   `{"name":"q\"b\\s/\b\f\n\r\t\u0001\u001f` + "\x7f" + `","tag":"<&>` + "\u2028é😀" + `"}`,
			reason: "the shortest form: only quotes, backslashes and control characters are escaped"},
		{name: "invalid UTF-8", p: plantstore.Plant{Name: "a\xffb"}, want: `{"name":"a` + "\ufffd" + `b"}`,
			reason: "never stored, but the output stays valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := appendPlant([]byte("x"), tt.p, tt.withID)
			if diff := cmp.Diff("x"+tt.want, string(got)); diff != "" {
				t.Errorf("appendPlant(%+v, %v) mismatch (-want +got):\n%s", tt.p, tt.withID, diff)
			}
		})
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		failing time.Duration
		want    int
		reason  string
	}{
		{0, 1, "writes are not failing"},
		{time.Millisecond, 1, ""},
		{2 * time.Second, 1, ""},
		{2*time.Second + 1, 2, "half, rounded up"},
		{19 * time.Second, 10, ""},
		{time.Minute, 30, ""},
		{time.Hour, 30, "never more than maxRetryAfter"},
	}
	for _, tt := range tests {
		if got := retryAfterSeconds(tt.failing); got != tt.want {
			t.Errorf("retryAfterSeconds(%v) = %d, want %d %s", tt.failing, got, tt.want, tt.reason)
		}
	}
}

// BenchmarkRequestID measures what giving a request its id costs, with an
// id generated and with the client's kept.
func BenchmarkRequestID(b *testing.B) {
	for _, tt := range []struct {
		name   string
		header []string
	}{
		{"generated", nil},
		{"client", []string{"0b6c4a3e-6a3f-4b8e-9d55-2f0c1d7a9e11"}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", "/healthz", nil)
			if tt.header != nil {
				req.Header[requestIDHeader] = tt.header
			}
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				if r := withRequestID(w, req); RequestID(r.Context()) == "" {
					b.Fatal("no request id")
				}
			}
		})
	}
}

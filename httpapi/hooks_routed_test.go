package httpapi_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/memstore"
)

type routedKey struct{}

// TestRoutedHook checks that Routed is told each request's route and
// method, before it is served, with the context the request came with,
// and that Served carries that context too.
func TestRoutedHook(t *testing.T) {
	var got []string
	h := httpapi.New(plantstore.New(memstore.New()), httpapi.WithTokens(testToken), httpapi.WithHooks(httpapi.Hooks{
		Routed: func(ctx context.Context, route httpapi.Route, method string) {
			got = append(got, ctx.Value(routedKey{}).(string)+" routed "+method+" "+route.String())
		},
		Served: func(s httpapi.Served) {
			got = append(got, s.Context.Value(routedKey{}).(string)+" served "+s.Method+" "+s.Route.String())
		},
	}))
	for i, rq := range []struct{ method, path string }{
		{"POST", "/plants"}, {"GET", "/plants/42"}, {"DELETE", "/plants/7"}, {"GET", "/plants/42/x"}, {"PUT", "/plants"},
	} {
		req := newRequest(rq.method, rq.path, nil, strings.NewReader(`{"id":1,"name":"Fern"}`))
		req = req.WithContext(context.WithValue(req.Context(), routedKey{}, string(rune('a'+i))))
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	want := []string{
		"a routed POST /plants", "a served POST /plants",
		"b routed GET /plants/{id}", "b served GET /plants/{id}",
		"c routed DELETE /plants/{id}", "c served DELETE /plants/{id}",
		"d routed GET other", "d served GET other",
		"e routed PUT /plants", "e served PUT /plants",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("hook calls (-want +got):\n%s", diff)
	}
}

package httpapi_test

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/httpapi"
)

func TestHead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		path    string
		headers map[string]string
		reason  string
	}{
		{name: "healthz", path: "/healthz", headers: noToken},
		{name: "readyz", path: "/readyz", headers: noToken},
		{name: "document", path: "/openapi.json", headers: noToken},
		{name: "list", path: "/plants"},
		{name: "full page", path: "/plants?limit=1", reason: "the Link header comes with HEAD too"},
		{name: "one plant", path: "/plants/1"},
		{name: "no such plant", path: "/plants/2"},
		{name: "list without a token", path: "/plants", headers: noToken,
			reason: "HEAD needs the token its GET needs"},
		{name: "plant with a wrong token", path: "/plants/1", headers: map[string]string{"Authorization": "Bearer nope"}},
		{name: "bad id", path: "/plants/01"},
		{name: "unknown path", path: "/nowhere"},
	}
	for _, conventional := range []bool{false, true} {
		var opts []httpapi.Option
		if conventional {
			opts = append(opts, httpapi.WithConventionalStatus())
		}
		e := newEnv(t, nil, opts...)
		e.do("POST", "/plants", nil, `{"id":1,"name":"Monstera"}`).wantOK(t, "create")
		for _, tt := range tests {
			t.Run(tt.name+"/conventional="+strconv.FormatBool(conventional), func(t *testing.T) {
				get := e.do("GET", tt.path, tt.headers, "")
				head := e.do("HEAD", tt.path, tt.headers, "") // without a body, as validatingTransport checks
				want := map[string]string{"status": strconv.Itoa(get.status), "Content-Length": strconv.Itoa(len(get.body))}
				got := map[string]string{"status": strconv.Itoa(head.status), "Content-Length": head.header.Get("Content-Length")}
				for _, k := range []string{"Content-Type", "Link", "WWW-Authenticate", "Cache-Control"} {
					want[k], got[k] = get.header.Get(k), head.header.Get(k)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("HEAD differs from GET (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// TestRouting checks what the router answers itself, without a token:
// OPTIONS on a route, 204 with the methods it takes in Allow; the Error
// 404 for a path no route matches exactly; and the Error 405, with Allow,
// for a method the route does not take.
func TestRouting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, method, path string
		wantStatus         int
		wantAllow          string
		wantCode           int // the Error's code, for a failure
	}{
		{name: "plants", method: "OPTIONS", path: "/plants", wantStatus: 204, wantAllow: "GET, HEAD, OPTIONS, POST"},
		{name: "a plant", method: "OPTIONS", path: "/plants/1", wantStatus: 204, wantAllow: "DELETE, GET, HEAD, OPTIONS"},
		{name: "a bad id", method: "OPTIONS", path: "/plants/x", wantStatus: 204, wantAllow: "DELETE, GET, HEAD, OPTIONS"},
		{name: "document", method: "OPTIONS", path: "/openapi.json", wantStatus: 204, wantAllow: "GET, HEAD, OPTIONS"},
		{name: "healthz", method: "OPTIONS", path: "/healthz", wantStatus: 204, wantAllow: "GET, HEAD, OPTIONS"},
		{name: "readyz", method: "OPTIONS", path: "/readyz", wantStatus: 204, wantAllow: "GET, HEAD, OPTIONS"},
		{name: "unknown path", method: "OPTIONS", path: "/nowhere", wantStatus: 404, wantCode: 404},
		{name: "trailing slash", method: "OPTIONS", path: "/plants/", wantStatus: 404, wantCode: 404},
		{name: "GET an unknown path", method: "GET", path: "/nowhere", wantStatus: 404, wantCode: 404},
		{name: "POST with a trailing slash", method: "POST", path: "/plants/", wantStatus: 404, wantCode: 404},
		{name: "case of path", method: "POST", path: "/Plants", wantStatus: 404, wantCode: 404},
		{name: "405 lists the methods", method: "PUT", path: "/plants", wantStatus: 405, wantAllow: "GET, HEAD, OPTIONS, POST", wantCode: 405},
		{name: "405 on a plant", method: "POST", path: "/plants/1", wantStatus: 405, wantAllow: "DELETE, GET, HEAD, OPTIONS", wantCode: 405},
		{name: "patch a plant", method: "PATCH", path: "/plants/1", wantStatus: 405, wantAllow: "DELETE, GET, HEAD, OPTIONS", wantCode: 405},
	}
	e := newEnv(t, nil, httpapi.WithConventionalStatus())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// No token: OPTIONS needs none.
			r := e.do(tt.method, tt.path, noToken, "")
			if tt.wantCode != 0 {
				r.wantError(t, tt.wantStatus, tt.wantCode)
			} else if r.status != tt.wantStatus || len(r.body) != 0 {
				t.Errorf("status = %d, body %q; want %d and no body", r.status, r.body, tt.wantStatus)
			}
			if diff := cmp.Diff(tt.wantAllow, r.header.Get("Allow")); diff != "" {
				t.Errorf("Allow mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

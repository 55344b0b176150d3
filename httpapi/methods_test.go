package httpapi_test

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestHead checks that HEAD is answered as its GET is, status and headers
// (Content-Length the length of the GET's body), without the body, for
// successes and Errors alike.
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
	e := newEnv(t, nil)
	e.do("POST", "/plants", nil, `{"id":1,"name":"Monstera"}`).wantOK(t, "create")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
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

package httpapi_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/httpapi"
)

// TestCORS checks every CORS header of the answers to preflights and to
// requests, from an allowed origin, another or none, with CORS on and off,
// and of the handler's own 401 and 431, so that a browser script can read
// them. The headers of an answer that is no preflight do not depend on its
// route: CORS wraps the whole router.
func TestCORS(t *testing.T) {
	t.Parallel()
	const app = "https://app.example"
	preflight := func(origin, method string) hdr {
		return hdr{"Authorization": "", "Content-Type": "", "Origin": origin,
			"Access-Control-Request-Method": method, "Access-Control-Request-Headers": "authorization, content-type"}
	}
	// allowed is the answer to an allowed preflight, for methods.
	allowed := func(origin, methods string) hdr {
		return hdr{"Access-Control-Allow-Origin": origin, "Access-Control-Allow-Methods": methods,
			"Access-Control-Allow-Headers": "Authorization, Content-Type, X-Request-Id", "Access-Control-Max-Age": "3600", "Vary": "Origin"}
	}
	allowedActual := hdr{
		"Access-Control-Allow-Origin":   app,
		"Access-Control-Expose-Headers": "Link, X-Request-Id, WWW-Authenticate",
		"Vary":                          "Origin",
	}
	vary := hdr{"Vary": "Origin"}
	tests := []struct {
		name, method, path string
		origins            []string // given to WithCORS, one call each
		maxHeader          int      // given to WithMaxHeaderBytes
		headers            hdr
		body               string
		wantStatus         int
		wantCode           int // the Error's code, for a failure
		want               hdr // every CORS header of the answer
		reason             string
	}{
		{name: "preflight for a create", method: "OPTIONS", path: "/plants", origins: []string{app},
			headers: preflight(app, "POST"), wantStatus: 204, want: allowed(app, "GET, HEAD, OPTIONS, POST"),
			reason: "a preflight carries no token and needs none"},
		{name: "preflight for a delete", method: "OPTIONS", path: "/plants/7", origins: []string{"https://other.example", app},
			headers: preflight(app, "DELETE"), wantStatus: 204, want: allowed(app, "DELETE, GET, HEAD, OPTIONS")},
		{name: "preflight from another origin", method: "OPTIONS", path: "/plants", origins: []string{app},
			headers: preflight("https://evil.example", "POST"), wantStatus: 204,
			want: vary, reason: "an ordinary OPTIONS answer: the browser refuses the request"},
		{name: "preflight from a look-alike origin", method: "OPTIONS", path: "/plants", origins: []string{app},
			headers: preflight(app+":443", "POST"), wantStatus: 204, want: vary, reason: "origins match exactly"},
		{name: "preflight to an unknown path", method: "OPTIONS", path: "/nowhere", origins: []string{app},
			headers: preflight(app, "GET"), wantStatus: 404, wantCode: 404,
			want: hdr{"Access-Control-Allow-Origin": app, "Vary": "Origin"}},
		{name: "preflight with any origin allowed", method: "OPTIONS", path: "/plants", origins: []string{"*"},
			headers: preflight("https://anyone.example", "POST"), wantStatus: 204, want: allowed("*", "GET, HEAD, OPTIONS, POST"),
			reason: "the answer is the same for every origin, but not for a request without one"},
		{name: "create", method: "POST", path: "/plants", origins: []string{app},
			headers: hdr{"Origin": app}, body: `{"id":1,"name":"x"}`, wantStatus: 200, want: allowedActual},
		{name: "create without a token", method: "POST", path: "/plants", origins: []string{app},
			headers: hdr{"Origin": app, "Authorization": ""}, body: `{"id":2,"name":"x"}`,
			wantStatus: 401, wantCode: 401, want: allowedActual,
			reason: "CORS lets the script read the refusal, and bypasses nothing"},
		{name: "list", method: "GET", path: "/plants", origins: []string{app},
			headers: hdr{"Origin": app}, wantStatus: 200, want: allowedActual},
		{name: "list from another origin", method: "GET", path: "/plants", origins: []string{app},
			headers: hdr{"Origin": "https://evil.example"}, wantStatus: 200, want: vary},
		{name: "list without an origin", method: "GET", path: "/plants", origins: []string{app}, wantStatus: 200, want: vary},
		{name: "list with any origin allowed", method: "GET", path: "/plants", origins: []string{"*"},
			headers: hdr{"Origin": "https://anyone.example"}, wantStatus: 200,
			want: hdr{
				"Access-Control-Allow-Origin":   "*",
				"Access-Control-Expose-Headers": "Link, X-Request-Id, WWW-Authenticate",
				"Vary":                          "Origin",
			},
			reason: "with any origin allowed the answer still depends on whether the request has an Origin"},
		{name: "list without an origin, any origin allowed", method: "GET", path: "/plants", origins: []string{"*"},
			wantStatus: 200, want: vary,
			reason: "a cache must not hand this answer, without Access-Control-Allow-Origin, to a script"},
		{name: "headers too large", method: "GET", path: "/plants", origins: []string{app}, maxHeader: 4096,
			headers: hdr{"Origin": app, "X-Big": strings.Repeat("a", 5000)}, wantStatus: 431, wantCode: 431, want: allowedActual},
		{name: "CORS not enabled", method: "GET", path: "/plants",
			headers: hdr{"Origin": app}, wantStatus: 200, want: hdr{}},
		{name: "preflight, CORS not enabled", method: "OPTIONS", path: "/plants",
			headers: preflight(app, "POST"), wantStatus: 204, want: hdr{}},
		{name: "unknown path, CORS not enabled", method: "GET", path: "/nowhere",
			headers: hdr{"Origin": app}, wantStatus: 404, wantCode: 404, want: hdr{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := []httpapi.Option{httpapi.WithConventionalStatus(), httpapi.WithMaxHeaderBytes(tt.maxHeader)}
			for _, o := range tt.origins {
				opts = append(opts, httpapi.WithCORS(o))
			}
			e := newEnv(t, nil, opts...)
			r := e.do(tt.method, tt.path, tt.headers, tt.body)
			if tt.wantCode != 0 {
				r.wantError(t, tt.wantStatus, tt.wantCode)
			} else if r.status != tt.wantStatus {
				t.Errorf("status = %d, want %d (body %s)", r.status, tt.wantStatus, r.body)
			}
			got := hdr{}
			for k, v := range r.header {
				if strings.HasPrefix(k, "Access-Control-") || k == "Vary" {
					got[k] = v[0]
					if len(v) > 1 {
						t.Errorf("%s sent %d times: %q", k, len(v), v)
					}
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("CORS headers mismatch (-want +got):\n%s", diff)
			}
			if tt.method != "OPTIONS" && tt.wantCode == 401 {
				if diff := cmp.Diff([]int64{}, storedIDs(t, e.ps)); diff != "" {
					t.Errorf("a request without a token changed the store (-want +got):\n%s", diff)
				}
			}
		})
	}
}

// TestCheckOrigin checks the origins CheckOrigin takes; those a browser
// sends in another form (an *OriginFormError naming it); and those no
// browser ever sends (a wildcard, a port past 65535, a host that is no
// name), refused with ErrNotAnOrigin and a reason.
func TestCheckOrigin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		origin   string
		wantErr  error  // matched with errors.Is; nil for none, or for wantForm
		wantForm string // the origin an *OriginFormError asks for; "" for none
		wantMsg  string // in the error; "" for none
	}{
		{origin: "*"},
		{origin: "https://app.example.com"},
		{origin: "http://localhost:3000"},
		{origin: "http://[::1]:8080"},
		{origin: "http://[::1]:65535"},
		{origin: "http://127.0.0.1:8080"},
		{origin: "https://my_app.example.com"},
		{origin: "https://a.b.c.example.com:1"},
		{origin: "https://app.example.com/", wantForm: "https://app.example.com"},
		{origin: "https://App.Example.com", wantForm: "https://app.example.com"},
		{origin: "https://app.example.com:443", wantForm: "https://app.example.com"},
		{origin: "http://app.example.com:80/x", wantForm: "http://app.example.com"},
		{origin: "app.example.com", wantErr: httpapi.ErrNotAnOrigin},
		{origin: "ftp://files.example.com", wantErr: httpapi.ErrNotAnOrigin},
		{origin: "https://user@app.example.com", wantErr: httpapi.ErrNotAnOrigin},
		{origin: "", wantErr: httpapi.ErrNotAnOrigin},
		{origin: "https://*.a.com", wantErr: httpapi.ErrNotAnOrigin, wantMsg: "wildcards"},
		{origin: "https://*", wantErr: httpapi.ErrNotAnOrigin, wantMsg: "wildcards"},
		{origin: "https://a.com:99999", wantErr: httpapi.ErrNotAnOrigin, wantMsg: "1 to 65535"},
		{origin: "https://a.com:0", wantErr: httpapi.ErrNotAnOrigin, wantMsg: "1 to 65535"},
		{origin: "https://.", wantErr: httpapi.ErrNotAnOrigin, wantMsg: "not a DNS name"},
		{origin: "https://a..com", wantErr: httpapi.ErrNotAnOrigin, wantMsg: "not a DNS name"},
		{origin: "https://-a.com", wantErr: httpapi.ErrNotAnOrigin, wantMsg: "not a DNS name"},
		{origin: "https://a%20b.com", wantErr: httpapi.ErrNotAnOrigin},
		{origin: "http://[1.2.3.4]", wantErr: httpapi.ErrNotAnOrigin},
	}
	for _, tt := range tests {
		err := httpapi.CheckOrigin(tt.origin)
		if tt.wantForm != "" {
			if fe, ok := errors.AsType[*httpapi.OriginFormError](err); !ok || fe.Want != tt.wantForm {
				t.Errorf("CheckOrigin(%q) = %v, want an *OriginFormError asking for %q", tt.origin, err, tt.wantForm)
			}
			continue
		}
		if !errors.Is(err, tt.wantErr) || !strings.Contains(fmt.Sprint(err), tt.wantMsg) {
			t.Errorf("CheckOrigin(%q) = %v, want %v saying %q", tt.origin, err, tt.wantErr, tt.wantMsg)
		}
	}
}

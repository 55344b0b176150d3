package httpapi_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/memstore"
)

// TestCreate checks a create's round trip, and its refusals, which leave
// the store as it was. No answer shows the token, in the Error or in the
// log. A 401 carries exactly its challenge: the bare one for credentials
// of a scheme other than Bearer, without an error code, as RFC 6750
// (section 3.1) asks of a request that used an unsupported method;
// invalid_request for a malformed Bearer header.
func TestCreate(t *testing.T) {
	t.Parallel()
	big := `{"id":1,"name":"` + strings.Repeat("a", httpapi.DefaultMaxBodyBytes) + `"}`
	const valid = `{"id":1,"name":"x"}`
	auth := func(v string) hdr { return hdr{"Authorization": v} }
	tests := []struct {
		name      string
		body      string
		headers   hdr
		want      plantstore.NewPlant // answered and stored by a 200
		wantCode  int                 // of the Error; 0 for a 200
		challenge string              // the whole WWW-Authenticate; "" for none
		reason    string
	}{
		// What the decoder takes, and refuses, is TestDecodeNewPlant's, what
		// NewPlant.Validate refuses the root package's TestCreateValidates, and how
		// a plant is written, byte for byte, TestAppendPlant's; these rows
		// show a create's round trip, and that refusals of either are the
		// Error 400.
		{name: "no tag", body: `{"id":1,"name":"Monstera"}`, want: plantstore.NewPlant{ID: 1, Name: "Monstera"}},
		{name: "tag", body: `{"id":2,"name":"Aloe","tag":"succulent"}`, want: plantstore.NewPlant{ID: 2, Name: "Aloe", Tag: "succulent", HasTag: true}},
		{name: "empty tag", body: `{"id":3,"name":"Fern","tag":""}`, want: plantstore.NewPlant{ID: 3, Name: "Fern", HasTag: true},
			reason: "an empty tag is present, not absent"},
		{name: "content type with charset", body: `{"id":6,"name":"x"}`, headers: hdr{"Content-Type": "Application/JSON; charset=utf-8"},
			want: plantstore.NewPlant{ID: 6, Name: "x"}},
		{name: "scheme case-insensitive", body: `{"id":7,"name":"x"}`, headers: auth("bEaReR " + testToken), want: plantstore.NewPlant{ID: 7, Name: "x"}},
		{name: "no Authorization", body: valid, headers: noToken, wantCode: 401, challenge: realm},
		{name: "wrong token", body: valid, headers: auth("Bearer nope"), wantCode: 401, challenge: badToken},
		{name: "token prefix", body: valid, headers: auth("Bearer " + testToken[:5]), wantCode: 401, challenge: badToken},
		{name: "basic scheme", body: valid, headers: auth("Basic dTpw"), wantCode: 401, challenge: realm},
		{name: "basic scheme in lower case", body: valid, headers: auth("basic dTpw"), wantCode: 401, challenge: realm},
		{name: "negotiate scheme", body: valid, headers: auth("Negotiate YII="), wantCode: 401, challenge: realm},
		{name: "scheme alone", body: valid, headers: auth("Digest"), wantCode: 401, challenge: realm},
		{name: "scheme that begins with Bearer", body: valid, headers: auth("Bearerx y"), wantCode: 401, challenge: realm},
		{name: "empty bearer", body: valid, headers: auth("Bearer"), wantCode: 401, challenge: badAuthValue},
		{name: "token with a space", body: valid, headers: auth("Bearer " + testToken + " x"), wantCode: 401, challenge: badAuthValue},
		{name: "auth before content type", body: `nonsense`, headers: hdr{"Authorization": "", "Content-Type": "text/plain"},
			wantCode: 401, challenge: realm, reason: "credentials are checked before anything else"},
		{name: "no Content-Type", body: valid, headers: hdr{"Content-Type": ""}, wantCode: 415},
		{name: "text/plain", body: valid, headers: hdr{"Content-Type": "text/plain"}, wantCode: 415},
		{name: "json suffix type", body: valid, headers: hdr{"Content-Type": "application/merge-patch+json"}, wantCode: 415},
		{name: "gzip encoding", body: valid, headers: hdr{"Content-Encoding": "gzip"}, wantCode: 415},
		{name: "over the limit", body: big, wantCode: 413},
		{name: "not JSON", body: `id=1&name=x`, wantCode: 400, reason: "a *syntaxError"},
		{name: "NUL in name", body: `{"id":1,"name":"a\u0000b"}`, wantCode: 400, reason: "decoded, then refused by NewPlant.Validate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			r := e.do("POST", "/plants", tt.headers, tt.body)
			wantIDs := []int64{}
			if tt.wantCode == 0 {
				r.wantOK(t, "create")
				checkCreated(t, e.ps, tt.want, &http.Response{Header: r.header}, r.body)
				wantIDs = []int64{tt.want.ID}
			} else if we := r.wantError(t, http.StatusBadRequest, tt.wantCode); strings.Contains(we.Message, testToken) {
				t.Errorf("the token leaked into the message %q", we.Message)
			}
			if got := r.header.Get("WWW-Authenticate"); got != tt.challenge {
				t.Errorf("WWW-Authenticate = %q, want %q", got, tt.challenge)
			}
			if strings.Contains(e.logs.String(), testToken) {
				t.Errorf("the token leaked into the log")
			}
			if diff := cmp.Diff(wantIDs, storedIDs(t, e.ps)); diff != "" {
				t.Errorf("stored ids mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFailsClosed checks that a handler given no way to authenticate
// refuses every request that needs a token, and that
// InsecureWithoutAuthentication serves them without one.
func TestFailsClosed(t *testing.T) {
	t.Parallel()
	ps := plantstore.New(memstore.New())
	e := serveEnv(t, httpapi.New(ps, discardLog), ps)
	e.do("POST", "/plants", nil, `{"id":1,"name":"x"}`).wantError(t, 400, 401)
	e.do("POST", "/plants", noToken, `{"id":1,"name":"x"}`).wantError(t, 400, 401)
	e.do("GET", "/plants", nil, ``).wantError(t, 400, 401)
	if diff := cmp.Diff([]int64{}, storedIDs(t, e.ps)); diff != "" {
		t.Errorf("store changed (-want +got):\n%s", diff)
	}
	insecure := newEnv(t, nil, httpapi.InsecureWithoutAuthentication())
	insecure.do("POST", "/plants", noToken, `{"id":1,"name":"x"}`).wantOK(t, "create without authentication")
}

// TestStorageFailures checks that a create the storage fails is answered
// with the Error of its kind, the cause logged and not shown; that a 503
// says when to come back (the writes have just begun failing: GET
// /readyz's is TestReadyzFollowsWrites's); and that the server keeps
// serving, GET /healthz with 200. Both probes answer 200 without a token
// when all is well: that is TestHooks's.
func TestStorageFailures(t *testing.T) {
	t.Parallel()
	secret := "db password is hunter2"
	tests := []struct {
		name     string
		err      error
		wantCode int
		wantLog  string
	}{
		{"unavailable", fmt.Errorf("dial: %s: %w", secret, plantstore.ErrUnavailable), 503, secret},
		{"outcome unknown", fmt.Errorf("commit: %s: %w", secret, plantstore.ErrOutcomeUnknown), 504, secret},
		{"unknown failure", errors.New(secret), 500, secret},
		{"panic", nil, 500, "storage exploded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, &faultyStorage{Store: memstore.New(), err: tt.err})
			r := e.do("POST", "/plants", nil, `{"id":1,"name":"x"}`)
			we := r.wantError(t, 400, tt.wantCode)
			wantRetryAfter := ""
			if tt.wantCode == 503 {
				wantRetryAfter = "1"
			}
			if got := r.header.Get("Retry-After"); got != wantRetryAfter {
				t.Errorf("Retry-After = %q, want %q", got, wantRetryAfter)
			}
			if strings.Contains(we.Message, "hunter2") || strings.Contains(we.Message, "exploded") {
				t.Errorf("message %q leaks the cause", we.Message)
			}
			if !strings.Contains(e.logs.String(), tt.wantLog) {
				t.Errorf("log does not hold the cause %q:\n%s", tt.wantLog, e.logs.String())
			}
			e.do("GET", "/healthz", noToken, ``).wantOK(t, "healthz after the failure")
		})
	}
}

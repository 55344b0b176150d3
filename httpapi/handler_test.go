package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/memstore"
)

const testToken = "s3cret-Token_1"

type testEnv struct {
	t      *testing.T
	url    string
	ps     *plantstore.PlantStore
	client *http.Client
	logs   *testkit.Buffer
}

// newEnv serves a handler over storage s (memory storage when nil) on a
// real loopback server. Unless opts say otherwise it accepts testToken.
func newEnv(t *testing.T, s plantstore.Storage, opts ...httpapi.Option) *testEnv {
	t.Helper()
	if s == nil {
		s = memstore.New()
	}
	logs := &testkit.Buffer{}
	ps := plantstore.New(s)
	opts = append([]httpapi.Option{
		httpapi.WithTokens(testToken),
		httpapi.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
	}, opts...)
	e := serveEnv(t, httpapi.New(ps, opts...), ps)
	e.logs = logs
	return e
}

// serveEnv serves h, a handler over ps, on a real loopback server. Every
// response is validated against the OpenAPI document.
func serveEnv(t *testing.T, h http.Handler, ps *plantstore.PlantStore) *testEnv {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &testEnv{t: t, url: srv.URL, ps: ps, logs: &testkit.Buffer{},
		client: &http.Client{Transport: validatingTransport{t: t}}}
}

var discardLog = httpapi.WithLogger(slog.New(slog.DiscardHandler))

// newHandler is a handler over storage s (memory storage when nil),
// accepting testToken and logging nowhere unless opts say otherwise.
func newHandler(s plantstore.Storage, opts ...httpapi.Option) http.Handler {
	if s == nil {
		s = memstore.New()
	}
	return httpapi.New(plantstore.New(s), append([]httpapi.Option{httpapi.WithTokens(testToken), discardLog}, opts...)...)
}

func serve(h http.Handler, req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// do sends a request; headers "Authorization" and "Content-Type" default to
// the test token and application/json, and an empty value removes one.
func (e *testEnv) do(method, path string, headers map[string]string, body string) response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	setHeaders(req.Header, headers)
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, b}
}

// hdr is a request's headers, for [setHeaders].
type hdr = map[string]string

var noToken = hdr{"Authorization": ""}

// setHeaders gives h the test token and the JSON Content-Type, then
// headers, where an empty value removes one.
func setHeaders(h http.Header, headers map[string]string) {
	h.Set("Authorization", "Bearer "+testToken)
	h.Set("Content-Type", "application/json")
	for k, v := range headers {
		if v == "" {
			h.Del(k)
		} else {
			h.Set(k, v)
		}
	}
}

// newRequest is an in-process request with headers as [setHeaders] sets them.
func newRequest(method, target string, headers map[string]string, body io.Reader) *http.Request {
	req := httptest.NewRequest(method, target, body)
	setHeaders(req.Header, headers)
	return req
}

// panicMessage returns what f panics with, or "" when it does not.
func panicMessage(f func()) (msg string) {
	defer func() {
		if v := recover(); v != nil {
			msg = fmt.Sprint(v)
		}
	}()
	f()
	return ""
}

// wireError is the contract's Error, decoded strictly.
type wireError struct {
	Error   int32  `json:"error"`
	Message string `json:"message"`
}

// checkErrorShape fails t unless resp is an Error with exactly the members
// "error" (an int32) and "message" (a non-empty string), strictly JSON (no
// duplicate names, valid UTF-8), under one Content-Type, JSON.
func checkErrorShape(t *testing.T, resp *http.Response, body []byte) wireError {
	t.Helper()
	if ct := resp.Header.Values("Content-Type"); len(ct) != 1 || ct[0] != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var members map[string]jsontext.Value
	if err := jsonv2.Unmarshal(body, &members); err != nil || len(members) != 2 ||
		members["error"].Kind() != '0' || members["message"].Kind() != '"' {
		t.Fatalf("body %s is not an Error with exactly a number error and a string message (%v)", body, err)
	}
	var we wireError
	if err := jsonv2.Unmarshal(body, &we); err != nil || we.Message == "" {
		t.Fatalf("body %s: an int32 error and a non-empty message wanted (%v)", body, err)
	}
	return we
}

// wantOK stops t unless r is a 200; what (a format for args) says which
// request it answers.
func (r response) wantOK(t *testing.T, what string, args ...any) response {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("%s: status %d, want 200 (body %s)", fmt.Sprintf(what, args...), r.status, r.body)
	}
	return r
}

func (r response) wantError(t *testing.T, status, code int) wireError {
	t.Helper()
	if r.status != status {
		t.Errorf("status = %d, want %d (body %s)", r.status, status, r.body)
	}
	we := checkErrorShape(t, &http.Response{Header: r.header}, r.body)
	if int(we.Error) != code {
		t.Errorf("error code = %d, want %d (body %s)", we.Error, code, r.body)
	}
	return we
}

// storedIDs lists the ids ps stores, up to plantstore.MaxListLimit.
func storedIDs(t *testing.T, ps *plantstore.PlantStore) []int64 {
	t.Helper()
	plants, err := ps.List(context.Background(), plantstore.ListOptions{Limit: plantstore.MaxListLimit})
	if err != nil {
		t.Fatal(err)
	}
	ids := []int64{}
	for _, p := range plants {
		ids = append(ids, p.ID)
	}
	return ids
}

// The WWW-Authenticate challenges of a 401.
const (
	realm        = `Bearer realm="plantstore"`
	badToken     = realm + `, error="invalid_token", error_description="the access token is not valid"`
	badAuthValue = realm + `, error="invalid_request", error_description="malformed Authorization header"`
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
		// What the decoder takes, and refuses, is TestDecodeNewPlant's, and
		// how a plant is written, byte for byte, TestAppendPlant's; these
		// rows show a create's round trip, and that refusals are the Error
		// 400.
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
		{name: "empty body", body: ``, wantCode: 400},
		{name: "not JSON", body: `id=1&name=x`, wantCode: 400},
		{name: "missing name", body: `{"id":1}`, wantCode: 400},
		{name: "invalid UTF-8", body: "{\"id\":1,\"name\":\"\xff\"}", wantCode: 400},
		{name: "NUL in name", body: `{"id":1,"name":"a\u0000b"}`, wantCode: 400, reason: "no durable storage keeps it exactly"},
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

// TestConventionalStatus checks that WithConventionalStatus answers each
// Error with its code as the status (401 is TestAuthenticatorOutcomes's,
// 404 and 405 TestRouting's), and that a conflicting create leaves the
// plant as it was.
func TestConventionalStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil, httpapi.WithConventionalStatus())
	e.do("POST", "/plants", hdr{"Content-Type": "text/plain"}, `{}`).wantError(t, 415, 415)
	e.do("POST", "/plants", nil, `{`).wantError(t, 400, 400)
	e.do("POST", "/plants", nil, `{"id":1,"name":"first","tag":"a"}`).wantOK(t, "create")
	e.do("POST", "/plants", nil, `{"id":1,"name":"second"}`).wantError(t, 409, 409)
	got, err := e.ps.Plant(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(plantstore.Plant{ID: 1, Name: "first", Tag: "a", HasTag: true}, got); diff != "" {
		t.Errorf("a conflicting create changed the plant (-want +got):\n%s", diff)
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

// faultyStorage answers Create with err, or panics when err is nil.
type faultyStorage struct {
	*memstore.Store
	err error
}

func (f *faultyStorage) Create(ctx context.Context, p plantstore.Plant) error {
	if f.err == nil {
		panic("storage exploded")
	}
	return f.err
}

func (f *faultyStorage) Ping(ctx context.Context) error { return f.err }

// TestStorageFailures checks that a create the storage fails is answered
// with the Error of its kind, the cause logged and not shown; that every
// 503 says when to come back (the writes have just begun failing), GET
// /readyz's too; and that the server keeps serving, GET /healthz with 200.
// Both probes answer 200 without a token when all is well: that is
// TestHooks's.
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
				ready := e.do("GET", "/readyz", noToken, ``)
				ready.wantError(t, 400, 503)
				if got := ready.header.Get("Retry-After"); got != "1" {
					t.Errorf("GET /readyz with storage down: Retry-After = %q, want 1", got)
				}
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

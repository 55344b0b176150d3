package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

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

// recorded is the response rec holds.
func recorded(rec *httptest.ResponseRecorder) response {
	return response{rec.Code, rec.Header(), rec.Body.Bytes()}
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

// checkCreated checks that a 200 answer to a create is exactly the plant
// sent, and that the plant is stored as sent.
func checkCreated(t *testing.T, ps *plantstore.PlantStore, want plantstore.NewPlant, resp *http.Response, body []byte) {
	t.Helper()
	if ct := resp.Header.Values("Content-Type"); len(ct) != 1 || ct[0] != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var members map[string]string
	if err := jsonv2.Unmarshal(body, &members); err != nil {
		t.Fatalf("200 body %s is not an object of strings: %v", body, err)
	}
	wantMembers := map[string]string{"name": want.Name}
	if want.HasTag {
		wantMembers["tag"] = want.Tag
	}
	if diff := cmp.Diff(wantMembers, members); diff != "" {
		t.Errorf("200 body %s is not the plant sent (-want +got):\n%s", body, diff)
	}
	stored, err := ps.Plant(context.Background(), want.ID)
	if err != nil {
		t.Fatalf("plant %d answered 200 but is not stored: %v", want.ID, err)
	}
	if diff := cmp.Diff(plantstore.Plant(want), stored); diff != "" {
		t.Errorf("stored plant (-want +got):\n%s", diff)
	}
}

type listedPlant struct {
	ID   int64   `json:"id"`
	Name string  `json:"name"`
	Tag  *string `json:"tag,omitempty"`
}

func (e *testEnv) list(query string) ([]listedPlant, response) {
	e.t.Helper()
	r := e.do("GET", "/plants"+query, nil, "")
	if r.status != http.StatusOK {
		return nil, r
	}
	var page []listedPlant
	if err := json.Unmarshal(r.body, &page); err != nil || page == nil {
		e.t.Fatalf("GET /plants%s: body %s is not a JSON array: %v", query, r.body, err)
	}
	return page, r
}

type accessLine struct {
	Time      time.Time
	Level     string
	Msg       string
	Method    string
	Path      string
	Status    int
	Duration  time.Duration
	RequestID string `json:"request_id"`
	TraceID   string `json:"trace_id"`
	Error     int
}

func accessLines(t *testing.T, out string) []accessLine {
	t.Helper()
	var lines []accessLine
	for _, s := range strings.SplitAfter(out, "\n") {
		if s == "" {
			continue
		}
		var l accessLine
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Fatalf("an access line does not decode: %v: %q", err, s)
		}
		lines = append(lines, l)
	}
	return lines
}

// send serves one request with h, with the bearer token auth unless it is
// "", and returns the X-Request-Id answered.
func send(h http.Handler, method, target, auth, requestID, body string) string {
	if auth != "" {
		auth = "Bearer " + auth
	}
	req := newRequest(method, target, hdr{"Authorization": auth, "X-Request-Id": requestID}, strings.NewReader(body))
	return serve(h, req).Header().Get("X-Request-Id")
}

// generatedID is the form of a request id the handler makes up.
var generatedID = regexp.MustCompile(`^[0-9a-f]{32}$`)

// metricsHandler and docsHandler stand in for a host's metrics and API
// reference; docsHandler answers /docs/unknown.js 404.
var (
	metricsHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		io.WriteString(w, "plantstore_up 1\n")
	})
	docsHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		if r.URL.Path == "/docs/unknown.js" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, "docs at "+r.URL.Path)
	})
)

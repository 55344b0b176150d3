package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/client"
	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/memstore"
)

// failing is storage whose every call returns err.
type failing struct{ err error }

func (f failing) Create(context.Context, plantstore.Plant) error { return f.err }
func (f failing) Plant(context.Context, int64) (plantstore.Plant, error) {
	return plantstore.Plant{}, f.err
}
func (f failing) List(context.Context, int64, int) ([]plantstore.Plant, error) { return nil, f.err }
func (f failing) Delete(context.Context, int64) error                          { return f.err }
func (f failing) Ping(context.Context) error                                   { return f.err }

// rewrite is an http.RoundTripper that changes each request before
// sending it, so that a test can make requests the client never makes.
type rewrite func(*http.Request)

func (f rewrite) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	f(r)
	return http.DefaultTransport.RoundTrip(r)
}

// rewriting makes the client send each request through f.
func rewriting(f func(*http.Request)) client.Option {
	return client.WithHTTPClient(&http.Client{Transport: rewrite(f)})
}

// withBody makes each request carry body instead of its own.
func withBody(body string) client.Option {
	return rewriting(func(r *http.Request) {
		r.Body = io.NopCloser(strings.NewReader(body))
		r.ContentLength = int64(len(body))
		r.GetBody = nil
	})
}

var sentinels = []error{plantstore.ErrConflict, plantstore.ErrNotFound, plantstore.ErrUnavailable, plantstore.ErrOutcomeUnknown,
	client.ErrUnauthorized, client.ErrForbidden}

// withURL makes each request go to the path and query that f returns
// for its own.
func withURL(f func(path, query string) (string, string)) client.Option {
	return rewriting(func(r *http.Request) {
		r.URL.Path, r.URL.RawQuery = f(r.URL.Path, r.URL.RawQuery)
		r.URL.RawPath = ""
	})
}

// withQuery makes each request carry query instead of its own.
func withQuery(query string) client.Option {
	return withURL(func(path, _ string) (string, string) { return path, query })
}

// forbidding is an authenticator that knows every caller and lets none
// use the API.
var forbidding = httpapi.AuthenticatorFunc(func(*http.Request, string) error {
	return fmt.Errorf("read-only caller: %w", httpapi.ErrForbidden)
})

// TestErrorsFromServer drives the real handler into each failure and
// checks the error each call returns, in both status modes.
func TestErrorsFromServer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		storage   plantstore.Storage // nil: memory storage holding plant 1
		sopt      httpapi.Option     // for the server
		path      string             // appended to the server's URL for the client's base URL
		copt      client.Option      // for the client
		call      op
		wantCode  int
		wantIs    error // a plantstore sentinel, or nil for none
		wantValid *plantstore.ValidationError
		reason    string
	}{
		{name: "duplicate id", call: create(1, "again"), wantCode: 409, wantIs: plantstore.ErrConflict},
		{name: "read missing", call: read(2), wantCode: 404, wantIs: plantstore.ErrNotFound},
		{name: "delete missing", call: del(2), wantCode: 404, wantIs: plantstore.ErrNotFound},
		{name: "wrong prefix", path: "/nowhere", call: read(1), wantCode: 404,
			reason: "a path the server does not serve is not a missing plant"},
		{name: "wrong token", copt: client.WithToken("wrong"), call: create(2, "a"), wantCode: 401, wantIs: client.ErrUnauthorized},
		{name: "malformed Authorization", call: read(1), wantCode: 401, wantIs: client.ErrUnauthorized,
			copt:   rewriting(func(r *http.Request) { r.Header.Set("Authorization", "Basic "+token) }),
			reason: "refused before the authenticator is asked, with the same code"},
		{name: "forbidden", sopt: httpapi.WithAuthenticator(forbidding), call: read(1),
			wantCode: 403, wantIs: client.ErrForbidden, reason: "known credentials that may not use the API"},
		{name: "authentication unavailable", call: read(1), wantCode: 503, wantIs: plantstore.ErrUnavailable,
			sopt:   httpapi.WithAuthenticator(httpapi.TokenAuthenticatorFunc(func(context.Context, string) error { return errUnavailable })),
			reason: "a backend that is down refused no one"},
		{name: "limit negative", call: list(-1), wantCode: 400,
			wantValid: &plantstore.ValidationError{Field: "limit", Reason: "must be an integer from 1 to 1000"}},
		{name: "limit given twice", copt: withQuery("limit=1&limit=2"), call: list(0), wantCode: 400,
			wantValid: &plantstore.ValidationError{Field: "limit", Reason: "given more than once"}},
		{name: "after not an integer", copt: withQuery("after=x"), call: list(0), wantCode: 400,
			wantValid: &plantstore.ValidationError{Field: "after", Reason: "must be a 64-bit signed integer in canonical decimal form"},
			reason:    "the client never sends it, but the server validates after as it does limit"},
		{name: "id in the path not canonical", call: read(1), wantCode: 400,
			copt:      withURL(func(path, query string) (string, string) { return strings.TrimSuffix(path, "/1") + "/01", query }),
			wantValid: &plantstore.ValidationError{Field: "id", Reason: "must be a 64-bit signed integer in canonical decimal form"},
			reason:    "the id of a plant's path is the same field as the id of a NewPlant"},
		{name: "body too large", sopt: httpapi.WithMaxBodyBytes(64), call: create(2, strings.Repeat("n", 100)), wantCode: 413},
		{name: "id not an integer", copt: withBody(`{"id":"2","name":"a"}`), call: create(2, "a"), wantCode: 400,
			wantValid: &plantstore.ValidationError{Field: "id", Reason: "must be an integer"},
			reason:    "the client never sends it: the request is rewritten on its way"},
		{name: "name missing", copt: withBody(`{"id":2}`), call: create(2, "a"), wantCode: 400,
			wantValid: &plantstore.ValidationError{Field: "name", Reason: "is required"}},
		{name: "tag null", copt: withBody(`{"id":2,"name":"a","tag":null}`), call: create(2, "a"), wantCode: 400,
			wantValid: &plantstore.ValidationError{Field: "tag", Reason: "must be a string"}},
		{name: "malformed JSON", copt: withBody(`{"id":2,`), call: create(2, "a"), wantCode: 400, reason: "a syntax error names no field"},
		{name: "malformed query", copt: withQuery("limit=%zz"), call: list(0), wantCode: 400, reason: "names no field either"},
		{name: "no Content-Type", call: create(2, "a"), wantCode: 415,
			copt: rewriting(func(r *http.Request) { r.Header.Del("Content-Type") })},
		{name: "create, storage unavailable", storage: failing{errUnavailable}, call: create(2, "a"),
			wantCode: 503, wantIs: plantstore.ErrUnavailable},
		{name: "read, storage unavailable", storage: failing{errUnavailable}, call: read(2),
			wantCode: 503, wantIs: plantstore.ErrUnavailable},
		{name: "ping, storage unavailable", storage: failing{errUnavailable}, call: ping,
			wantCode: 503, wantIs: plantstore.ErrUnavailable},
		{name: "create, outcome unknown", storage: failing{errUnknown}, call: create(2, "a"),
			wantCode: 504, wantIs: plantstore.ErrOutcomeUnknown},
		{name: "delete, outcome unknown", storage: failing{errUnknown}, call: del(2),
			wantCode: 504, wantIs: plantstore.ErrOutcomeUnknown},
		{name: "internal error", storage: failing{errors.New("disk on fire")}, call: create(2, "a"), wantCode: 500},
	}
	for _, mode := range modes {
		for _, tt := range tests {
			t.Run(mode.name+"/"+tt.name, func(t *testing.T) {
				s := tt.storage
				if s == nil {
					ms := memstore.New()
					if err := ms.Create(t.Context(), plantstore.Plant{ID: 1, Name: "Monstera"}); err != nil {
						t.Fatal(err)
					}
					s = ms
				}
				sopts, copts := mode.opts, []client.Option{}
				if tt.sopt != nil {
					sopts = append(slices.Clone(sopts), tt.sopt)
				}
				if tt.copt != nil {
					copts = append(copts, tt.copt)
				}
				srv, _ := serve(t, newHandler(s, sopts...))
				c := newClient(t, srv.URL+tt.path, copts...)

				err := tt.call(t.Context(), c)
				if ce := checkError(t, err, tt.wantCode, tt.wantIs); ce.StatusCode != mode.status(tt.wantCode) || ce.Message == "" {
					t.Errorf("status %d and message %q, want %d and a message", ce.StatusCode, ce.Message, mode.status(tt.wantCode))
				}
				ve, ok := errors.AsType[*plantstore.ValidationError](err)
				if !ok {
					ve = nil
				}
				if diff := cmp.Diff(tt.wantValid, ve); diff != "" {
					t.Errorf("ValidationError mismatch (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// checkSentinel checks that err is want and no other plantstore
// sentinel; a nil want means none.
func checkSentinel(t *testing.T, err, want error) {
	t.Helper()
	for _, s := range sentinels {
		if got := errors.Is(err, s); got != (s == want) {
			t.Errorf("errors.Is(%v, %v) = %v, want %v", err, s, got, !got)
		}
	}
}

// TestErrorsWithoutBody answers as a proxy or load balancer would, with
// a status and a page that is not an Error, and as a server of another
// kind would, with JSON that is not an Error.
func TestErrorsWithoutBody(t *testing.T) {
	t.Parallel()
	const page = "<html><body><h1>Bad things</h1></body></html>"
	create, read, del := create(1, "a"), read(1), del(1)
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		call        op
		wantCode    int
		wantMessage string
		wantIs      error
		reason      string
	}{
		{name: "create 502", status: 502, body: page, call: create, wantCode: 502, wantIs: plantstore.ErrOutcomeUnknown,
			reason: "the gateway may have lost the server's answer"},
		{name: "delete 504", status: 504, body: page, call: del, wantCode: 504, wantIs: plantstore.ErrOutcomeUnknown},
		{name: "create 503", status: 503, body: page, call: create, wantCode: 503, wantIs: plantstore.ErrOutcomeUnknown,
			reason: "a proxy may answer 503 after it forwarded the request; only the server's Error promises nothing was kept"},
		{name: "read 503", status: 503, body: page, call: read, wantCode: 503, wantIs: plantstore.ErrUnavailable},
		{name: "read 502", status: 502, body: page, call: read, wantCode: 502, wantIs: plantstore.ErrUnavailable,
			reason: "a read has no outcome to be unknown"},
		{name: "read 504", status: 504, body: page, call: read, wantCode: 504, wantIs: plantstore.ErrUnavailable},
		{name: "read 404", status: 404, body: page, call: read, wantCode: 404,
			reason: "not the plantstore server's answer: perhaps a wrong base URL"},
		{name: "create 409", status: 409, body: page, call: create, wantCode: 409, wantIs: plantstore.ErrConflict},
		{name: "create 500", status: 500, body: page, call: create, wantCode: 500},
		{name: "read 401", status: 401, body: page, call: read, wantCode: 401, wantIs: client.ErrUnauthorized,
			reason: "a proxy in front that refuses the credentials refuses them as the server would"},
		{name: "create 403", status: 403, body: page, call: create, wantCode: 403, wantIs: client.ErrForbidden},
		{name: "Error 403 in a 400", status: 400, contentType: "application/json",
			body: `{"error":403,"message":"forbidden"}`, call: read, wantCode: 403, wantMessage: "forbidden",
			wantIs: client.ErrForbidden, reason: "the code comes from the body, as the contract's server sends it"},
		{name: "JSON error that is not an Error", status: 502, contentType: "application/json",
			body: `{"error":"bad gateway","message":"upstream"}`, call: create, wantCode: 502, wantIs: plantstore.ErrOutcomeUnknown},
		{name: "Error body without Content-Type", status: 400, contentType: "text/plain",
			body: `{"error":409,"message":"a plant with this id already exists"}`, call: create, wantCode: 409,
			wantMessage: "a plant with this id already exists", wantIs: plantstore.ErrConflict,
			reason: "the code comes from the body whatever the headers say"},
		{name: "400 with an invalid-looking page", status: 400, body: "invalid name: no", call: create, wantCode: 400,
			reason: "only an Error body's message names a field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ct, wantMessage := tt.contentType, tt.wantMessage
			if ct == "" {
				ct = "text/html"
			}
			if wantMessage == "" {
				wantMessage = http.StatusText(tt.status)
			}
			srv, requests := serveAnswer(t, tt.status, ct, tt.body)
			ce := checkError(t, tt.call(t.Context(), newClient(t, srv.URL)), tt.wantCode, tt.wantIs)
			if got := []any{ce.StatusCode, ce.Message}; !cmp.Equal(got, []any{tt.status, wantMessage}) {
				t.Errorf("status, message = %v, want %v", got, []any{tt.status, wantMessage})
			}
			wantCount(t, requests, 1, "requests (retries are off)")
		})
	}
}

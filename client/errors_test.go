package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
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

// withBody makes each request carry body instead of its own.
func withBody(body string) client.Option {
	return client.WithHTTPClient(&http.Client{Transport: rewrite(func(r *http.Request) {
		r.Body = io.NopCloser(strings.NewReader(body))
		r.ContentLength = int64(len(body))
		r.GetBody = nil
	})})
}

var sentinels = []error{plantstore.ErrConflict, plantstore.ErrNotFound, plantstore.ErrUnavailable, plantstore.ErrOutcomeUnknown,
	client.ErrUnauthorized, client.ErrForbidden}

// rewriteURL makes each request go to the path and query that f returns
// for its own.
func rewriteURL(f func(path, query string) (string, string)) client.Option {
	return client.WithHTTPClient(&http.Client{Transport: rewrite(func(r *http.Request) {
		r.URL.Path, r.URL.RawQuery = f(r.URL.Path, r.URL.RawQuery)
		r.URL.RawPath = ""
	})})
}

// withQuery makes each request carry query instead of its own.
func withQuery(query string) client.Option {
	return rewriteURL(func(path, _ string) (string, string) { return path, query })
}

// forbidding is an authenticator that knows every caller and lets none
// use the API.
var forbidding = httpapi.AuthenticatorFunc(func(*http.Request, string) error {
	return fmt.Errorf("read-only caller: %w", httpapi.ErrForbidden)
})

// TestErrorsFromServer drives the real handler into each failure and
// checks the error each call returns, in both status modes.
//
// Most of its length is its table of cases; the checks are one loop.
func TestErrorsFromServer(t *testing.T) {
	t.Parallel()
	unavailable := fmt.Errorf("db down: %w", plantstore.ErrUnavailable)
	unknown := fmt.Errorf("connection lost during commit: %w", plantstore.ErrOutcomeUnknown)
	create := func(id int64, name string) func(context.Context, *client.Client) error {
		return func(ctx context.Context, c *client.Client) error {
			_, err := c.Create(ctx, plantstore.NewPlant{ID: id, Name: name})
			return err
		}
	}
	read := func(id int64) func(context.Context, *client.Client) error {
		return func(ctx context.Context, c *client.Client) error {
			_, err := c.Plant(ctx, id)
			return err
		}
	}
	list := func(limit int) func(context.Context, *client.Client) error {
		return func(ctx context.Context, c *client.Client) error {
			_, err := c.List(ctx, plantstore.ListOptions{Limit: limit})
			return err
		}
	}
	del := func(id int64) func(context.Context, *client.Client) error {
		return func(ctx context.Context, c *client.Client) error { return c.Delete(ctx, id) }
	}
	ping := func(ctx context.Context, c *client.Client) error { return c.Ping(ctx) }

	tests := []struct {
		name       string
		storage    plantstore.Storage // nil: memory storage holding plant 1
		serverOpts []httpapi.Option
		path       string // appended to the server's URL for the client's base URL
		clientOpts []client.Option
		call       func(context.Context, *client.Client) error
		wantCode   int
		wantIs     error // a plantstore sentinel, or nil for none
		wantValid  *plantstore.ValidationError
		reason     string
	}{
		{name: "duplicate id", call: create(1, "again"), wantCode: 409, wantIs: plantstore.ErrConflict},
		{name: "read missing", call: read(2), wantCode: 404, wantIs: plantstore.ErrNotFound},
		{name: "delete missing", call: del(2), wantCode: 404, wantIs: plantstore.ErrNotFound},
		{name: "wrong prefix", path: "/nowhere", call: read(1), wantCode: 404,
			reason: "a path the server does not serve is not a missing plant"},
		{name: "wrong token", clientOpts: []client.Option{client.WithToken("wrong")}, call: create(2, "a"),
			wantCode: 401, wantIs: client.ErrUnauthorized},
		{name: "no token", clientOpts: []client.Option{client.WithToken("")}, call: read(1),
			wantCode: 401, wantIs: client.ErrUnauthorized},
		{name: "malformed Authorization", call: read(1), wantCode: 401, wantIs: client.ErrUnauthorized,
			clientOpts: []client.Option{client.WithHTTPClient(&http.Client{Transport: rewrite(func(r *http.Request) {
				r.Header.Set("Authorization", "Basic "+token)
			})})},
			reason: "refused before the authenticator is asked, with the same code"},
		{name: "forbidden", serverOpts: []httpapi.Option{httpapi.WithAuthenticator(forbidding)}, call: read(1),
			wantCode: 403, wantIs: client.ErrForbidden, reason: "known credentials that may not use the API"},
		{name: "forbidden create", serverOpts: []httpapi.Option{httpapi.WithAuthenticator(forbidding)}, call: create(2, "a"),
			wantCode: 403, wantIs: client.ErrForbidden, reason: "refused before the body is read: nothing stored"},
		{name: "authentication unavailable", call: read(1), wantCode: 503, wantIs: plantstore.ErrUnavailable,
			serverOpts: []httpapi.Option{httpapi.WithAuthenticator(httpapi.TokenAuthenticatorFunc(
				func(context.Context, string) error { return unavailable }))},
			reason: "a backend that is down refused no one"},
		{name: "limit negative", call: list(-1), wantCode: 400,
			wantValid: &plantstore.ValidationError{Field: "limit", Reason: "must be an integer from 1 to 1000"}},
		{name: "limit over max", call: list(plantstore.MaxListLimit + 1), wantCode: 400,
			wantValid: &plantstore.ValidationError{Field: "limit", Reason: "must be an integer from 1 to 1000"}},
		{name: "limit given twice", clientOpts: []client.Option{withQuery("limit=1&limit=2")}, call: list(0), wantCode: 400,
			wantValid: &plantstore.ValidationError{Field: "limit", Reason: "given more than once"}},
		{name: "after not an integer", clientOpts: []client.Option{withQuery("after=x")}, call: list(0), wantCode: 400,
			wantValid: &plantstore.ValidationError{Field: "after", Reason: "must be a 64-bit signed integer in canonical decimal form"},
			reason:    "the client never sends it, but the server validates after as it does limit"},
		{name: "after given twice", clientOpts: []client.Option{withQuery("after=1&after=2")}, call: list(0), wantCode: 400,
			wantValid: &plantstore.ValidationError{Field: "after", Reason: "given more than once"}},
		{name: "id in the path not canonical", call: read(1), wantCode: 400,
			clientOpts: []client.Option{rewriteURL(func(path, query string) (string, string) {
				return strings.TrimSuffix(path, "/1") + "/01", query
			})},
			wantValid: &plantstore.ValidationError{Field: "id", Reason: "must be a 64-bit signed integer in canonical decimal form"},
			reason:    "the id of a plant's path is the same field as the id of a NewPlant"},
		{name: "body too large", serverOpts: []httpapi.Option{httpapi.WithMaxBodyBytes(64)},
			call: create(2, strings.Repeat("n", 100)), wantCode: 413},
		{name: "id not an integer", clientOpts: []client.Option{withBody(`{"id":"2","name":"a"}`)}, call: create(2, "a"),
			wantCode: 400, wantValid: &plantstore.ValidationError{Field: "id", Reason: "must be an integer"},
			reason: "the client never sends it: the request is rewritten on its way"},
		{name: "name missing", clientOpts: []client.Option{withBody(`{"id":2}`)}, call: create(2, "a"),
			wantCode: 400, wantValid: &plantstore.ValidationError{Field: "name", Reason: "is required"}},
		{name: "tag null", clientOpts: []client.Option{withBody(`{"id":2,"name":"a","tag":null}`)}, call: create(2, "a"),
			wantCode: 400, wantValid: &plantstore.ValidationError{Field: "tag", Reason: "must be a string"}},
		{name: "malformed JSON", clientOpts: []client.Option{withBody(`{"id":2,`)}, call: create(2, "a"), wantCode: 400,
			reason: "a syntax error names no field"},
		{name: "malformed query", clientOpts: []client.Option{withQuery("limit=%zz")}, call: list(0), wantCode: 400,
			reason: "names no field either"},
		{name: "no Content-Type", call: create(2, "a"), wantCode: 415,
			clientOpts: []client.Option{client.WithHTTPClient(&http.Client{Transport: rewrite(func(r *http.Request) {
				r.Header.Del("Content-Type")
			})})}},
		{name: "create, storage unavailable", storage: failing{unavailable}, call: create(2, "a"),
			wantCode: 503, wantIs: plantstore.ErrUnavailable},
		{name: "read, storage unavailable", storage: failing{unavailable}, call: read(2),
			wantCode: 503, wantIs: plantstore.ErrUnavailable},
		{name: "list, storage unavailable", storage: failing{unavailable}, call: list(0),
			wantCode: 503, wantIs: plantstore.ErrUnavailable},
		{name: "ping, storage unavailable", storage: failing{unavailable}, call: ping,
			wantCode: 503, wantIs: plantstore.ErrUnavailable},
		{name: "create, outcome unknown", storage: failing{unknown}, call: create(2, "a"),
			wantCode: 504, wantIs: plantstore.ErrOutcomeUnknown},
		{name: "delete, outcome unknown", storage: failing{unknown}, call: del(2),
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
				srv, _ := serve(t, newHandler(s, append(mode.opts, tt.serverOpts...)...))
				c := newClient(t, srv.URL+tt.path, tt.clientOpts...)

				err := tt.call(t.Context(), c)
				ce, ok := errors.AsType[*client.Error](err)
				if !ok {
					t.Fatalf("error %v (%T), want a *client.Error", err, err)
				}
				got := []any{ce.StatusCode, ce.Code}
				if diff := cmp.Diff([]any{mode.status(tt.wantCode), tt.wantCode}, got); diff != "" {
					t.Errorf("status, code mismatch (-want +got):\n%s", diff)
				}
				if ce.Message == "" {
					t.Errorf("the error has no message")
				}
				checkSentinel(t, err, tt.wantIs)
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
//
// Most of its length is its table of cases; the checks are one loop.
func TestErrorsWithoutBody(t *testing.T) {
	t.Parallel()
	const page = "<html><body><h1>Bad things</h1></body></html>"
	create := func(ctx context.Context, c *client.Client) error {
		_, err := c.Create(ctx, plantstore.NewPlant{ID: 1, Name: "a"})
		return err
	}
	read := func(ctx context.Context, c *client.Client) error {
		_, err := c.Plant(ctx, 1)
		return err
	}
	del := func(ctx context.Context, c *client.Client) error { return c.Delete(ctx, 1) }
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		call        func(context.Context, *client.Client) error
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
			srv, requests := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ct := tt.contentType
				if ct == "" {
					ct = "text/html"
				}
				w.Header().Set("Content-Type", ct)
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			c := newClient(t, srv.URL)
			err := tt.call(t.Context(), c)
			ce, ok := errors.AsType[*client.Error](err)
			if !ok {
				t.Fatalf("error %v (%T), want a *client.Error", err, err)
			}
			wantMessage := tt.wantMessage
			if wantMessage == "" {
				wantMessage = http.StatusText(tt.status)
			}
			got := []any{ce.StatusCode, ce.Code, ce.Message}
			if diff := cmp.Diff([]any{tt.status, tt.wantCode, wantMessage}, got); diff != "" {
				t.Errorf("status, code, message mismatch (-want +got):\n%s", diff)
			}
			checkSentinel(t, err, tt.wantIs)
			if n := requests.Load(); n != 1 {
				t.Errorf("%d requests, want 1 (retries are off)", n)
			}
		})
	}
}

// TestErrorMessage checks that an Error's text carries the code and the
// server's message.
func TestErrorMessage(t *testing.T) {
	t.Parallel()
	ms := memstore.New()
	srv, _ := serve(t, newHandler(ms))
	c := newClient(t, srv.URL)
	if _, err := c.Create(t.Context(), plantstore.NewPlant{ID: 1, Name: "a"}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Create(t.Context(), plantstore.NewPlant{ID: 1, Name: "a"})
	const want = "client: error 409: a plant with this id already exists"
	if err == nil || err.Error() != want {
		t.Errorf("error text %q, want %q", err, want)
	}
}

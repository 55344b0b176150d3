package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/client"
	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/memstore"
)

const token = "s3cret"

// modes are the server's two ways of answering failures.
var modes = []struct {
	name string
	opts []httpapi.Option
	// status is the HTTP status of an error with code code.
	status func(code int) int
}{
	{"contract", nil, func(int) int { return http.StatusBadRequest }},
	{"conventional", []httpapi.Option{httpapi.WithConventionalStatus()}, func(code int) int { return code }},
}

// mounts are modes at the root, and the handler mounted under /api/ as a
// host server would, the base URL given with and without its final slash.
func mounts() []mount {
	ms := []mount{{"/api", nil, "/api"}, {"/api/", nil, "/api/"}}
	for _, m := range modes {
		ms = append(ms, mount{m.name, m.opts, ""})
	}
	return ms
}

type mount struct {
	name string
	opts []httpapi.Option
	base string // "" for the root
}

// serveAt serves h as serve does, mounted under /api/ unless m.base is "",
// failing the test on a request outside the mount, and returns the base
// URL of a client.
func serveAt(t *testing.T, h http.Handler, m mount) (string, *atomic.Int64) {
	t.Helper()
	if m.base != "" {
		mux := http.NewServeMux()
		mux.Handle("/api/", http.StripPrefix("/api", h))
		mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			t.Errorf("request outside the prefix: %s %s", r.Method, r.URL)
			http.NotFound(w, r)
		}))
		h = mux
	}
	srv, n := serve(t, h)
	return srv.URL + m.base, n
}

// newHandler returns the real handler over s, accepting token.
func newHandler(s plantstore.Storage, opts ...httpapi.Option) http.Handler {
	opts = append([]httpapi.Option{
		httpapi.WithTokens(token),
		httpapi.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))),
	}, opts...)
	return httpapi.New(plantstore.New(s), opts...)
}

// serve starts h on a loopback server for the test's duration, counting
// the requests it gets.
func serve(t testing.TB, h http.Handler) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// wantCount fails t unless c counts want; what names what c counts.
func wantCount(t *testing.T, c *atomic.Int64, want int64, what string) {
	t.Helper()
	if n := c.Load(); n != want {
		t.Errorf("%d %s, want %d", n, what, want)
	}
}

// newClient returns a client of baseURL with the test token and no
// retries, then opts.
func newClient(t testing.TB, baseURL string, opts ...client.Option) *client.Client {
	t.Helper()
	opts = append([]client.Option{client.WithToken(token), client.WithRetry(client.RetryPolicy{})}, opts...)
	c, err := client.New(baseURL, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// An op calls one Client method and returns its error alone.
type op func(context.Context, *client.Client) error

// create, read, list and del return the ops of Create, Plant, List and
// Delete with their arguments; ping is Ping's, and all reads All to the
// end or its first error.
func create(id int64, name string) op {
	return func(ctx context.Context, c *client.Client) error {
		_, err := c.Create(ctx, plantstore.NewPlant{ID: id, Name: name})
		return err
	}
}

func read(id int64) op {
	return func(ctx context.Context, c *client.Client) error {
		_, err := c.Plant(ctx, id)
		return err
	}
}

func list(limit int) op {
	return func(ctx context.Context, c *client.Client) error {
		_, err := c.List(ctx, plantstore.ListOptions{Limit: limit})
		return err
	}
}

func del(id int64) op {
	return func(ctx context.Context, c *client.Client) error { return c.Delete(ctx, id) }
}

func ping(ctx context.Context, c *client.Client) error { return c.Ping(ctx) }

func all(ctx context.Context, c *client.Client) error {
	for _, err := range c.All(ctx) {
		if err != nil {
			return err
		}
	}
	return nil
}

// serveAnswer serves every request, read whole, with status and body, of
// type contentType unless it is empty, counting the requests.
func serveAnswer(t *testing.T, status int, contentType, body string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	return serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
}

// checkProtocolError checks that err is a *client.ProtocolError for an
// answer with status, and that it is ErrOutcomeUnknown after a create or
// delete (write) and no sentinel after any other call.
func checkProtocolError(t *testing.T, err error, status int, write bool) {
	t.Helper()
	pe, ok := errors.AsType[*client.ProtocolError](err)
	if !ok {
		t.Fatalf("error %v (%T), want a *client.ProtocolError", err, err)
	}
	if pe.StatusCode != status {
		t.Errorf("StatusCode %d, want %d", pe.StatusCode, status)
	}
	var want error
	if write {
		want = plantstore.ErrOutcomeUnknown
	}
	checkSentinel(t, err, want)
}

// checkError checks that err is a *client.Error with code, and is want
// and no other sentinel, and returns it.
func checkError(t *testing.T, err error, code int, want error) *client.Error {
	t.Helper()
	checkSentinel(t, err, want)
	ce, ok := errors.AsType[*client.Error](err)
	if !ok {
		t.Fatalf("error %v (%T), want a *client.Error", err, err)
	}
	if ce.Code != code {
		t.Errorf("error %v has code %d, want %d", err, ce.Code, code)
	}
	return ce
}

// TestRoundTrip makes each call against the real handler, in each of
// mounts: under a prefix, every call keeps it (and every next link, in
// TestAllFollowsPages).
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	for _, m := range mounts() {
		t.Run(m.name, func(t *testing.T) {
			url, _ := serveAt(t, newHandler(memstore.New(), m.opts...), m)
			c := newClient(t, url)
			ctx := t.Context()

			if err := c.Ping(ctx); err != nil {
				t.Fatalf("Ping: %v", err)
			}
			for p, err := range c.All(ctx) {
				t.Errorf("All on an empty store yielded %+v, %v", p, err)
			}
			created := []plantstore.NewPlant{
				{ID: 1, Name: "Monstera", Tag: "indoor", HasTag: true},
				{ID: -7, Name: "Fern"},
				{ID: 9223372036854775807, Name: `"quoted" <b>&</b> ✓`, Tag: "", HasTag: true},
			}
			for _, np := range created {
				p, err := c.Create(ctx, np)
				if err != nil {
					t.Fatalf("Create(%+v): %v", np, err)
				}
				if diff := cmp.Diff(plantstore.Plant(np), p); diff != "" {
					t.Errorf("Create mismatch (-want +got):\n%s", diff)
				}
				got, err := c.Plant(ctx, np.ID)
				if err != nil {
					t.Fatalf("Plant(%d): %v", np.ID, err)
				}
				if diff := cmp.Diff(plantstore.Plant(np), got); diff != "" {
					t.Errorf("Plant(%d) mismatch (-want +got):\n%s", np.ID, diff)
				}
			}
			want := []plantstore.Plant{plantstore.Plant(created[1]), plantstore.Plant(created[0]), plantstore.Plant(created[2])}
			got, err := c.List(ctx, plantstore.ListOptions{})
			if err != nil {
				t.Fatalf("List: %v", err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("List mismatch (-want +got):\n%s", diff)
			}
			got, err = c.List(ctx, plantstore.ListOptions{Limit: 1, After: -7, HasAfter: true})
			if err != nil {
				t.Fatalf("List after -7: %v", err)
			}
			if diff := cmp.Diff(want[1:2], got); diff != "" {
				t.Errorf("List after -7, limit 1 mismatch (-want +got):\n%s", diff)
			}
			if err := c.Delete(ctx, 1); err != nil {
				t.Fatalf("Delete: %v", err)
			}
			if _, err := c.Plant(ctx, 1); !errors.Is(err, plantstore.ErrNotFound) {
				t.Errorf("Plant after Delete: %v, want ErrNotFound", err)
			}
		})
	}
}

// TestCreateValidatesBeforeSending checks that a create of an invalid
// plant, and a call with an ended context, send nothing. The plant is
// checked by NewPlant.Validate, whose every rule is the root package's
// TestCreateValidates; invalid UTF-8 is the case that matters here, as
// encoding/json would send it changed.
func TestCreateValidatesBeforeSending(t *testing.T) {
	t.Parallel()
	srv, requests := serve(t, newHandler(memstore.New()))
	c := newClient(t, srv.URL)
	_, err := c.Create(t.Context(), plantstore.NewPlant{ID: 1, Name: "a\xffb"})
	ve, _ := errors.AsType[*plantstore.ValidationError](err)
	if diff := cmp.Diff(&plantstore.ValidationError{Field: "name", Reason: "must be valid UTF-8"}, ve); diff != "" {
		t.Errorf("Create of an invalid name: %v, ValidationError mismatch (-want +got):\n%s", err, diff)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.Create(ctx, plantstore.NewPlant{ID: 1, Name: "a"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Create: %v, want context.Canceled", err)
	}
	if err := c.Ping(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Ping: %v, want context.Canceled", err)
	}
	wantCount(t, requests, 0, "requests sent")
}

func TestAllFollowsPages(t *testing.T) {
	t.Parallel()
	for _, m := range mounts() {
		t.Run(m.name, func(t *testing.T) {
			const stored = 2*plantstore.DefaultListLimit + 50
			ms := memstore.New()
			var want []plantstore.Plant
			for i := range int64(stored) {
				p := plantstore.Plant{ID: i*3 - 100, Name: fmt.Sprint("plant ", i)}
				if i%2 == 0 {
					p.Tag, p.HasTag = fmt.Sprint("tag ", i), true
				}
				if err := ms.Create(t.Context(), p); err != nil {
					t.Fatal(err)
				}
				want = append(want, p)
			}
			url, requests := serveAt(t, newHandler(ms, m.opts...), m)
			c := newClient(t, url)

			var got []plantstore.Plant
			for p, err := range c.All(t.Context()) {
				if err != nil {
					t.Fatalf("All: %v", err)
				}
				got = append(got, p)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("All mismatch (-want +got):\n%s", diff)
			}
			wantCount(t, requests, 3, fmt.Sprintf("requests (pages) for %d plants", stored))

			requests.Store(0)
			n := 0
			for _, err := range c.All(t.Context()) {
				if err != nil {
					t.Fatal(err)
				}
				if n++; n == 5 {
					break
				}
			}
			if r := requests.Load(); r != 1 {
				t.Errorf("All stopped after 5 plants made %d requests, want 1", r)
			}
		})
	}
}

// TestAllRefusesBadLinks serves a first page whose next link is not one
// the client should follow.
func TestAllRefusesBadLinks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		link   string
		reason string
	}{
		{"another host", `<http://attacker.example/plants?after=2>; rel="next"`,
			"the token must not be sent to another server"},
		{"another port", `<//127.0.0.1:1/plants?after=2>; rel="next"`, ""},
		{"itself", `<>; rel="next"`, "the same page again would loop forever"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, requests := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Link", tt.link)
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `[{"id":1,"name":"a"},{"id":2,"name":"b"}]`)
			}))
			c := newClient(t, srv.URL)
			var ids []int64
			var err error
			for p, e := range c.All(t.Context()) {
				if e != nil {
					err = e
					break
				}
				ids = append(ids, p.ID)
			}
			if err == nil {
				t.Errorf("All followed %s (%s)", tt.link, tt.reason)
			}
			if diff := cmp.Diff([]int64{1, 2}, ids); diff != "" {
				t.Errorf("plants before the error (-want +got):\n%s", diff)
			}
			if n := requests.Load(); n > 2 {
				t.Errorf("the server got %d requests, want at most 2", n)
			}
		})
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		baseURL string
		opts    []client.Option
		wantErr bool
	}{
		{name: "http", baseURL: "http://127.0.0.1:8080"},
		{name: "https with prefix", baseURL: "https://example.com/api/"},
		{name: "upper-case scheme", baseURL: "HTTP://example.com"},
		{name: "empty", baseURL: "", wantErr: true},
		{name: "no scheme", baseURL: "example.com/api", wantErr: true},
		{name: "relative", baseURL: "/api", wantErr: true},
		{name: "other scheme", baseURL: "ftp://example.com", wantErr: true},
		{name: "no host", baseURL: "http:///api", wantErr: true},
		{name: "opaque", baseURL: "http:example.com", wantErr: true},
		{name: "credentials", baseURL: "http://user:pw@example.com", wantErr: true},
		{name: "query", baseURL: "http://example.com/?x=1", wantErr: true},
		{name: "empty query", baseURL: "http://example.com/?", wantErr: true},
		{name: "fragment", baseURL: "http://example.com/#top", wantErr: true},
		{name: "bad escape", baseURL: "http://example.com/%zz", wantErr: true},
		{name: "token", baseURL: "http://example.com", opts: []client.Option{client.WithToken("abc-._~+/==")}},
		{name: "token with a space", baseURL: "http://example.com", opts: []client.Option{client.WithToken("a b")},
			wantErr: true},
		{name: "token with a newline", baseURL: "http://example.com", opts: []client.Option{client.WithToken("a\r\nX-Evil: 1")},
			wantErr: true},
		{name: "nil http client", baseURL: "http://example.com", opts: []client.Option{client.WithHTTPClient(nil)},
			wantErr: true},
		{name: "negative attempts", baseURL: "http://example.com",
			opts: []client.Option{client.WithRetry(client.RetryPolicy{MaxAttempts: -1})}, wantErr: true},
		{name: "negative delay", baseURL: "http://example.com",
			opts: []client.Option{client.WithRetry(client.RetryPolicy{MaxAttempts: 2, BaseDelay: -1})}, wantErr: true},
		{name: "max delay under base", baseURL: "http://example.com",
			opts: []client.Option{client.WithRetry(client.RetryPolicy{BaseDelay: 2, MaxDelay: 1})}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := client.New(tt.baseURL, tt.opts...)
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Fatalf("New(%q) = %v, %v; want error: %v", tt.baseURL, c, err, tt.wantErr)
			}
			if err != nil && strings.Contains(err.Error(), "pw") {
				t.Errorf("the error shows the URL's password: %v", err)
			}
		})
	}
}

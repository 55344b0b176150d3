package httpapi_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/memstore"
)

// TestRequestIDFromClient checks which ids a client sends are kept, and
// that ids generated in their stead are 32 hex digits, each new.
func TestRequestIDFromClient(t *testing.T) {
	t.Parallel()
	printable := ""
	for c := byte(0x21); c <= 0x7e; c++ {
		printable += string(c)
	}
	tests := []struct {
		name     string
		values   []string
		wantKept bool
		reason   string
	}{
		{"uuid", []string{"0b6c4a3e-6a3f-4b8e-9d55-2f0c1d7a9e11"}, true, ""},
		{"128 bytes", []string{strings.Repeat("a", 128)}, true, "the longest kept"},
		{"every printable byte", []string{printable}, true, "0x21 to 0x7e"},
		{"129 bytes", []string{strings.Repeat("a", 129)}, false, "over the limit"},
		{"empty", []string{""}, false, ""},
		{"space", []string{"a b"}, false, "0x20 is not kept: ids are single tokens in log lines"},
		{"tab", []string{"a\tb"}, false, ""},
		{"newline", []string{"a\nb"}, false, "would split a log line or a header"},
		{"DEL", []string{"a\x7fb"}, false, ""},
		{"UTF-8", []string{"pflanze-ä"}, false, "printable ASCII only"},
		{"two values", []string{"a", "b"}, false, "no one value is the request's"},
	}
	h := newHandler(nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/healthz", nil)
			req.Header["X-Request-Id"] = tt.values
			got := serve(h, req).Header()["X-Request-Id"]
			if len(got) != 1 {
				t.Fatalf("response X-Request-Id = %q, want one value", got)
			}
			if tt.wantKept {
				if got[0] != tt.values[0] {
					t.Errorf("X-Request-Id = %q, want the client's %q kept (%s)", got[0], tt.values[0], tt.reason)
				}
			} else if !generatedID.MatchString(got[0]) {
				t.Errorf("X-Request-Id = %q, want %q replaced by a generated id (%s)", got[0], tt.values, tt.reason)
			}
		})
	}
	seen := map[string]bool{}
	for range 10000 {
		id := serve(h, httptest.NewRequest("GET", "/healthz", nil)).Header().Get("X-Request-Id")
		if !generatedID.MatchString(id) {
			t.Fatalf("generated id %q is not 32 hex digits", id)
		}
		if seen[id] {
			t.Fatalf("id %q generated twice", id)
		}
		seen[id] = true
	}
}

// TestRequestIDInLogLines checks that every line logged while serving a
// request, by the handler's logger or its access log, names the request's
// id, also when the logger was made with attributes of its own.
func TestRequestIDInLogLines(t *testing.T) {
	t.Parallel()
	// The handler's lines and the access lines, in the order written.
	var out testkit.Buffer
	logger := slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug})).With("component", "plants")
	accessLog := httpapi.WithAccessLog(&out, httpapi.AccessLog{Format: httpapi.JSONLog})
	h := newHandler(&faultyStorage{Store: memstore.New(), err: errors.New("disk on fire")}, httpapi.WithLogger(logger), accessLog)
	panicking := newHandler(&faultyStorage{Store: memstore.New()}, httpapi.WithLogger(logger), accessLog)

	type line struct{ Msg, RequestID string }
	var want []line
	// expect makes a request and expects the lines msgs, each with the
	// request's id.
	expect := func(h http.Handler, token, requestID string, msgs ...string) {
		id := send(h, "POST", "/plants", token, requestID, `{"id":1,"name":"Fern"}`)
		if requestID != "" && id != requestID {
			t.Errorf("X-Request-Id = %q, want %q", id, requestID)
		}
		for _, msg := range msgs {
			want = append(want, line{msg, id})
		}
	}
	expect(h, testToken, "from-the-client", "httpapi: internal error", "request")
	expect(h, testToken, "", "httpapi: internal error", "request")
	expect(h, "wrong", "", "httpapi: token rejected", "request")
	expect(panicking, testToken, "", "httpapi: panic serving request", "request")
	var got []line
	for _, l := range accessLines(t, out.String()) {
		got = append(got, line{l.Msg, l.RequestID})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log lines mismatch (-want +got):\n%s", diff)
	}
}

// ctxStorage records the request id that Create finds in its context, and
// blocks until that context ends when block is set.
type ctxStorage struct {
	*memstore.Store
	block bool
	got   chan string
	ended chan error
}

func (s *ctxStorage) Create(ctx context.Context, p plantstore.Plant) error {
	// A context derived from the request's keeps its id, and its
	// cancellation.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.got <- httpapi.RequestID(ctx)
	if s.block {
		<-ctx.Done()
		s.ended <- ctx.Err()
		return ctx.Err()
	}
	return s.Store.Create(ctx, p)
}

// TestRequestIDInContext checks that the contexts the authenticator and
// the storage are given carry the request's id, and that the context
// carrying it ends when the client goes away, as the request's own does.
func TestRequestIDInContext(t *testing.T) {
	t.Parallel()
	if id := httpapi.RequestID(context.Background()); id != "" {
		t.Errorf("RequestID(context.Background()) = %q, want \"\"", id)
	}
	st := &ctxStorage{Store: memstore.New(), got: make(chan string, 1), ended: make(chan error, 1)}
	authIDs := make(chan string, 1)
	e := newEnv(t, st, httpapi.WithAuthenticator(httpapi.AuthenticatorFunc(func(r *http.Request, token string) error {
		authIDs <- httpapi.RequestID(r.Context())
		return nil
	})))
	e.do("POST", "/plants", map[string]string{"X-Request-Id": "ctx-test"}, `{"id":1,"name":"Fern"}`).wantOK(t, "create")
	if got := <-authIDs; got != "ctx-test" {
		t.Errorf("the authenticator's context has request id %q, want ctx-test", got)
	}
	if got := <-st.got; got != "ctx-test" {
		t.Errorf("the storage's context has request id %q, want ctx-test", got)
	}

	st = &ctxStorage{Store: memstore.New(), block: true, got: make(chan string, 1), ended: make(chan error, 1)}
	e = newEnv(t, st)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", e.url+"/plants", strings.NewReader(`{"id":1,"name":"Fern"}`))
	setHeaders(req.Header, nil)
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	if id := <-st.got; !generatedID.MatchString(id) {
		t.Errorf("storage saw request id %q, want a generated one", id)
	}
	cancel()
	select {
	case err := <-st.ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the storage's context ended with %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the storage's context did not end after the client went away")
	}
	<-done
}

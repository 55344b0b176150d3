package httpapi_test

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/memstore"
)

func TestAuthenticatorOutcomes(t *testing.T) {
	t.Parallel()
	const cause = "directory says no for reasons"
	tests := []struct {
		name      string
		err       error
		headers   map[string]string
		wantCode  int    // 0: accepted
		challenge string // a substring of WWW-Authenticate; "" when none is sent
		wantLog   string // a substring of the log
		reason    string
	}{
		{name: "accepted", err: nil},
		{name: "bad credentials", err: errors.New(cause), wantCode: 401,
			challenge: `error="invalid_token"`, wantLog: "level=DEBUG msg=\"httpapi: token rejected\""},
		{name: "forbidden", err: fmt.Errorf("%s: %w", cause, httpapi.ErrForbidden), wantCode: 403,
			wantLog: "level=DEBUG msg=\"httpapi: token rejected\"",
			reason:  "a known caller gets no challenge: other credentials would not help"},
		{name: "backend down", err: fmt.Errorf("dial ldap: %s: %w", cause, plantstore.ErrUnavailable), wantCode: 503,
			wantLog: "level=WARN msg=\"httpapi: authentication unavailable\""},
		{name: "deadline", err: context.DeadlineExceeded, wantCode: 401, challenge: `error="invalid_token"`,
			reason: "only ErrForbidden and ErrUnavailable change the code"},
		{name: "storage's conflict", err: plantstore.ErrConflict, wantCode: 401, challenge: `error="invalid_token"`},
		{name: "rejected without a token", err: errors.New(cause), headers: noToken, wantCode: 401, challenge: realm},
		{name: "forbidden without a token", err: httpapi.ErrForbidden, headers: noToken, wantCode: 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			auth := httpapi.AuthenticatorFunc(func(r *http.Request, token string) error {
				calls.Add(1)
				return tt.err
			})
			e := newEnv(t, nil, httpapi.WithAuthenticator(auth), httpapi.WithConventionalStatus())
			r := e.do("POST", "/plants", tt.headers, `{"id":1,"name":"x"}`)
			if n := calls.Load(); n != 1 {
				t.Errorf("the authenticator was called %d times, want 1", n)
			}
			wantIDs := []int64{}
			if tt.wantCode == 0 {
				if r.status != http.StatusOK {
					t.Fatalf("status = %d, want 200 (body %s)", r.status, r.body)
				}
				wantIDs = []int64{1}
			} else {
				we := r.wantError(t, tt.wantCode, tt.wantCode)
				if strings.Contains(we.Message, cause) {
					t.Errorf("message %q leaks the authenticator's error", we.Message)
				}
			}
			if got := r.header.Get("WWW-Authenticate"); (tt.challenge == "") != (got == "") || !strings.Contains(got, tt.challenge) {
				t.Errorf("WWW-Authenticate = %q, want one containing %q (none if empty)", got, tt.challenge)
			}
			if tt.wantLog != "" && !strings.Contains(e.logs.String(), tt.wantLog) {
				t.Errorf("the log has no %q:\n%s", tt.wantLog, e.logs)
			}
			if diff := cmp.Diff(wantIDs, storedIDs(t, e.ps)); diff != "" {
				t.Errorf("stored ids mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAuthenticatorSeesTheRequest accepts an API key in a header of its
// own, with no Authorization header at all, and callers by the TLS client
// certificate they present, which the authenticator finds in the request.
func TestAuthenticatorSeesTheRequest(t *testing.T) {
	t.Parallel()
	type seen struct{ Method, Path, Token, CN string }
	var (
		mu  sync.Mutex
		got []seen
	)
	auth := httpapi.AuthenticatorFunc(func(r *http.Request, token string) error {
		cn := ""
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			cn = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		mu.Lock()
		got = append(got, seen{r.Method, r.URL.Path, token, cn})
		mu.Unlock()
		if token == testToken || r.Header.Get("X-Api-Key") == "key-1" || cn == "gardener" {
			return nil
		}
		return errors.New("no valid credentials")
	})
	e := newEnv(t, nil, httpapi.WithAuthenticator(auth))
	e.do("POST", "/plants", map[string]string{"Authorization": "", "X-Api-Key": "key-1"}, `{"id":1,"name":"x"}`).wantOK(t, "with an API key")
	e.do("GET", "/plants/1", map[string]string{"Authorization": "", "X-Api-Key": "key-2"}, ``).wantError(t, 400, 401)
	if r := e.do("DELETE", "/plants/1", nil, ``); r.status != 204 {
		t.Errorf("with the token: %d %s, want 204", r.status, r.body)
	}
	e.do("GET", "/plants", map[string]string{"Authorization": "Basic dTpw", "X-Api-Key": "key-1"}, ``).wantError(t, 400, 401)
	h := newHandler(nil, httpapi.WithAuthenticator(auth))
	for _, cn := range []string{"gardener", "stranger"} {
		req := httptest.NewRequest("GET", "https://plantstore.example/plants", nil) // with a TLS state
		req.TLS.PeerCertificates = []*x509.Certificate{{Subject: pkix.Name{CommonName: cn}}}
		if r := recorded(serve(h, req)); cn == "gardener" {
			r.wantOK(t, "with the client certificate of %s", cn)
		} else {
			r.wantError(t, 400, 401)
		}
	}
	want := []seen{{"POST", "/plants", "", ""}, {"GET", "/plants/1", "", ""}, {"DELETE", "/plants/1", testToken, ""},
		{"GET", "/plants", "", "gardener"}, {"GET", "/plants", "", "stranger"}}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests the authenticator saw (-want +got):\n%s", diff)
	}
}

func TestTokenAuthenticatorFunc(t *testing.T) {
	t.Parallel()
	var (
		mu     sync.Mutex
		tokens []string
	)
	auth := httpapi.TokenAuthenticatorFunc(func(ctx context.Context, token string) error {
		mu.Lock()
		tokens = append(tokens, token)
		mu.Unlock()
		if token != "from-host" {
			return errors.New("unknown")
		}
		return nil
	})
	e := newEnv(t, nil, httpapi.WithAuthenticator(auth))
	we := e.do("POST", "/plants", noToken, `{"id":1,"name":"x"}`).wantError(t, 400, 401)
	if !strings.Contains(we.Message, "missing bearer token") {
		t.Errorf("message = %q, want it to say the token is missing", we.Message)
	}
	e.do("POST", "/plants", map[string]string{"Authorization": "Bearer other"}, `{"id":1,"name":"x"}`).wantError(t, 400, 401)
	e.do("POST", "/plants", map[string]string{"Authorization": "Bearer from-host"}, `{"id":1,"name":"x"}`).wantOK(t, "create")
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"other", "from-host"}, tokens); diff != "" {
		t.Errorf("tokens the function saw (-want +got):\n%s; it must never see an empty one", diff)
	}
}

// TestCheckToken checks which tokens a bearer header can carry, and NewToken
// makes one.
func TestCheckToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		token   string
		wantErr error
		reason  string
	}{
		{name: "letters and digits", token: "abc123"},
		{name: "every allowed symbol", token: "a-b.c_d~e+f/g"},
		{name: "trailing padding", token: "YWJj=="},
		{name: "generated", token: "kR3_x-9Qz2V0m7WqLp4sYb1Nc8TgHf6Ue5Aj0Di2Ko4"},
		{name: "empty", token: "", wantErr: httpapi.ErrTokenSyntax},
		{name: "padding only", token: "==", wantErr: httpapi.ErrTokenSyntax, reason: "b64token needs one character before the padding"},
		{name: "inner equals sign", token: "abc=def", wantErr: httpapi.ErrTokenSyntax, reason: `"=" may only end the token`},
		{name: "space", token: "tok en1", wantErr: httpapi.ErrTokenSyntax},
		{name: "tab", token: "tok\ten1", wantErr: httpapi.ErrTokenSyntax},
		{name: "non-ASCII", token: "pässword", wantErr: httpapi.ErrTokenSyntax},
		{name: "comma", token: "tok,en1", wantErr: httpapi.ErrTokenSyntax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := httpapi.CheckToken(tt.token)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("CheckToken(%q) = %v, want %v (%s)", tt.token, err, tt.wantErr, tt.reason)
			}
			if err != nil && tt.token != "" && strings.Contains(err.Error(), tt.token) {
				t.Errorf("CheckToken(%q) = %v: the error shows the token", tt.token, err)
			}
		})
	}
	// A generated token is one a client can send, 256 bits long, and new
	// each time.
	a, b := httpapi.NewToken(), httpapi.NewToken()
	if err := httpapi.CheckToken(a); err != nil {
		t.Errorf("NewToken() = %q: %v", a, err)
	}
	if n, err := base64.RawURLEncoding.DecodeString(a); err != nil || len(n) != 32 {
		t.Errorf("NewToken() = %q, want 32 bytes in unpadded base64url (%v)", a, err)
	}
	if a == b {
		t.Errorf("NewToken() gave %q twice", a)
	}
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

// TestPanicsOnValuesThatCannotWork checks that Tokens, WithExtraTokens,
// WithCORS and WithPrefix refuse at once, as regexp.MustCompile does, a
// value that could never match, saying why and never showing a token; a
// panic's value is text, so all of it is the interface. They take every
// other value, and ignore empty tokens and origins.
func TestPanicsOnValuesThatCannotWork(t *testing.T) {
	t.Parallel()
	const secret, prefixRule = "never=shown", "a prefix begins with / and holds no : or *"
	ps := plantstore.New(memstore.New())
	tests := []struct {
		name   string
		f      func()
		whole  string // the whole message; "" when not checked
		holds  string // in the message; "" when there is no panic
		secret string // a token the message must not show
	}{
		{name: "Tokens", f: func() { httpapi.Tokens("good", secret) }, secret: secret, holds: "token 2 of 2",
			whole: "httpapi: Tokens: token 2 of 2: " + httpapi.CheckToken(secret).Error()},
		{name: "Tokens with empty tokens", f: func() {
			if httpapi.Tokens("", "good", "") == nil {
				panic("Tokens with empty tokens = nil")
			}
		}},
		{name: "WithExtraTokens", f: func() { httpapi.WithExtraTokens("good", "bad token") }, holds: "token 2 of 2", secret: "bad token"},
		{name: "WithCORS with origins to take", f: func() { httpapi.WithCORS("https://app.example.com", "*", "http://[::1]:8080", "") }},
		{name: "WithCORS with an origin in another form", f: func() { httpapi.WithCORS("https://app.example.com", "https://app.example.com/") },
			holds: `browsers send this origin as "https://app.example.com"`},
		{name: "WithCORS with no origin", f: func() { httpapi.WithCORS("app.example.com") }, holds: `"app.example.com": want "*" or an origin`},
		{name: "WithPrefix without a slash", f: func() { httpapi.New(ps, httpapi.WithPrefix("api")) }, holds: prefixRule},
		{name: "WithPrefix with a parameter", f: func() { httpapi.New(ps, httpapi.WithPrefix("/api/:v")) }, holds: prefixRule},
		{name: "WithPrefix with a catch-all", f: func() { httpapi.New(ps, httpapi.WithPrefix("/api/*rest")) }, holds: prefixRule},
	}
	for _, tt := range tests {
		msg := panicMessage(tt.f)
		if tt.holds == "" && msg != "" || !strings.Contains(msg, tt.holds) || tt.whole != "" && msg != tt.whole {
			t.Errorf("%s panicked with %q, want a panic holding %q (all of it %q)", tt.name, msg, tt.holds, tt.whole)
		}
		if tt.secret != "" && strings.Contains(msg, tt.secret) {
			t.Errorf("%s: the panic %q shows the token", tt.name, msg)
		}
	}
}

// TestTokensNeverLeak sends accepted, rejected and malformed credentials,
// and a token in the query, to a handler that accepts either of two tokens
// and logs at debug level through NewLogHandler and the access log into
// one stream, as the binary does: no token appears in the log or in any
// answer, and the access log has a line per request with its path and
// Error code, and no body. What net/http answers itself to requests with a
// token in them is server's TestAnswersNetHTTPGivesItself; the binary's
// log, TestFlagsReachTheHandler.
func TestTokensNeverLeak(t *testing.T) {
	t.Parallel()
	var secrets []string // each token, and its random part
	token := func(prefix string) string {
		s := httpapi.NewToken()
		secrets = append(secrets, s, prefix+s)
		return prefix + s
	}
	good, second, rejected := token("accepted-"), token("second-"), token("rejected-")
	var logs testkit.Buffer
	ps := plantstore.New(memstore.New())
	e := serveEnv(t, httpapi.New(ps, httpapi.WithTokens(good, second),
		httpapi.WithLogger(slog.New(httpapi.NewLogHandler(&logs, httpapi.TextLog, &slog.HandlerOptions{Level: slog.LevelDebug}))),
		httpapi.WithAccessLog(&logs, httpapi.AccessLog{Format: httpapi.TextLog, Level: slog.LevelDebug})), ps)
	if r := e.do("POST", "/plants", hdr{"Authorization": "Bearer " + second}, `{"id":100,"name":"Monstera","tag":""}`); r.status != 200 || string(r.body) != `{"name":"Monstera","tag":""}` {
		t.Errorf("create = %d %s, want 200 {\"name\":\"Monstera\",\"tag\":\"\"}", r.status, r.body)
	}
	if r := e.do("POST", "/plants", hdr{"Authorization": "Bearer " + good}, `{"id":100,"name":"again"}`); r.status != 400 || testkit.ErrorCode(r.body) != 409 {
		t.Errorf("conflicting create = %d %s, want 400 with error 409", r.status, r.body)
	}

	tests := []struct {
		name   string
		method string
		path   string
		auth   []string
		want   int // the Error code, or the status of a success
		reason string
	}{
		{"accepted", "POST", "/plants", []string{"Bearer " + good}, 200, ""},
		{"accepted, lowercase scheme", "GET", "/plants", []string{"bearer " + good}, 200, ""},
		{"rejected token", "POST", "/plants", []string{"Bearer " + rejected}, 401, ""},
		{"accepted token with a suffix", "POST", "/plants", []string{"Bearer " + good + "0"}, 401, "a near miss must not be echoed either"},
		{"accepted token with a prefix", "GET", "/plants", []string{"Bearer 0" + good}, 401, ""},
		{"wrong scheme", "POST", "/plants", []string{"Basic " + good}, 401, "malformed headers are not quoted back"},
		{"trailing garbage", "POST", "/plants", []string{"Bearer " + good + " extra"}, 401, ""},
		{"two headers", "GET", "/plants", []string{"Bearer " + good, "Bearer " + rejected}, 401, ""},
		{"token in the query", "GET", "/plants?access_token=" + good, nil, 401, "the access log records the path, not the query"},
		{"accepted token on a bad id", "DELETE", "/plants/x", []string{"Bearer " + good}, 400, ""},
		{"accepted token on an unknown path", "GET", "/nowhere", []string{"Bearer " + good}, 404, ""},
	}
	var answers []string
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, e.url+tt.path, strings.NewReader(fmt.Sprintf(`{"id":%d,"name":"x"}`, i)))
			if err != nil {
				t.Fatal(err)
			}
			setHeaders(req.Header, hdr{"Authorization": ""})
			req.Header["Authorization"] = tt.auth
			resp, err := e.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			answers = append(answers, fmt.Sprint(resp.Header)+string(body))
			got := resp.StatusCode
			if got != 200 {
				got = testkit.ErrorCode(body)
			}
			if got != tt.want {
				t.Errorf("answer = %d %s, want %d (%s)", resp.StatusCode, body, tt.want, tt.reason)
			}
		})
	}
	got := logs.String()
	if !strings.Contains(got, "level=DEBUG") || !strings.Contains(got, "token rejected") {
		t.Errorf("the debug log does not record the rejected tokens, so it was not checked:\n%s", got)
	}
	if !strings.Contains(got, "path=/plants") || !strings.Contains(got, "error=409") || strings.Contains(got, "Monstera") {
		t.Errorf("the access log lacks a line per request with path and error code, or holds a body:\n%s", got)
	}
	for _, s := range secrets {
		if strings.Contains(got, s) {
			t.Errorf("the log holds a token:\n%s", got)
		}
		for _, a := range answers {
			if strings.Contains(a, s) {
				t.Errorf("an answer holds a token: %q", a)
			}
		}
	}
}

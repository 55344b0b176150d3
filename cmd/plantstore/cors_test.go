package main

import (
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheckOrigin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		origin   string
		wantErr  error  // matched with errors.Is; nil for none, or for wantForm
		wantForm string // the origin an *originFormError asks for; "" for none
	}{
		{origin: "*"},
		{origin: "https://app.example.com"},
		{origin: "http://localhost:3000"},
		{origin: "http://[::1]:8080"},
		{origin: "https://app.example.com/", wantForm: "https://app.example.com"},
		{origin: "https://App.Example.com", wantForm: "https://app.example.com"},
		{origin: "https://app.example.com:443", wantForm: "https://app.example.com"},
		{origin: "http://app.example.com:80/x", wantForm: "http://app.example.com"},
		{origin: "app.example.com", wantErr: errNotAnOrigin},
		{origin: "ftp://files.example.com", wantErr: errNotAnOrigin},
		{origin: "https://user@app.example.com", wantErr: errNotAnOrigin},
		{origin: "", wantErr: errNotAnOrigin},
	}
	for _, tt := range tests {
		err := checkOrigin(tt.origin)
		if tt.wantForm != "" {
			if fe, ok := errors.AsType[*originFormError](err); !ok || fe.Want != tt.wantForm {
				t.Errorf("checkOrigin(%q) = %v, want an *originFormError asking for %q", tt.origin, err, tt.wantForm)
			}
			continue
		}
		if !errors.Is(err, tt.wantErr) {
			t.Errorf("checkOrigin(%q) = %v, want %v", tt.origin, err, tt.wantErr)
		}
	}
}

func TestRunCORSOrigin(t *testing.T) {
	t.Parallel()
	url, _, _, _ := startRun(t, []string{"-addr", "127.0.0.1:0", "-db", "memory",
		"-cors-origin", "https://app.example.com", "-cors-origin", "http://localhost:3000"},
		map[string]string{"PLANTSTORE_TOKENS": "s3cret"})
	send := func(method, origin, token string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, url+"/plants", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Origin", origin)
		if method == "OPTIONS" {
			req.Header.Set("Access-Control-Request-Method", "GET")
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	type answer struct {
		Status             int
		AllowOrigin, Allow string
	}
	got := []answer{}
	for _, r := range []*http.Response{
		send("OPTIONS", "http://localhost:3000", ""),
		send("OPTIONS", "https://evil.example.com", ""),
		send("GET", "https://app.example.com", "s3cret"),
		send("GET", "https://app.example.com", ""),
	} {
		got = append(got, answer{r.StatusCode, r.Header.Get("Access-Control-Allow-Origin"), r.Header.Get("Allow")})
	}
	want := []answer{
		{204, "http://localhost:3000", "GET, HEAD, OPTIONS, POST"},
		{204, "", "GET, HEAD, OPTIONS, POST"},
		{200, "https://app.example.com", ""},
		{400, "https://app.example.com", ""}, // error 401: CORS lets no one past the token
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers mismatch (-want +got):\n%s", diff)
	}
}

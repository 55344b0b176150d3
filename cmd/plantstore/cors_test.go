package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheckOrigin(t *testing.T) {
	tests := []struct {
		origin  string
		wantErr string // a substring of the error; "" for none
	}{
		{"*", ""},
		{"https://app.example.com", ""},
		{"http://localhost:3000", ""},
		{"http://[::1]:8080", ""},
		{"https://app.example.com/", `"https://app.example.com"`},
		{"https://App.Example.com", `"https://app.example.com"`},
		{"https://app.example.com:443", `"https://app.example.com"`},
		{"http://app.example.com:80/x", `"http://app.example.com"`},
		{"app.example.com", `want "*" or an origin`},
		{"ftp://files.example.com", `want "*" or an origin`},
		{"https://user@app.example.com", `want "*" or an origin`},
		{"", `want "*" or an origin`},
	}
	for _, tt := range tests {
		err := checkOrigin(tt.origin)
		if got := err != nil; got != (tt.wantErr != "") || got && !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("checkOrigin(%q) = %v, want an error containing %q (none if empty)", tt.origin, err, tt.wantErr)
		}
	}
}

func TestRunCORSOrigin(t *testing.T) {
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

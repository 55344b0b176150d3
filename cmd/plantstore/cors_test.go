package main

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

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

package main

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRunCORSOrigin checks that each -cors-origin reaches the handler:
// a preflight from the one and a request from the other are allowed.
// What CORS answers to other origins, and without a token, is httpapi's
// TestCORS.
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
		send("GET", "https://app.example.com", "s3cret"),
	} {
		got = append(got, answer{r.StatusCode, r.Header.Get("Access-Control-Allow-Origin"), r.Header.Get("Allow")})
	}
	want := []answer{
		{204, "http://localhost:3000", "GET, HEAD, OPTIONS, POST"},
		{200, "https://app.example.com", ""},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers mismatch (-want +got):\n%s", diff)
	}
}

package testkit

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// WaitUntil polls cond, every few milliseconds, until it holds, and fails
// the test if it does not within limit, naming what it waited for. Deferred
// calls and Cleanups run as the test ends, so a load the test started stops
// there too.
func WaitUntil(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting, after %v, for %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ListAll pages through GET /plants on the server at base with token,
// following each page's Link, and returns the name of every plant it
// holds by id.
func ListAll(t testing.TB, c *http.Client, base, token string) map[int64]string {
	t.Helper()
	got := map[int64]string{}
	query := "?limit=1000"
	for {
		req, _ := http.NewRequest("GET", base+"/plants"+query, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var page []struct {
			ID   int64
			Name string
		}
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /plants%s: status %d, %v", query, resp.StatusCode, err)
		}
		for _, p := range page {
			got[p.ID] = p.Name
		}
		// The last page has no Link; a page may be short of the limit
		// when it is full in bytes.
		link := resp.Header.Get("Link")
		if link == "" {
			return got
		}
		ref, _, _ := strings.Cut(strings.TrimPrefix(link, "<"), ">")
		u, err := url.Parse(ref)
		if err != nil || u.RawQuery == "" {
			t.Fatalf("GET /plants%s: Link %q is not a query reference", query, link)
		}
		query = "?" + u.RawQuery
	}
}

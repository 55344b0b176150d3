package testkit

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/client"
)

// Post sends body as a JSON POST /plants to the server at base with
// token, through hc, and returns the answer's status, header and body, or
// an error when no complete answer came. ctx may carry an
// httptrace.ClientTrace.
func Post(ctx context.Context, hc *http.Client, base, token, body string) (status int, header http.Header, answer []byte, err error) {
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/plants", strings.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	return roundTrip(hc, req)
}

// Create posts plant id named name (see [Post]) and returns the status and
// the Error's code (0 for a 200), or an error when no complete answer
// came, or an answer that is neither the plant created nor an Error.
func Create(ctx context.Context, hc *http.Client, base, token string, id int64, name string) (status, code int, err error) {
	status, _, body, err := Post(ctx, hc, base, token, fmt.Sprintf(`{"id":%d,"name":%q}`, id, name))
	if err != nil {
		return 0, 0, err
	}
	if status == http.StatusOK {
		var p struct{ Name string }
		if err := json.Unmarshal(body, &p); err != nil || p.Name != name {
			return 0, 0, fmt.Errorf("200 with body %q", body)
		}
		return 200, 0, nil
	}
	if code := ErrorCode(body); code != 0 {
		return status, code, nil
	}
	return 0, 0, fmt.Errorf("%d with body %q", status, body)
}

// Plants returns every plant the server at base holds, by name, listed
// with [client.Client.All] through hc with token.
func Plants(t testing.TB, hc *http.Client, base, token string) map[int64]string {
	t.Helper()
	c, err := client.New(base, client.WithToken(token), client.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	got := map[int64]string{}
	for p, err := range c.All(t.Context()) {
		if err != nil {
			t.Fatalf("listing the plants of %s: %v", base, err)
		}
		got[p.ID] = p.Name
	}
	return got
}

package peers_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/plantstore/plantstore/scripts/peers"
	"github.com/plantstore/plantstore/scripts/peers/oapipeer"
	"github.com/plantstore/plantstore/scripts/peers/ogenpeer"
)

// TestPeersKeepTheContract checks that each peer answers the requests of
// the benchmark as plantstore does, so that the benchmark compares servers
// doing the same work: a create is a Plant, and a failure an Error with
// status 400.
func TestPeersKeepTheContract(t *testing.T) {
	ts := peers.ParseTokens("peer-token")
	og, err := ogenpeer.New(ts)
	if err != nil {
		t.Fatal(err)
	}
	for name, h := range map[string]http.Handler{"ogen": og, "oapi-codegen": oapipeer.New(ts)} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(h)
			defer srv.Close()
			for _, c := range []struct {
				method, path, token, body string
				status                    int
				want                      string // the body, or the Error's code as "error N"
			}{
				{"POST", "/plants", "peer-token", `{"id":1,"name":"Fern","tag":"green"}`, 200, `{"name":"Fern","tag":"green"}`},
				{"POST", "/plants", "peer-token", `{"id":2,"name":"Ivy"}`, 200, `{"name":"Ivy"}`},
				{"POST", "/plants", "peer-token", `{"id":1,"name":"Fern"}`, 400, "error 409"},
				{"POST", "/plants", "other-token", `{"id":3,"name":"Moss"}`, 400, "error 401"},
				{"POST", "/plants", "", `{"id":3,"name":"Moss"}`, 400, "error 401"},
				{"GET", "/plants/1", "peer-token", "", 200, `{"id":1,"name":"Fern","tag":"green"}`},
				{"GET", "/plants/3", "peer-token", "", 400, "error 404"},
			} {
				req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
				req.Header.Set("Content-Type", "application/json")
				if c.token != "" {
					req.Header.Set("Authorization", "Bearer "+c.token)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				got := strings.TrimSpace(string(b))
				if resp.StatusCode == 400 {
					var e struct{ Error int32 }
					if err := json.Unmarshal(b, &e); err != nil {
						t.Errorf("%s %s: %v in %q", c.method, c.path, err, b)
					}
					got = "error " + itoa(e.Error)
				}
				if resp.StatusCode != c.status || got != c.want {
					t.Errorf("%s %s %s = %d %s, want %d %s", c.method, c.path, c.body, resp.StatusCode, got, c.status, c.want)
				}
			}
		})
	}
}

func itoa(n int32) string { b, _ := json.Marshal(n); return string(b) }

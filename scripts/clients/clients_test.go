package clients_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// token is the bearer token the servers accept.
const token = "client-token"

// wait bounds each build, generation and run, and a server's start and
// stop: generous, for a busy machine.
const wait = 5 * time.Minute

// TestGeneratedClients generates each client from the document the server
// serves and runs the scenario with it against the server in each status
// mode, comparing what the client saw with what the document promises.
func TestGeneratedClients(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the server and generated clients; skipped in -short mode")
	}
	bin := buildServer(t)
	doc := get(t, startServer(t, bin)+"/openapi.json")
	docPath := filepath.Join(t.TempDir(), "openapi.json")
	if err := os.WriteFile(docPath, doc, 0o644); err != nil {
		t.Fatal(err)
	}

	clients := []struct {
		name  string
		build func(t *testing.T, doc string) []string // the command to run, without the URL and token
	}{
		{"openapi-fetch", buildTypeScript},
		{"ogen", func(t *testing.T, doc string) []string {
			return buildGo(t, "ogenclient", "ogenapi", func(out string) []string {
				return []string{"go", "tool", "ogen", "-config", ".ogen.yml", "-target", out, "-package", "ogenapi", "-clean", doc}
			})
		}},
		{"oapi-codegen", func(t *testing.T, doc string) []string {
			return buildGo(t, "oapiclient", "oapiapi", func(out string) []string {
				return []string{"go", "tool", "oapi-codegen", "-generate", "types,client", "-package", "oapiapi", "-o", filepath.Join(out, "client.gen.go"), doc}
			})
		}},
	}
	modes := []struct {
		name         string
		args         []string
		conventional bool
		later        bool // through a proxy that adds a property to every object answered
	}{
		{name: "default"},
		{name: "conventional status", args: []string{"-conventional-status"}, conventional: true},
		{name: "a later server", later: true},
	}
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			argv := c.build(t, docPath)
			for _, m := range modes {
				t.Run(m.name, func(t *testing.T) {
					t.Parallel()
					base := startServer(t, bin, m.args...)
					if served := get(t, base+"/openapi.json"); !bytes.Equal(served, doc) {
						t.Fatalf("the server with %q serves another document than the one the client was generated from", m.args)
					}
					if m.later {
						base = addingProxy(t, base)
					}
					// What the scenario saw, a line each.
					got := strings.Split(strings.TrimSuffix(command(t, "", append(argv, base, token)...), "\n"), "\n")
					if diff := cmp.Diff(scenario(c.name, m.conventional), got); diff != "" {
						t.Errorf("what %s saw (-want +got):\n%s", c.name, diff)
					}
				})
			}
		})
	}
}

// scenario returns what client should see, one "step\tanswer" line a
// step, with the server in the status mode given.
func scenario(client string, conventional bool) []string {
	const (
		ts      = "openapi-fetch"
		ogen    = "ogen"
		notOgen = "!ogen"
	)
	steps := []struct {
		name   string
		only   string // the client that takes the step, "!client" for every other, or "" for all
		code   int    // the Error's code, or 0
		answer string // the answer when code is 0
	}{
		{name: "create", answer: `200 {name:"Fern" tag:"green"}`},
		{name: "create without tag", answer: `200 {name:"Ivy"}`},
		{name: "get", answer: `200 {id:1 name:"Fern" tag:"green"}`},
		{name: "get unknown", code: 404},
		{name: "duplicate id", code: 409},
		{name: "bad body: NUL in name", code: 400},
		{name: "bad body: NUL in tag", code: 400},
		{name: "bad body: id 1.5", only: ts, code: 400},
		{name: "bad body: lone surrogate", only: ts, code: 400},
		// ogen refuses to send a request without the token its security
		// requirement names.
		{name: "no token", only: ogen, answer: "not sent: ogenerrors.ErrSecurityRequirementIsNotSatisfied"},
		{name: "no token", only: notOgen, code: 401},
		{name: "empty token", only: ogen, code: 401},
		{name: "wrong token", code: 401},
		{name: "create 3", answer: `200 {name:"Moss"}`},
		{name: "create 4", answer: `200 {name:"Aloe"}`},
		{name: "create 5", answer: `200 {name:"Pothos"}`},
		{name: "list page 1", answer: "200 [1 2] next after=2"},
		{name: "list page 2", answer: "200 [3 4] next after=4"},
		{name: "list page 3", answer: "200 [5] last"},
		{name: "delete", answer: "204"},
		{name: "delete again", code: 404},
	}
	var lines []string
	for _, s := range steps {
		if other, ok := strings.CutPrefix(s.only, "!"); ok && client == other || !ok && s.only != "" && client != s.only {
			continue
		}
		answer := s.answer
		if s.code != 0 {
			answer = errorSeen(client, s.code, conventional)
		}
		lines = append(lines, s.name+"\t"+answer)
	}
	return lines
}

// errorSeen returns how client reports an Error with code, as
// docs/api.md's "Generating a client" says.
func errorSeen(client string, code int, conventional bool) string {
	status := 400
	if conventional {
		status = code
	}
	switch client {
	case "ogen":
		// A declared 400 is a result; the default response an error.
		if status == 400 {
			return fmt.Sprintf("Error %d, status %d, as the result", code, status)
		}
		return fmt.Sprintf("Error %d, status %d, as the error", code, status)
	case "oapi-codegen":
		if status == 400 {
			return fmt.Sprintf("Error %d, status %d, in JSON400", code, status)
		}
		return fmt.Sprintf("Error %d, status %d, in JSONDefault", code, status)
	default:
		return fmt.Sprintf("Error %d, status %d, as error", code, status)
	}
}

// addingProxy returns the URL of a proxy to the server at base that adds
// the property "addedLater" to every JSON object it answers (to the
// objects of an array too), as a later version of the server may: a
// client generated from today's document must still read the answers.
func addingProxy(t *testing.T, base string) string {
	t.Helper()
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error {
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			return nil
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			return fmt.Errorf("the server answered JSON that does not parse: %v", err)
		}
		add := func(v any) {
			if o, ok := v.(map[string]any); ok {
				o["addedLater"] = map[string]any{"by": "a later version", "n": 1}
			}
		}
		add(v)
		if a, ok := v.([]any); ok {
			for _, e := range a {
				add(e)
			}
		}
		if body, err = json.Marshal(v); err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
		return nil
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return srv.URL
}

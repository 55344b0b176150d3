package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/internal/testkit"
)

// fakeStore answers POST /plants the way plantstore does, choosing the
// answer from the id: multiples of 5 get Error 3, of 7 Error 42, of 11 a
// body that is not an Error, and the rest 200. It records what it got.
type fakeStore struct {
	token string

	mu      sync.Mutex
	ids     map[int64]int
	tags    map[string]int // tag sent, or "<none>"
	badAuth int
	paths   map[string]int
}

func newFakeStore(t *testing.T, token string) (*fakeStore, string) {
	t.Helper()
	f := &fakeStore{token: token, ids: map[int64]int{}, tags: map[string]int{}, paths: map[string]int{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func (f *fakeStore) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var np struct {
		ID   int64   `json:"id"`
		Name string  `json:"name"`
		Tag  *string `json:"tag"`
	}
	err := json.NewDecoder(r.Body).Decode(&np)
	f.mu.Lock()
	f.paths[r.Method+" "+r.URL.Path]++
	if r.Header.Get("Authorization") != "Bearer "+f.token {
		f.badAuth++
	}
	f.ids[np.ID]++
	if np.Tag == nil {
		f.tags["<none>"]++
	} else {
		f.tags[*np.Tag]++
	}
	f.mu.Unlock()

	w.Header().Set("Content-Type", "application/json")
	switch {
	case err != nil:
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":1,"message":"bad body"}`)
	case np.ID%5 == 0:
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":3,"message":"conflict"}`)
	case np.ID%7 == 0:
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":42,"message":"other"}`)
	case np.ID%11 == 0:
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `oops`)
	default:
		fmt.Fprintf(w, `{"name":%q}`, np.Name)
	}
}

// fields parses the report's "key: value" lines.
func fields(t *testing.T, out string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for l := range strings.Lines(out) {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			t.Fatalf("report line %q is not key: value", l)
		}
		m[k] = strings.TrimSpace(v)
	}
	return m
}

func noEnv(string) string { return "" }

// load runs plantload with args in the environment getenv, and returns
// its report; it logs its standard error when it fails.
func load(t *testing.T, getenv func(string) string, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), append([]string{"plantload"}, args...), getenv, &stdout, &stderr)
	if err != nil {
		t.Logf("plantload %q: %v\nstderr: %s", args, err, &stderr)
	}
	return stdout.String(), err
}

func TestRunCountsAnswers(t *testing.T) {
	f, base := newFakeStore(t, "s3cret")
	getenv := func(k string) string {
		if k == "PLANTSTORE_TOKENS" {
			return " s3cret, other"
		}
		return ""
	}
	out, err := load(t, getenv, "-url", base, "-c", "4", "-n", "100", "-d", "0", "-start-id", "1", "-tag", "green")
	if err != nil {
		t.Fatal(err)
	}

	got := fields(t, out)
	for _, k := range []string{"duration", "req/s", "latency p50", "latency p90", "latency p99", "latency max"} {
		if got[k] == "" {
			t.Errorf("report has no %q line:\n%s", k, out)
		}
		delete(got, k)
	}
	// Of ids 1..100: 20 multiples of 5; 12 of 7 but not 5; 7 of 11 but
	// neither 5 nor 7; 61 others.
	want := map[string]string{
		"target":                       base + "/plants",
		"connections":                  "4",
		"first id":                     "1",
		"requests":                     "100",
		"status 200":                   "61",
		"status 400":                   "32",
		"status 500":                   "7",
		"error code 3":                 "20",
		"error code 42":                "12",
		"error code not-an-Error-body": "7",
		"transport errors":             "0",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("report mismatch (-want +got):\n%s", diff)
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	wantIDs := map[int64]int{}
	for id := int64(1); id <= 100; id++ {
		wantIDs[id] = 1
	}
	if diff := cmp.Diff(wantIDs, f.ids); diff != "" {
		t.Errorf("ids sent mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"POST /plants": 100}, f.paths); diff != "" {
		t.Errorf("requests mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"green": 100}, f.tags); diff != "" {
		t.Errorf("tags sent mismatch (-want +got):\n%s", diff)
	}
	if f.badAuth != 0 {
		t.Errorf("%d requests lacked the first bearer token of $PLANTSTORE_TOKENS", f.badAuth)
	}
}

func TestRunStopsAfterDuration(t *testing.T) {
	f, base := newFakeStore(t, "flag-token")
	out, err := load(t, noEnv, "-url", base+"/", "-token", "flag-token", "-c", "2", "-d", "100ms")
	if err != nil {
		t.Fatal(err)
	}
	got := fields(t, out)
	if got["target"] != base+"/plants" || got["transport errors"] != "0" || got["requests"] == "0" {
		t.Errorf("report = %s, want requests to %s/plants and no transport errors", out, base)
	}

	f.mu.Lock()
	defer f.mu.Unlock()
	for id, n := range f.ids {
		if n != 1 {
			t.Errorf("id %d sent %d times, want once", id, n)
		}
	}
	if diff := cmp.Diff(map[string]int{"<none>": len(f.ids)}, f.tags); diff != "" {
		t.Errorf("tags sent without -tag mismatch (-want +got):\n%s", diff)
	}
	if f.badAuth != 0 {
		t.Errorf("%d requests lacked the bearer token from -token", f.badAuth)
	}
}

func TestRunReportsTransportErrors(t *testing.T) {
	out, err := load(t, noEnv, "-url", "http://"+testkit.FreeAddr(t), "-c", "2", "-n", "5", "-d", "5s")
	if err == nil {
		t.Errorf("run against a closed port returned nil, want an error")
	}
	if diff := cmp.Diff("5", fields(t, out)["transport errors"]); diff != "" {
		t.Errorf("transport errors mismatch (-want +got):\n%s\nreport:\n%s", diff, out)
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		reason string
	}{
		{name: "no bound", args: []string{"-d", "0"}, reason: "the run would never end"},
		{name: "negative count", args: []string{"-n", "-1"}},
		{name: "no connections", args: []string{"-c", "0"}},
		{name: "url without scheme", args: []string{"-url", "127.0.0.1:8080"}},
		{name: "url with other scheme", args: []string{"-url", "ftp://127.0.0.1"}},
		{name: "url without host", args: []string{"-url", "http://"}},
		{name: "unparsable url", args: []string{"-url", "http://[::1"}},
		{name: "unknown flag", args: []string{"-bogus"}},
		{name: "stray argument", args: []string{"extra"}},
		{name: "webhook receiver off loopback", args: []string{"-webhook-listen", "0.0.0.0:9999"}, reason: "the receiver only listens on loopback"},
		{name: "webhook receiver without port", args: []string{"-webhook-listen", "127.0.0.1"}},
		{name: "negative webhook wait", args: []string{"-webhook-wait", "-1s"}},
		{name: "negative webhook down", args: []string{"-webhook-down", "-1s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := load(t, noEnv, tt.args...)
			if !errors.Is(err, errUsage) {
				t.Errorf("run(%q) = %v, want an error wrapping errUsage (%s)", tt.args, err, tt.reason)
			}
			if out != "" {
				t.Errorf("run(%q) printed a report, want none:\n%s", tt.args, out)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	sorted := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for p, want := range map[int]int{50: 5, 90: 9, 99: 10, 100: 10, 1: 1} {
		if got := percentile(sorted, p); got != want {
			t.Errorf("percentile(1..10, %d) = %d, want %d", p, got, want)
		}
	}
}

// TestCodeOrder checks that the report lists numeric codes in numeric
// order, before any other.
func TestCodeOrder(t *testing.T) {
	for _, in := range [][]string{{"not-an-Error-body", "42", "3", "409"}, {"409", "3", "not-an-Error-body", "42"}} {
		got := slices.SortedFunc(slices.Values(in), codeOrder)
		if diff := cmp.Diff([]string{"3", "42", "409", "not-an-Error-body"}, got); diff != "" {
			t.Errorf("codes %q sorted (-want +got):\n%s", in, diff)
		}
	}
}

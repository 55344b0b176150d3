package httpapi_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/internal/testkit"
)

type accessLine struct {
	Time      time.Time
	Level     string
	Msg       string
	Method    string
	Path      string
	Status    int
	Duration  time.Duration
	RequestID string `json:"request_id"`
	TraceID   string `json:"trace_id"`
	Error     int
}

func accessLines(t *testing.T, out string) []accessLine {
	t.Helper()
	var lines []accessLine
	for _, s := range strings.SplitAfter(out, "\n") {
		if s == "" {
			continue
		}
		var l accessLine
		if err := json.Unmarshal([]byte(s), &l); err != nil {
			t.Fatalf("an access line does not decode: %v: %q", err, s)
		}
		lines = append(lines, l)
	}
	return lines
}

// send serves one request with h, with the bearer token auth unless it is
// "", and returns the X-Request-Id answered.
func send(h http.Handler, method, target, auth, requestID, body string) string {
	if auth != "" {
		auth = "Bearer " + auth
	}
	req := newRequest(method, target, hdr{"Authorization": auth, "X-Request-Id": requestID}, strings.NewReader(body))
	return serve(h, req).Header().Get("X-Request-Id")
}

// TestAccessLog checks the access lines of requests through the handler:
// each names the request's id, and its trace id when AccessLog.TraceID
// finds one in the request's context, and tells of the same end of the
// request as the Served hook, which is told of each request once; a
// polled route's success is at debug, so not written. What a line holds,
// byte for byte, in either format, is TestAccessLogAsSlogWritesIt's, and
// at which level TestPolledLogAtDebug's.
func TestAccessLog(t *testing.T) {
	t.Parallel()
	type traceKey struct{}
	traceID := func(ctx context.Context) ([16]byte, bool) {
		id, ok := ctx.Value(traceKey{}).([16]byte)
		return id, ok
	}
	var out testkit.Buffer
	type end struct {
		at       time.Time
		duration time.Duration
	}
	ends := map[string]end{} // by request id
	calls := 0
	h := newHandler(nil, httpapi.WithAccessLog(&out, httpapi.AccessLog{Format: httpapi.JSONLog, TraceID: traceID}),
		httpapi.WithHooks(httpapi.Hooks{Served: func(s httpapi.Served) {
			calls++
			ends[s.RequestID] = end{s.Start.Add(s.Duration), s.Duration}
		}}))
	// A tracer's middleware puts the request's span in its context before
	// the handler sees it.
	traced := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := [16]byte{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), traceKey{}, id)))
	})
	before := time.Now()
	ids := []string{
		send(h, "POST", "/plants", testToken, "client-id-1", `{"id":1,"name":"Fern"}`),
		send(h, "POST", "/plants?x=1", testToken, "", `{"id":1,"name":"Fern"}`),
		send(h, "POST", "/plants", "wrong-"+testToken, "", `{"id":2,"name":"Fern"}`),
		send(h, "GET", "/nowhere", "", "bad id", ""),
		send(h, "GET", "/healthz", "", "", ""),
		send(traced, "GET", "/plants/1", testToken, "", ""),
	}
	after := time.Now()
	var got []accessLine
	for _, l := range accessLines(t, out.String()) {
		if l.Time.Before(before) || l.Time.After(after) {
			t.Errorf("line %+v has time %v, outside the requests' %v to %v", l, l.Time, before, after)
		}
		if l.Duration < 0 || l.Duration > after.Sub(before) {
			t.Errorf("duration %v is outside 0 to %v", l.Duration, after.Sub(before))
		}
		if e := ends[l.RequestID]; !l.Time.Equal(e.at) || l.Duration != e.duration {
			t.Errorf("request %s: the access line says it ended at %v after %v, the hook at %v after %v",
				l.RequestID, l.Time, l.Duration, e.at, e.duration)
		}
		l.Time, l.Duration = time.Time{}, 0
		got = append(got, l)
	}
	want := []accessLine{
		{Level: "INFO", Msg: "request", Method: "POST", Path: "/plants", Status: 200, RequestID: ids[0]},
		{Level: "INFO", Msg: "request", Method: "POST", Path: "/plants", Status: 400, Error: 409, RequestID: ids[1]},
		{Level: "INFO", Msg: "request", Method: "POST", Path: "/plants", Status: 400, Error: 401, RequestID: ids[2]},
		{Level: "INFO", Msg: "request", Method: "GET", Path: "/nowhere", Status: 400, Error: 404, RequestID: ids[3]},
		// GET /healthz's success is at debug: no line.
		{Level: "INFO", Msg: "request", Method: "GET", Path: "/plants/1", Status: 200, RequestID: ids[5],
			TraceID: "4bf92f3577b34da6a3ce929d0e0e4736"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("access lines mismatch (-want +got):\n%s", diff)
	}
	if calls != len(ids) {
		t.Errorf("the Served hook was called %d times for %d requests", calls, len(ids))
	}
}

// hostilePaths hold characters that do not print, a right-to-left
// override among them, %-escaped as a client would send them.
var hostilePaths = []string{
	"/plants/\u202eevil",       // right-to-left override
	"/plants/a\u200bb\u2066c",  // zero width space, left-to-right isolate
	"/plants/\u0085x\u00a0y",   // a C1 control (next line), no-break space
	"/plants/\U000e0041\u2028", // a tag character (outside the BMP), line separator
	"/plants/a\x1bb\x07c",      // ASCII controls: escape, bell
}

// escapePath %-escapes every byte of p but / and ASCII letters.
func escapePath(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '/' || 'a' <= c && c <= 'z' {
			b.WriteByte(c)
		} else {
			b.WriteString("%" + strings.ToUpper(string("0123456789abcdef"[c>>4])+string("0123456789abcdef"[c&15])))
		}
	}
	return b.String()
}

// TestLogsEscapeWhatDoesNotPrint sends requests whose paths hold
// characters that do not print to a handler whose log and access log are
// NewLogHandler's, and checks that neither format writes any of them as
// it is, and that each JSON line still decodes to the path that was sent.
func TestLogsEscapeWhatDoesNotPrint(t *testing.T) {
	t.Parallel()
	for _, format := range []httpapi.LogFormat{httpapi.TextLog, httpapi.JSONLog} {
		var out testkit.Buffer
		h := newHandler(nil, httpapi.WithLogger(slog.New(httpapi.NewLogHandler(&out, format, &slog.HandlerOptions{Level: slog.LevelDebug}))),
			httpapi.WithAccessLog(&out, httpapi.AccessLog{Format: format}))
		for _, p := range hostilePaths {
			send(h, "GET", escapePath(p), testToken, "", "")
			send(h, "GET", escapePath(p), "wrong", "", "") // logs "token rejected" at debug, with the path
		}
		logs := out.String()
		if n := strings.Count(logs, "\n"); n != 3*len(hostilePaths) {
			t.Errorf("%v: %d lines, want %d: an access line a request and a rejection's line:\n%s", format, n, 3*len(hostilePaths), logs)
		}
		checkPrintable(t, format.String(), logs)
		if format != httpapi.JSONLog {
			continue
		}
		seen := map[string]int{}
		for _, l := range accessLines(t, logs) {
			if l.Msg == "request" {
				seen[l.Path]++
			}
		}
		for _, p := range hostilePaths {
			if seen[p] != 2 {
				t.Errorf("%d JSON access lines decode to the path %q, want 2:\n%s", seen[p], p, logs)
			}
		}
	}
}

// checkPrintable fails t when logs hold a character that does not print
// or a control, but for the lines' newlines.
func checkPrintable(t *testing.T, name, logs string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSuffix(logs, "\n"), "\n") {
		for _, r := range line {
			if r < ' ' || r >= utf8.RuneSelf && !strconv.IsPrint(r) {
				t.Errorf("a %s log line holds %U as it is: %q", name, r, line)
			}
		}
	}
}

// TestHandlerLinesEscapeForAnyHandler checks that the lines the handler
// logs with a client's path hand a host's handler no character that does
// not print, even a handler that escapes none, such as slog's JSONHandler
// beyond ASCII; and that a printable path reaches it as it was sent.
func TestHandlerLinesEscapeForAnyHandler(t *testing.T) {
	t.Parallel()
	var out testkit.Buffer
	h := newHandler(nil, httpapi.WithLogger(slog.New(slog.NewJSONHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	paths := append([]string{"/plants/ünï ok"}, hostilePaths...)
	for _, p := range paths {
		send(h, "DELETE", escapePath(p), "wrong", "", "")
	}
	logs := out.String()
	checkPrintable(t, "JSONHandler", logs)
	var got []string
	for _, l := range accessLines(t, logs) {
		got = append(got, l.Path)
	}
	want := []string{"/plants/ünï ok"}
	for _, p := range hostilePaths {
		want = append(want, strconv.Quote(p))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("paths logged (-want +got):\n%s", diff)
	}
}

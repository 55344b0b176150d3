package httpapi_test

import (
	"context"
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
		// GET /healthz's success is at debug: no line.
		{Level: "INFO", Msg: "request", Method: "GET", Path: "/plants/1", Status: 200, RequestID: ids[3],
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
// characters that do not print, and one whose path prints though it is not
// ASCII, to handlers that log through NewLogHandler, in either format, with
// an access log of that format, and through a host's handler that escapes
// nothing beyond ASCII, slog's JSONHandler, without one. No line holds a
// character that does not print as it is; a JSON access line decodes to
// the path that was sent, and the handler's own line to that path, quoted
// when it does not print.
func TestLogsEscapeWhatDoesNotPrint(t *testing.T) {
	t.Parallel()
	debug := &slog.HandlerOptions{Level: slog.LevelDebug}
	paths := append([]string{"/plants/ünï ok"}, hostilePaths...)
	for _, tt := range []struct {
		format    httpapi.LogFormat
		accessLog bool // and NewLogHandler; else slog's JSONHandler alone
	}{{httpapi.TextLog, true}, {httpapi.JSONLog, true}, {httpapi.JSONLog, false}} {
		var out testkit.Buffer
		var opts []httpapi.Option
		name := "slog.JSONHandler"
		if tt.accessLog {
			name = "NewLogHandler " + tt.format.String()
			opts = []httpapi.Option{httpapi.WithLogger(slog.New(httpapi.NewLogHandler(&out, tt.format, debug))),
				httpapi.WithAccessLog(&out, httpapi.AccessLog{Format: tt.format})}
		} else {
			opts = []httpapi.Option{httpapi.WithLogger(slog.New(slog.NewJSONHandler(&out, debug)))}
		}
		h := newHandler(nil, opts...)
		var want []accessLine
		for _, p := range paths {
			send(h, "GET", escapePath(p), testToken, "", "")
			send(h, "GET", escapePath(p), "wrong", "", "") // logs "token rejected" at debug, with the path
			rejected := accessLine{Msg: "httpapi: token rejected", Path: p}
			if p != paths[0] {
				rejected.Path = strconv.Quote(p)
			}
			if tt.accessLog {
				want = append(want, accessLine{Msg: "request", Path: p}, rejected, accessLine{Msg: "request", Path: p})
			} else {
				want = append(want, rejected)
			}
		}
		logs := out.String()
		for _, line := range strings.Split(strings.TrimSuffix(logs, "\n"), "\n") {
			for _, r := range line {
				if r < ' ' || r >= utf8.RuneSelf && !strconv.IsPrint(r) {
					t.Errorf("a %s line holds %U as it is: %q", name, r, line)
				}
			}
		}
		if tt.format == httpapi.TextLog {
			if n := strings.Count(logs, "\n"); n != len(want) {
				t.Errorf("%s: %d lines, want %d:\n%s", name, n, len(want), logs)
			}
			continue
		}
		var got []accessLine
		for _, l := range accessLines(t, logs) {
			got = append(got, accessLine{Msg: l.Msg, Path: l.Path})
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: messages and paths logged (-want +got):\n%s", name, diff)
		}
	}
}

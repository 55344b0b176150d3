package main

import (
	"context"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/plantstore/plantstore/httpapi"
)

// An accessLog writes the binary's access lines, one per request it is
// told of: the record a slog.Logger would make of LogAttrs(ctx, Info,
// "request", method, path, status, duration, request_id, trace_id when
// traceIDs is set and the request has a valid span context, and, unless
// 0, error), in the text or JSON form of -log-format, byte for byte as
// slog.TextHandler or slog.JSONHandler writes it, with the request's end
// as its time.
//
// It appends the line itself rather than build a slog.Record and hand it
// to the handler: the handler's work was a fifth of a create's CPU time
// in process, and about 5 % of the throughput of creates over loopback
// (docs/performance.md, "The access log"). A line whose strings are not
// all plain bytes (see plain), such as a path with a space or a client's
// request id with a quote, is handed to the handler instead, which quotes
// and escapes it as it does every other line; so are all lines while
// handler is not slog's text or JSON handler as newLogger makes it.
//
// A probe's success, a 200 answer to GET /healthz or /readyz, is logged at
// debug, as a load balancer probing every second would otherwise fill the
// log with them; its failures stay at info.
type accessLog struct {
	w       io.Writer    // the log output, a *logWriter
	json    bool         // -log-format json
	handler slog.Handler // for the lines with bytes to quote
	// probe marks the Routes of /healthz and /readyz.
	probe [256]bool
	// traceIDs adds the request's trace id, when tracing is on.
	traceIDs bool
}

func newAccessLog(w io.Writer, json bool, handler slog.Handler) *accessLog {
	l := &accessLog{w: w, json: json, handler: handler}
	for _, r := range httpapi.Routes() {
		l.probe[r] = r.String() == "/healthz" || r.String() == "/readyz"
	}
	return l
}

// lineBufs keeps access lines' buffers between requests.
var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// served writes the access line of s.
func (l *accessLog) served(s httpapi.Served) {
	if l.probe[s.Route] && s.Status == http.StatusOK {
		l.record(s, slog.LevelDebug)
		return
	}
	if !plain(s.Method) || !plain(s.Path) || !plain(s.RequestID) {
		l.record(s, slog.LevelInfo)
		return
	}
	end := s.Start.Add(s.Duration)
	bp := lineBufs.Get().(*[]byte)
	b := (*bp)[:0]
	if l.json {
		b = append(b, `{"time":"`...)
		b = end.AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","level":"INFO","msg":"request","method":"`...)
		b = append(b, s.Method...)
		b = append(b, `","path":"`...)
		b = append(b, s.Path...)
		b = append(b, `","status":`...)
		b = strconv.AppendInt(b, int64(s.Status), 10)
		b = append(b, `,"duration":`...)
		b = strconv.AppendInt(b, int64(s.Duration), 10)
		b = append(b, `,"request_id":"`...)
		b = append(b, s.RequestID...)
		b = append(b, '"')
		if tid, ok := l.traceID(s); ok {
			b = append(b, `,"trace_id":"`...)
			b = hex.AppendEncode(b, tid[:])
			b = append(b, '"')
		}
		if s.Code != 0 {
			b = append(b, `,"error":`...)
			b = strconv.AppendInt(b, int64(s.Code), 10)
		}
		b = append(b, "}\n"...)
	} else {
		b = append(b, "time="...)
		b = appendMillis(b, end)
		b = append(b, " level=INFO msg=request method="...)
		b = append(b, s.Method...)
		b = append(b, " path="...)
		b = append(b, s.Path...)
		b = append(b, " status="...)
		b = strconv.AppendInt(b, int64(s.Status), 10)
		b = append(b, " duration="...)
		b = append(b, s.Duration.String()...)
		b = append(b, " request_id="...)
		b = append(b, s.RequestID...)
		if tid, ok := l.traceID(s); ok {
			b = append(b, " trace_id="...)
			b = hex.AppendEncode(b, tid[:])
		}
		if s.Code != 0 {
			b = append(b, " error="...)
			b = strconv.AppendInt(b, int64(s.Code), 10)
		}
		b = append(b, '\n')
	}
	l.w.Write(b)
	*bp = b
	lineBufs.Put(bp)
}

// A millis is a time as slog.TextHandler writes it, to the millisecond,
// and the millisecond and location it stands for.
type millis struct {
	ms   int64
	loc  *time.Location
	text []byte
}

// lastMillis is the time of the last text line. Under load, many lines
// end within one millisecond; formatting the time once for all of them
// instead of once for each gave 3.8-4.3 % more creates a second over
// loopback (docs/performance.md, "The access log").
var lastMillis atomic.Pointer[millis]

// appendMillis appends t as slog.TextHandler writes a record's time:
// t.AppendFormat(b, "2006-01-02T15:04:05.000Z07:00").
func appendMillis(b []byte, t time.Time) []byte {
	ms := t.UnixMilli()
	m := lastMillis.Load()
	if m == nil || m.ms != ms || m.loc != t.Location() {
		m = &millis{ms: ms, loc: t.Location(), text: t.AppendFormat(nil, "2006-01-02T15:04:05.000Z07:00")}
		lastMillis.Store(m)
	}
	return append(b, m.text...)
}

// record writes the access line of s at level through the log handler,
// if it takes that level.
func (l *accessLog) record(s httpapi.Served, level slog.Level) {
	if !l.handler.Enabled(context.Background(), level) {
		return
	}
	r := slog.NewRecord(s.Start.Add(s.Duration), level, "request", 0)
	r.AddAttrs(
		slog.String("method", s.Method),
		slog.String("path", s.Path),
		slog.Int("status", s.Status),
		slog.Duration("duration", s.Duration),
		slog.String("request_id", s.RequestID),
	)
	if tid, ok := l.traceID(s); ok {
		r.AddAttrs(slog.String("trace_id", tid.String()))
	}
	if s.Code != 0 {
		r.AddAttrs(slog.Int("error", s.Code))
	}
	l.handler.Handle(context.Background(), r)
}

// traceID returns the trace id of s's request, when l logs them and the
// request has a valid span context.
func (l *accessLog) traceID(s httpapi.Served) (trace.TraceID, bool) {
	if !l.traceIDs || s.Context == nil {
		return trace.TraceID{}, false
	}
	sc := trace.SpanContextFromContext(s.Context)
	return sc.TraceID(), sc.IsValid()
}

// plain reports whether s is not empty and holds only bytes that neither
// handler quotes nor escapes: ASCII letters and digits, and / - . _ ~ + :
// @ ! $ * , ;.
func plain(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			switch c {
			case '/', '-', '.', '_', '~', '+', ':', '@', '!', '$', '*', ',', ';':
			default:
				return false
			}
		}
	}
	return true
}

package httpapi

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
)

// An AccessLog says how the handler writes its access lines (see
// [WithAccessLog]).
type AccessLog struct {
	// Format is the lines' form, that of the host's other log lines.
	Format LogFormat
	// Level is the least level written; nil is [slog.LevelInfo]. Each
	// line is at level Info, but for the successes of [Route.Polled]
	// routes (a 200 to /healthz, /readyz or /metrics), which are at Debug:
	// a load balancer probing every second would otherwise fill the log.
	// A [*slog.LevelVar] shared with the host's handler lets both follow
	// one setting.
	Level slog.Leveler
	// TraceID, unless nil, returns the id of the trace a request's context
	// belongs to, and whether it has one; a line whose request has one
	// carries it as trace_id, in hex, so that a line leads to its trace.
	// Package oteltrace has such a func for OpenTelemetry.
	TraceID func(ctx context.Context) (id [16]byte, ok bool)
}

// WithAccessLog makes the handler write one line per request to w, the
// record a [slog.Logger] over NewLogHandler(w, a.Format, …) would write
// for
//
//	LogAttrs(ctx, level, "request", method, path, status, duration, request_id, [trace_id], [error])
//
// byte for byte, with the request's end as its time: method and path as
// sent, the status, the duration from the request reaching the handler to
// the end of its answer, the request id (see [RequestID]), the trace id
// when a.TraceID finds one, and the Error's code for a failure. Tokens and
// bodies are never logged. The line is written with one Write call, so w
// must be safe for concurrent use; it is called on the request's
// goroutine, so a w that may block (a pipe, a terminal) is best buffered.
// The end time is read once for the line and the [Hooks]' Served.
//
// The line is appended by hand rather than made by slog: a handler's work
// was a fifth of a create's CPU time in process (go test -run '^$' -bench
// BenchmarkAccessLog ./httpapi compares the two), and about 5 % of the
// throughput of creates over loopback (SERVERS="old new"
// scripts/loopback-bench.sh; docs/performance.md, "The access log"). A
// line whose method, path or request id holds a byte either slog handler
// would quote or escape is made by the handler instead, so it matches the
// host's other lines there too. A host that wants its access lines in
// another form, or through a slog.Handler of its own, writes them from a
// Served hook ([WithHooks]).
//
// A nil w turns the access log off. Later WithAccessLog replace earlier.
func WithAccessLog(w io.Writer, a AccessLog) Option {
	return func(c *config) {
		c.accessLog = nil
		if w != nil {
			c.accessLog = newAccessLog(w, a)
		}
	}
}

// An accessLog writes the access lines of [WithAccessLog].
type accessLog struct {
	w       io.Writer
	json    bool
	level   slog.Leveler
	traceID func(context.Context) ([16]byte, bool)
	// handler writes the lines with bytes to quote, and those at Debug.
	handler slog.Handler
	// polled marks the Routes whose successes are logged at Debug.
	polled [256]bool
}

func newAccessLog(w io.Writer, a AccessLog) *accessLog {
	l := &accessLog{w: w, json: a.Format == JSONLog, level: a.Level, traceID: a.TraceID,
		handler: NewLogHandler(w, a.Format, &slog.HandlerOptions{Level: slog.LevelDebug})}
	if l.level == nil {
		l.level = slog.LevelInfo
	}
	for _, r := range Routes() {
		l.polled[r] = r.Polled()
	}
	return l
}

// lineBufs keeps access lines' buffers between requests.
var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// write writes the access line of s, unless its level is below l's.
func (l *accessLog) write(s *Served) {
	level := slog.LevelInfo
	if l.polled[s.Route] && s.Status == http.StatusOK {
		level = slog.LevelDebug
	}
	if level < l.level.Level() {
		return
	}
	if level != slog.LevelInfo || !plain(s.Method) || !plain(s.Path) || !plain(s.RequestID) {
		l.record(s, level)
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
		if tid, ok := l.traceIDOf(s); ok {
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
		if tid, ok := l.traceIDOf(s); ok {
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
// loopback (SERVERS="old new" scripts/loopback-bench.sh, 7 of 8 rounds
// ahead in each of two runs; docs/performance.md, "The access log").
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

// record writes the access line of s at level through l's handler.
func (l *accessLog) record(s *Served, level slog.Level) {
	r := slog.NewRecord(s.Start.Add(s.Duration), level, "request", 0)
	r.AddAttrs(
		slog.String("method", s.Method),
		slog.String("path", s.Path),
		slog.Int("status", s.Status),
		slog.Duration("duration", s.Duration),
		slog.String(requestIDAttr, s.RequestID),
	)
	if tid, ok := l.traceIDOf(s); ok {
		r.AddAttrs(slog.String("trace_id", hex.EncodeToString(tid[:])))
	}
	if s.Code != 0 {
		r.AddAttrs(slog.Int("error", s.Code))
	}
	l.handler.Handle(context.Background(), r)
}

// traceIDOf returns the trace id of s's request, when l logs them and the
// request has one.
func (l *accessLog) traceIDOf(s *Served) ([16]byte, bool) {
	if l.traceID == nil || s.Context == nil {
		return [16]byte{}, false
	}
	return l.traceID(s.Context)
}

// plain reports whether s is not empty and holds only bytes that neither
// slog handler quotes nor escapes: ASCII letters and digits, and / - . _ ~
// + : @ ! $ * , ;.
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

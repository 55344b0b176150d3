package httpapi

import (
	"bytes"
	"context"
	be "encoding/binary"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"
)

// traceKey keys the trace id the tests' TraceID func finds in a context.
type traceKey struct{}

// testTraceID is an AccessLog's TraceID for the tests: the id put in the
// context under traceKey, valid unless it is all zeros, as a W3C trace id.
func testTraceID(ctx context.Context) ([16]byte, bool) {
	id, _ := ctx.Value(traceKey{}).([16]byte)
	return id, id != [16]byte{}
}

// TestAccessLogAsSlogWritesIt checks that accessLog writes every line byte
// for byte as NewLogHandler's text and JSON handlers write the record it
// stands for, over many requests: plain ones, which it formats itself,
// and ones with bytes to quote or escape, which it hands to the handler.
func TestAccessLogAsSlogWritesIt(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(vs ...string) string { return vs[rng.IntN(len(vs))] }
	zones := []*time.Location{time.UTC, time.FixedZone("", 3600), time.FixedZone("", -(9*3600 + 30*60))}
	for _, format := range []LogFormat{TextLog, JSONLog} {
		var got, want bytes.Buffer
		reference := NewLogHandler(&want, format, nil)
		logs := [2]*accessLog{newAccessLog(&got, AccessLog{Format: format}),
			newAccessLog(&got, AccessLog{Format: format, TraceID: testTraceID})}
		for i := range 10000 {
			// Half the lines are of a log that finds trace ids, for
			// requests with a valid one, an invalid one, or no context.
			l := logs[i%2]
			s := Served{
				Method: pick("GET", "POST", "DELETE", "HEAD", "OPTIONS", "BREW", "", "G\"T"),
				Path: pick("/plants", "/plants/42", "/plants/-9223372036854775808", "/", "", "/a b", "/a=b",
					"/%2F", "/plants/\u202e", "/plants/\x00", "/pl\"ants", `/back\slash`, "/ünï", "/\xff", "/~user/x.y_z", "/a+b:c@d"),
				Status:    pick2(rng, 200, 204, 400, 404, 503),
				Code:      pick2(rng, 0, 0, 400, 401, 409, 503, 504),
				RequestID: pick("0123456789abcdef0123456789abcdef", "client-id_1.2", "a=b", "x\"y", "", "id with space", `\`),
				Start:     time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).In(zones[rng.IntN(len(zones))]),
				Duration:  time.Duration(rng.Int64N(int64(10 * time.Second))),
			}
			if i%7 == 0 {
				s.Duration = time.Duration(rng.IntN(3)) * time.Millisecond
			}
			var tid [16]byte
			switch rng.IntN(3) {
			case 0:
				be.BigEndian.PutUint64(tid[:8], rng.Uint64())
				be.BigEndian.PutUint64(tid[8:], rng.Uint64()|1) // not zero: valid
				s.Context = context.WithValue(context.Background(), traceKey{}, tid)
			case 1:
				s.Context = context.Background()
			}
			l.write(&s)
			r := slog.NewRecord(s.Start.Add(s.Duration), slog.LevelInfo, "request", 0)
			r.AddAttrs(slog.String("method", s.Method), slog.String("path", s.Path), slog.Int("status", s.Status),
				slog.Duration("duration", s.Duration), slog.String("request_id", s.RequestID))
			if l.traceID != nil && tid != [16]byte{} {
				r.AddAttrs(slog.String("trace_id", hex.EncodeToString(tid[:])))
			}
			if s.Code != 0 {
				r.AddAttrs(slog.Int("error", s.Code))
			}
			reference.Handle(context.Background(), r)
			if g, w := got.String(), want.String(); g != w {
				t.Fatalf("%v: for %+v the access log wrote\n%s\nwhere slog writes\n%s", format, s, g, w)
			}
			got.Reset()
			want.Reset()
		}
	}
}

func pick2(rng *rand.Rand, vs ...int) int { return vs[rng.IntN(len(vs))] }

// TestAppendMillis checks that appendMillis writes times as AppendFormat
// does with slog.TextHandler's layout, for runs of times within one
// millisecond, as under load, in several zones and on both sides of 1970.
func TestAppendMillis(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	zones := []*time.Location{time.UTC, time.Local, time.FixedZone("", 5*3600+30*60), time.FixedZone("", -3600)}
	if ny, err := time.LoadLocation("America/New_York"); err == nil {
		zones = append(zones, ny)
	}
	var ms int64
	for i := range 100000 {
		switch {
		case i%20 == 0:
			ms = rng.Int64N(8e12) - 4e12
		case i%5 == 0:
			ms++ // the next millisecond, most often in the same second
		}
		at := time.UnixMilli(ms).Add(time.Duration(rng.Int64N(1e6))).In(zones[rng.IntN(len(zones))])
		const layout = "2006-01-02T15:04:05.000Z07:00"
		if got, want := string(appendMillis([]byte("x"), at)), "x"+at.Format(layout); got != want {
			t.Fatalf("appendMillis(%v) = %q, want %q", at, got, want)
		}
	}
}

// BenchmarkAccessLog compares the access line accessLog appends with the
// same line made by slog.Logger.LogAttrs over NewLogHandler, in both
// formats, into a writer that throws it away.
func BenchmarkAccessLog(b *testing.B) {
	s := Served{Method: "POST", Path: "/plants", Status: 400, Code: 409,
		RequestID: "0123456789abcdef0123456789abcdef", Start: time.Now(), Duration: 1234567}
	for _, format := range []LogFormat{TextLog, JSONLog} {
		b.Run(fmt.Sprintf("format=%v/accessLog", format), func(b *testing.B) {
			b.ReportAllocs()
			l := newAccessLog(discard{}, AccessLog{Format: format})
			for b.Loop() {
				l.write(&s)
			}
		})
		b.Run(fmt.Sprintf("format=%v/slog", format), func(b *testing.B) {
			b.ReportAllocs()
			logger := slog.New(NewLogHandler(discard{}, format, nil))
			ctx := context.Background()
			for b.Loop() {
				logger.LogAttrs(ctx, slog.LevelInfo, "request", slog.String("method", s.Method), slog.String("path", s.Path),
					slog.Int("status", s.Status), slog.Duration("duration", s.Duration), slog.String("request_id", s.RequestID),
					slog.Int("error", s.Code))
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestPolledLogAtDebug checks that the successes of the routes machines
// poll (a load balancer's probes, a metrics collector's scrapes) leave no
// access line at info but one at debug, and that a failed probe and any
// other request are logged at info; nothing is logged below the level,
// which a LevelVar moves while the log is in use.
func TestPolledLogAtDebug(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	var level slog.LevelVar
	l := newAccessLog(&out, AccessLog{Level: &level})
	for _, c := range []struct {
		route  string
		status int
		level  slog.Level
		want   string // the line's level, or "" for none
	}{
		{"/readyz", 200, slog.LevelInfo, ""},
		{"/healthz", 200, slog.LevelInfo, ""},
		{"/metrics", 200, slog.LevelInfo, ""},
		{"/readyz", 200, slog.LevelDebug, "level=DEBUG"},
		{"/healthz", 200, slog.LevelDebug, "level=DEBUG"},
		{"/metrics", 200, slog.LevelDebug, "level=DEBUG"},
		{"/readyz", 503, slog.LevelInfo, "level=INFO"},
		{"/metrics", 400, slog.LevelInfo, "level=INFO"},
		{"/plants", 200, slog.LevelInfo, "level=INFO"},
		{"/plants", 200, slog.LevelDebug, "level=INFO"},
		{"/plants", 200, slog.LevelWarn, ""},
		{"/readyz", 503, slog.LevelWarn, ""},
	} {
		out.Reset()
		level.Set(c.level)
		l.write(&Served{Route: RouteOf(c.route), Method: "GET", Path: c.route, Status: c.status, RequestID: "probe-1", Start: time.Now()})
		got := out.String()
		if c.want == "" && got != "" || c.want != "" && !bytes.Contains(out.Bytes(), []byte(" "+c.want+" msg=request")) {
			t.Errorf("%s answered %d, logging at %v: wrote %q, want %q", c.route, c.status, c.level, got, c.want)
		}
	}
}

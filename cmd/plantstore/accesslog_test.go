package main

import (
	"bytes"
	"context"
	be "encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/plantstore/plantstore/httpapi"
)

// TestAccessLogAsSlogWritesIt checks that accessLog writes every line byte
// for byte as slog's text and JSON handlers write the record it stands
// for, over many requests: plain ones, which it formats itself, and ones
// with bytes to quote or escape, which it hands to the handler.
func TestAccessLogAsSlogWritesIt(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(vs ...string) string { return vs[rng.IntN(len(vs))] }
	zones := []*time.Location{time.UTC, time.FixedZone("", 3600), time.FixedZone("", -(9*3600 + 30*60))}
	for _, json := range []bool{false, true} {
		var got, want bytes.Buffer
		var handler, reference slog.Handler
		if json {
			handler, reference = slog.NewJSONHandler(&got, nil), slog.NewJSONHandler(&want, nil)
		} else {
			handler, reference = slog.NewTextHandler(&got, nil), slog.NewTextHandler(&want, nil)
		}
		l := newAccessLog(&got, json, handler)
		for i := range 10000 {
			// Half the lines are of a binary that traces, for requests
			// with a valid span context, an invalid one, or none.
			l.traceIDs = i%2 == 1
			s := httpapi.Served{
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
			var tid trace.TraceID
			switch rng.IntN(3) {
			case 0:
				be.BigEndian.PutUint64(tid[:8], rng.Uint64())
				be.BigEndian.PutUint64(tid[8:], rng.Uint64()|1) // not zero: valid
				s.Context = trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
					TraceID: tid, SpanID: trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8}}))
			case 1:
				s.Context = context.Background()
			}
			l.served(s)
			r := slog.NewRecord(s.Start.Add(s.Duration), slog.LevelInfo, "request", 0)
			r.AddAttrs(slog.String("method", s.Method), slog.String("path", s.Path), slog.Int("status", s.Status),
				slog.Duration("duration", s.Duration), slog.String("request_id", s.RequestID))
			if l.traceIDs && tid.IsValid() {
				r.AddAttrs(slog.String("trace_id", tid.String()))
			}
			if s.Code != 0 {
				r.AddAttrs(slog.Int("error", s.Code))
			}
			reference.Handle(context.Background(), r)
			if g, w := got.String(), want.String(); g != w {
				t.Fatalf("json=%v: for %+v the access log wrote\n%s\nwhere slog writes\n%s", json, s, g, w)
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
// same line made by slog.Logger.LogAttrs, in both formats, into a writer
// that throws it away.
func BenchmarkAccessLog(b *testing.B) {
	s := httpapi.Served{Method: "POST", Path: "/plants", Status: 400, Code: 409,
		RequestID: "0123456789abcdef0123456789abcdef", Start: time.Now(), Duration: 1234567}
	for _, json := range []bool{false, true} {
		var h slog.Handler = slog.NewTextHandler(discard{}, nil)
		if json {
			h = slog.NewJSONHandler(discard{}, nil)
		}
		b.Run(fmt.Sprintf("json=%v/accessLog", json), func(b *testing.B) {
			b.ReportAllocs()
			l := newAccessLog(discard{}, json, h)
			for b.Loop() {
				l.served(s)
			}
		})
		b.Run(fmt.Sprintf("json=%v/slog", json), func(b *testing.B) {
			b.ReportAllocs()
			logger := slog.New(h)
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

// TestProbesLogAtDebug checks that a load balancer's probes, answered 200,
// leave no access line at info but one at debug, and that a failed probe
// and any other request are logged at info.
func TestProbesLogAtDebug(t *testing.T) {
	t.Parallel()
	routes := map[string]httpapi.Route{}
	for _, r := range httpapi.Routes() {
		routes[r.String()] = r
	}
	for _, c := range []struct {
		route  string
		status int
		level  slog.Level
		want   string // the line's level, or "" for none
	}{
		{"/readyz", 200, slog.LevelInfo, ""},
		{"/healthz", 200, slog.LevelInfo, ""},
		{"/readyz", 200, slog.LevelDebug, "level=DEBUG"},
		{"/readyz", 503, slog.LevelInfo, "level=INFO"},
		{"/plants", 200, slog.LevelInfo, "level=INFO"},
	} {
		r, ok := routes[c.route]
		if !ok {
			t.Fatalf("no Route %s in %v", c.route, httpapi.Routes())
		}
		var out bytes.Buffer
		l := newAccessLog(&out, false, slog.NewTextHandler(&out, &slog.HandlerOptions{Level: c.level}))
		l.served(httpapi.Served{Route: r, Method: "GET", Path: c.route, Status: c.status, RequestID: "probe-1", Start: time.Now()})
		got := out.String()
		if c.want == "" && got != "" || c.want != "" && !bytes.Contains(out.Bytes(), []byte(" "+c.want+" msg=request")) {
			t.Errorf("%s answered %d, logging at %v: wrote %q, want %q", c.route, c.status, c.level, got, c.want)
		}
	}
}

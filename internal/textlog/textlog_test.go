package textlog

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// handle formats r with h, a Handler or TextHandler made by mk over a
// fresh buffer, and returns what it wrote.
func handle(t *testing.T, mk func(io.Writer) slog.Handler, r slog.Record, wrap func(slog.Handler) slog.Handler) string {
	t.Helper()
	var buf bytes.Buffer
	h := mk(&buf)
	if wrap != nil {
		h = wrap(h)
	}
	if err := h.Handle(context.Background(), r); err != nil {
		t.Fatalf("Handle: %v", err)
	}
	return buf.String()
}

func ours(w io.Writer) slog.Handler { return New(w, slog.LevelDebug) }

func theirs(w io.Writer) slog.Handler {
	return slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})
}

// same checks that Handler writes r as TextHandler does.
func same(t *testing.T, r slog.Record, wrap func(slog.Handler) slog.Handler) {
	t.Helper()
	want := handle(t, theirs, r, wrap)
	got := handle(t, ours, r, wrap)
	if got != want {
		t.Errorf("line differs from slog.TextHandler's (-want +got):\n%s", cmp.Diff(want, got))
	}
}

func record(tm time.Time, level slog.Level, msg string, attrs ...slog.Attr) slog.Record {
	r := slog.NewRecord(tm, level, msg, 0)
	r.AddAttrs(attrs...)
	return r
}

type textMarshaler struct{}

func (textMarshaler) MarshalText() ([]byte, error) { return []byte("marshalled text"), nil }

type valuer struct{}

func (valuer) LogValue() slog.Value { return slog.StringValue("resolved value") }

func TestMatchesTextHandler(t *testing.T) {
	now := time.Date(2026, 11, 23, 1, 2, 3, 456789012, time.UTC)
	tests := []struct {
		name   string
		r      slog.Record
		reason string
	}{
		{name: "access line", r: record(now, slog.LevelInfo, "request",
			slog.String("method", "POST"), slog.String("path", "/plants"),
			slog.Int("status", 400), slog.Duration("duration", 12345*time.Nanosecond), slog.Int("error", 409))},
		{name: "no time", r: record(time.Time{}, slog.LevelWarn, "x", slog.Int("n", 1)),
			reason: "a zero time leaves the time key out"},
		{name: "zone east", r: record(now.In(time.FixedZone("", 5*3600+45*60)), slog.LevelInfo, "m")},
		{name: "zone west", r: record(now.In(time.FixedZone("", -9*3600-30*60)), slog.LevelInfo, "m")},
		{name: "zone under a minute", r: record(now.In(time.FixedZone("", -30)), slog.LevelInfo, "m"),
			reason: "the offset is written in whole minutes, so this one is +00:00, not Z"},
		{name: "year 1", r: record(time.Date(1, 1, 1, 0, 0, 0, 1e6, time.UTC), slog.LevelInfo, "m")},
		{name: "year 10000", r: record(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), slog.LevelInfo, "m"),
			reason: "outside RFC 3339's years: handed to TextHandler"},
		{name: "monotonic clock", r: record(time.Now(), slog.LevelInfo, "m")},
		{name: "custom levels", r: record(now, slog.LevelError+3, "m", slog.Any("l", slog.LevelDebug-2))},
		{name: "quoting", r: record(now, slog.LevelInfo, "with space",
			slog.String("empty", ""), slog.String("eq", "a=b"), slog.String("quote", `a"b`),
			slog.String("backslash", `a\b`), slog.String("tab", "a\tb"), slog.String("del", "a\x7fb"),
			slog.String("nbsp", "a\u00a0b"), slog.String("invalid", "a\xffb"), slog.String("replacement", "a\ufffdb"),
			slog.String("unicode", "héllo, 世界"), slog.String("key with space", "v"), slog.String("k=", "v"))},
		{name: "numbers", r: record(now, slog.LevelInfo, "m",
			slog.Int64("min", math.MinInt64), slog.Uint64("max", math.MaxUint64),
			slog.Float64("f", 1.5e-300), slog.Float64("nan", math.NaN()), slog.Float64("inf", math.Inf(-1)),
			slog.Bool("t", true), slog.Bool("f", false))},
		{name: "durations", r: record(now, slog.LevelInfo, "m",
			slog.Duration("zero", 0), slog.Duration("ns", 999), slog.Duration("us", 1500),
			slog.Duration("us0", 1001), slog.Duration("ms", 12345678), slog.Duration("s", 1500*time.Millisecond),
			slog.Duration("min", 2*time.Minute), slog.Duration("h", time.Hour+time.Nanosecond),
			slog.Duration("neg", -time.Microsecond), slog.Duration("minimum", math.MinInt64),
			slog.Duration("maximum", math.MaxInt64))},
		{name: "empty key", r: record(now, slog.LevelInfo, "m", slog.Any("", nil), slog.Int("", 3)),
			reason: "an empty Attr is elided, an Int with an empty key is not"},
		{name: "other kinds", r: record(now, slog.LevelInfo, "m",
			slog.String("first", "fast"), slog.Time("t", now), slog.Any("err", errors.New("boom")),
			slog.Any("tm", textMarshaler{}), slog.Any("bytes", []byte("a b")), slog.Any("v", valuer{}),
			slog.Group("g", slog.Int("a", 1)))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			same(t, tt.r, nil)
		})
	}
	t.Run("WithAttrs", func(t *testing.T) {
		same(t, tests[0].r, func(h slog.Handler) slog.Handler { return h.WithAttrs([]slog.Attr{slog.Int("pid", 7)}) })
	})
	t.Run("WithGroup", func(t *testing.T) {
		same(t, tests[0].r, func(h slog.Handler) slog.Handler { return h.WithGroup("http") })
	})
}

func TestLevel(t *testing.T) {
	var buf bytes.Buffer
	h := New(&buf, slog.LevelWarn)
	ctx := context.Background()
	if h.Enabled(ctx, slog.LevelInfo) || !h.Enabled(ctx, slog.LevelWarn) {
		t.Errorf("Enabled(Info), Enabled(Warn) = %v, %v, want false, true",
			h.Enabled(ctx, slog.LevelInfo), h.Enabled(ctx, slog.LevelWarn))
	}
	if New(&buf, nil).Enabled(ctx, slog.LevelDebug) {
		t.Error("with a nil level, Enabled(Debug) = true, want false")
	}
}

// TestLinesDoNotInterleave writes from many goroutines through the fast
// path and the TextHandler fallback together, over a writer that does not
// lock, and checks every line comes out whole.
func TestLinesDoNotInterleave(t *testing.T) {
	var buf bytes.Buffer
	h := New(&buf, nil)
	derived := h.WithAttrs([]slog.Attr{slog.String("via", "text")})
	const goroutines, lines = 8, 200
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range lines {
				var r slog.Record
				if i%2 == 0 {
					r = record(time.Time{}, slog.LevelInfo, "fast", slog.Int("g", g), slog.Int("i", i))
					h.Handle(context.Background(), r)
				} else {
					r = record(time.Time{}, slog.LevelInfo, "slow", slog.Int("g", g), slog.Int("i", i))
					derived.Handle(context.Background(), r)
				}
			}
		})
	}
	wg.Wait()
	got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(got) != goroutines*lines {
		t.Fatalf("%d lines, want %d", len(got), goroutines*lines)
	}
	for _, line := range got {
		if !strings.HasPrefix(line, "level=INFO msg=fast g=") && !strings.HasPrefix(line, "level=INFO msg=slow via=text g=") {
			t.Errorf("mangled line %q", line)
		}
	}
}

type failingWriter struct{}

var errWrite = errors.New("disk full")

func (failingWriter) Write([]byte) (int, error) { return 0, errWrite }

func TestWriteErrorIsReturned(t *testing.T) {
	h := New(failingWriter{}, nil)
	r := record(time.Now(), slog.LevelInfo, "m", slog.Int("n", 1))
	if err := h.Handle(context.Background(), r); !errors.Is(err, errWrite) {
		t.Errorf("Handle = %v, want %v", err, errWrite)
	}
}

// FuzzMatchesTextHandler builds records from the fuzzer's input, attribute
// kinds chosen by the bytes of kinds, and checks that Handler writes each
// exactly as slog.TextHandler does.
func FuzzMatchesTextHandler(f *testing.F) {
	f.Add("request", 0, int64(1795400000), int64(123456789), 0, "method,path,status,duration", "POST\x00/plants", int64(200), 1.5, []byte{0, 0, 1, 5})
	f.Add("", -4, int64(0), int64(0), -30, "", "", int64(-1), math.Inf(1), []byte{2, 3, 4, 6, 7, 8})
	f.Add("a b", 12, int64(-62135596800), int64(999999999), 3600, "k=\x00 \x00\xff", "\"\x00\t\x00\u00a0", int64(math.MinInt64), math.Copysign(0, -1), []byte{0, 0, 0, 5, 5})
	f.Fuzz(func(t *testing.T, msg string, level int, sec, nsec int64, zone int, keys, strs string, n int64, x float64, kinds []byte) {
		var tm time.Time
		if sec != 0 || nsec != 0 {
			tm = time.Unix(sec, nsec).In(time.FixedZone("", zone%(18*3600)))
		}
		keyList := strings.Split(keys, "\x00")
		strList := strings.Split(strs, "\x00")
		var attrs []slog.Attr
		for i, k := range kinds {
			if i == 16 {
				break
			}
			key := keyList[i%len(keyList)]
			s := strList[i%len(strList)]
			var v slog.Value
			switch k % 10 {
			case 0:
				v = slog.StringValue(s)
			case 1:
				v = slog.Int64Value(n + int64(i))
			case 2:
				v = slog.Uint64Value(uint64(n) * uint64(i+1))
			case 3:
				v = slog.Float64Value(x * float64(i))
			case 4:
				v = slog.BoolValue(n&(1<<i) != 0)
			case 5:
				v = slog.DurationValue(time.Duration(n >> (i * 3)))
			case 6:
				v = slog.TimeValue(tm)
			case 7:
				v = slog.AnyValue(s)
			case 8:
				v = slog.GroupValue(slog.String(key, s))
			case 9:
				attrs = append(attrs, slog.Attr{})
				continue
			}
			attrs = append(attrs, slog.Attr{Key: key, Value: v})
		}
		same(t, record(tm, slog.Level(level), msg, attrs...), nil)
	})
}

// BenchmarkAccessLine formats an access line with Handler and with
// slog.TextHandler, side by side.
func BenchmarkAccessLine(b *testing.B) {
	for _, tt := range []struct {
		name string
		h    slog.Handler
	}{
		{"handler=textlog", New(io.Discard, nil)},
		{"handler=slog", slog.NewTextHandler(io.Discard, nil)},
	} {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			for b.Loop() {
				r := slog.NewRecord(time.Now(), slog.LevelInfo, "request", 0)
				r.AddAttrs(slog.String("method", "POST"), slog.String("path", "/plants"),
					slog.Int("status", 200), slog.Duration("duration", 12345*time.Nanosecond))
				if err := tt.h.Handle(ctx, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Package textlog provides a [slog.Handler] that writes exactly what
// [slog.TextHandler] writes, with no ReplaceAttr and no AddSource, and
// writes flat records faster: those whose attributes are all strings,
// integers, floats, booleans or durations, such as a server's access lines.
// It hands every other record, and the handlers made by WithAttrs and
// WithGroup, to a slog.TextHandler writing to the same writer.
package textlog

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// Handler is a slog.Handler writing one key=value line per record, as
// slog.TextHandler does. It is safe for concurrent use.
type Handler struct {
	w    *lockedWriter
	text *slog.TextHandler
}

// New returns a Handler writing to w the records at or above level (a nil
// level means slog.LevelInfo). Each line is a single Write call, and Writes
// to w never overlap.
func New(w io.Writer, level slog.Leveler) *Handler {
	lw := &lockedWriter{w: w}
	return &Handler{w: lw, text: slog.NewTextHandler(lw, &slog.HandlerOptions{Level: level})}
}

// lockedWriter serialises the Writes of a Handler and of the TextHandlers
// it falls back on.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (lw *lockedWriter) Write(p []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.w.Write(p)
}

// Enabled reports whether records at level l are written.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.text.Enabled(ctx, l)
}

// WithAttrs returns a slog.TextHandler writing to the same writer, with
// attrs added.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return h.text.WithAttrs(attrs)
}

// WithGroup returns a slog.TextHandler writing to the same writer, with the
// group opened.
func (h *Handler) WithGroup(name string) slog.Handler {
	return h.text.WithGroup(name)
}

// Handle writes r as one line.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	bp := linePool.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= maxPooled {
			linePool.Put(bp)
		}
	}()
	b, ok := appendRecord((*bp)[:0], r)
	*bp = b
	if !ok {
		return h.text.Handle(ctx, r)
	}
	_, err := h.w.Write(b)
	return err
}

const maxPooled = 16 << 10

var linePool = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// appendRecord appends r's line to b. It reports false, and b holds
// garbage, when r has an attribute it does not format itself.
func appendRecord(b []byte, r slog.Record) ([]byte, bool) {
	if !r.Time.IsZero() {
		var ok bool
		b = append(b, "time="...)
		if b, ok = appendTime(b, r.Time); !ok {
			return b, false
		}
		b = append(b, ' ')
	}
	b = append(b, "level="...)
	b = appendString(b, r.Level.String())
	b = append(b, " msg="...)
	b = appendString(b, r.Message)
	ok := true
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "" {
			ok = false // TextHandler elides some attributes with no key
			return false
		}
		b = append(b, ' ')
		b = appendString(b, a.Key)
		b = append(b, '=')
		v := a.Value
		switch v.Kind() {
		case slog.KindString:
			b = appendString(b, v.String())
		case slog.KindInt64:
			b = strconv.AppendInt(b, v.Int64(), 10)
		case slog.KindUint64:
			b = strconv.AppendUint(b, v.Uint64(), 10)
		case slog.KindFloat64:
			b = strconv.AppendFloat(b, v.Float64(), 'g', -1, 64)
		case slog.KindBool:
			b = strconv.AppendBool(b, v.Bool())
		case slog.KindDuration:
			b = append(b, v.Duration().String()...)
		default:
			ok = false
		}
		return ok
	})
	return append(b, '\n'), ok
}

// appendTime appends t as RFC 3339 with milliseconds, truncated, in t's
// own zone. It reports false for years outside 1 to 9999.
func appendTime(b []byte, t time.Time) ([]byte, bool) {
	year, month, day := t.Date()
	if year < 1 || year > 9999 {
		return b, false
	}
	hour, min, sec := t.Clock()
	b = appendDigits(b, year, 4)
	b = append(b, '-')
	b = appendDigits(b, int(month), 2)
	b = append(b, '-')
	b = appendDigits(b, day, 2)
	b = append(b, 'T')
	b = appendDigits(b, hour, 2)
	b = append(b, ':')
	b = appendDigits(b, min, 2)
	b = append(b, ':')
	b = appendDigits(b, sec, 2)
	b = append(b, '.')
	b = appendDigits(b, t.Nanosecond()/1e6, 3)
	_, offset := t.Zone()
	if offset == 0 {
		return append(b, 'Z'), true
	}
	// Like time's "Z07:00": whole minutes, truncated towards zero.
	minutes := offset / 60
	sign := byte('+')
	if minutes < 0 {
		sign, minutes = '-', -minutes
	}
	b = append(b, sign)
	b = appendDigits(b, minutes/60, 2)
	b = append(b, ':')
	return appendDigits(b, minutes%60, 2), true
}

// appendDigits appends n, which is not negative, in at least width digits.
func appendDigits(b []byte, n, width int) []byte {
	var d [20]byte
	i := len(d)
	for n >= 10 || width > 1 {
		i--
		d[i] = byte('0' + n%10)
		n /= 10
		width--
	}
	i--
	d[i] = byte('0' + n)
	return append(b, d[i:]...)
}

// appendString appends s bare, or quoted in Go syntax when it is empty or
// holds a space, '=', '"', a control or non-printing character, or
// invalid UTF-8.
func appendString(b []byte, s string) []byte {
	if needsQuoting(s) {
		return strconv.AppendQuote(b, s)
	}
	return append(b, s...)
}

func needsQuoting(s string) bool {
	if s == "" {
		return true
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c <= ' ' || c == '=' || c == '"' {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}

package httpapi

import (
	"io"
	"log/slog"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A LogFormat is the form of log lines: slog's text (key=value) or JSON.
type LogFormat uint8

// The forms of log lines. Their String is the name given in brackets.
const (
	TextLog LogFormat = iota // what slog.TextHandler writes (text)
	JSONLog                  // what slog.JSONHandler writes, bar the escapes of NewLogHandler (json)
)

func (f LogFormat) String() string {
	if f == JSONLog {
		return "json"
	}
	return "text"
}

// NewLogHandler returns a slog.Handler writing lines to w in format f: a
// [slog.TextHandler], or a [slog.JSONHandler] whose lines reach w with
// every character beyond ASCII that does not print ([strconv.IsPrint])
// written as a \u escape: bidirectional overrides (U+202E), zero-width and
// other format characters, C1 controls, separators. slog.JSONHandler
// escapes only ASCII controls and U+2028/U+2029, so a request's path could
// carry a right-to-left override into the log as it is, to turn the line
// around on an operator's terminal; in a JSON string the escape means the
// same character, so nothing is lost. slog.TextHandler needs none of this:
// it quotes and escapes such characters itself.
//
// It is the handler whose lines [WithAccessLog]'s match: give both the
// same w and format, and a host's log is one stream of one form.
func NewLogHandler(w io.Writer, f LogFormat, opts *slog.HandlerOptions) slog.Handler {
	if f == JSONLog {
		return slog.NewJSONHandler(escapingWriter{w}, opts)
	}
	return slog.NewTextHandler(w, opts)
}

// An escapingWriter passes JSON log lines on to w with the characters that
// do not print escaped; see NewLogHandler.
type escapingWriter struct{ w io.Writer }

func (e escapingWriter) Write(p []byte) (int, error) {
	i := 0
	for i < len(p) && p[i] < utf8.RuneSelf {
		i++
	}
	if i == len(p) {
		return e.w.Write(p)
	}
	n := len(p)
	out := make([]byte, 0, len(p)+32)
	for len(p) > 0 {
		r, size := utf8.DecodeRune(p)
		if r < utf8.RuneSelf || r == utf8.RuneError && size == 1 || strconv.IsPrint(r) {
			// slog.JSONHandler writes only valid UTF-8: a lone invalid
			// byte, were there one, is passed on as it is.
			out = append(out, p[:size]...)
		} else if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
			out = appendEscape(appendEscape(out, r1), r2)
		} else {
			out = appendEscape(out, r)
		}
		p = p[size:]
	}
	if _, err := e.w.Write(out); err != nil {
		return 0, err
	}
	return n, nil
}

// appendEscape appends the JSON escape \uXXXX of r, a UTF-16 code unit.
func appendEscape(b []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	return append(b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
}

// logSafe returns s, a string a client sent, as the handler's own lines
// (those of [WithLogger]) carry it: as it is when every character of it
// prints, or else quoted as a Go string literal ([strconv.Quote]), whose
// escapes leave no control, format or other non-printing character, and
// no invalid UTF-8, for the host's handler to write as it is. The host's
// handler may be any slog.Handler, and not all escape what a terminal
// would act on.
func logSafe(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c > '~' {
			return quoteUnprintable(s[i:], s)
		}
	}
	return s
}

// quoteUnprintable returns s quoted when rest, its tail from the first
// byte that is not printable ASCII, holds a character that does not print
// or a byte that is not UTF-8, and s as it is otherwise.
func quoteUnprintable(rest, s string) string {
	for _, r := range rest {
		if r == utf8.RuneError || !strconv.IsPrint(r) {
			// RuneError is either a byte that is not UTF-8, or U+FFFD
			// itself, which prints: quoting a path that holds it is
			// harmless.
			return strconv.Quote(s)
		}
	}
	return s
}

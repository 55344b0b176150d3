package main

import (
	"io"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// An escapingWriter passes JSON log lines on to w with every character
// that does not print (strconv.IsPrint) beyond ASCII written as a \u
// escape: bidirectional overrides (U+202E), zero-width and other format
// characters, C1 controls, separators. slog.JSONHandler escapes only
// ASCII controls and U+2028/U+2029, so a request's path could carry a
// right-to-left override into the log as it is, to turn the line around
// on an operator's terminal. In a JSON string an escape means the same
// character, so nothing is lost. The text format needs none of this:
// slog.TextHandler quotes and escapes such characters itself.
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

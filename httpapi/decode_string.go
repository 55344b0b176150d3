package httpapi

import (
	"strings"
	"unicode/utf8"
)

// scanString checks the JSON string starting with the quote at i and
// returns its contents and the offset just past it.
func (d *decoder) scanString(i int) (stringSpan, int, error) {
	b := d.buf
	s := stringSpan{start: i + 1}
	j := i + 1
	for {
		for j < len(b) && plainByte[b[j]] {
			j++
		}
		if j >= len(b) {
			return s, j, syntaxErrAt(j, "unexpected end of input in string")
		}
		switch c := b[j]; {
		case c == '"':
			s.end = j
			return s, j + 1, nil
		case c == '\\':
			s.esc = true
			n, err := d.scanEscape(j)
			if err != nil {
				return s, j, err
			}
			j += n
		case c < 0x20:
			return s, j, d.errChar(j, "in string (control characters must be escaped)")
		default:
			r, n := utf8.DecodeRune(b[j:])
			if r == utf8.RuneError && n == 1 {
				return s, j, syntaxErrAt(j, "invalid UTF-8 in string")
			}
			j += n
		}
	}
}

// scanEscape checks the escape sequence at the backslash at j and returns
// its length.
func (d *decoder) scanEscape(j int) (int, error) {
	b := d.buf
	if j+1 >= len(b) {
		return 0, syntaxErrAt(j+1, "unexpected end of input in string")
	}
	switch b[j+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, nil
	case 'u':
	default:
		return 0, syntaxErrAt(j, "invalid escape sequence in string")
	}
	r, ok := hex4(b, j+2)
	if !ok {
		return 0, syntaxErrAt(j, `invalid \u escape in string (expecting 4 hexadecimal digits)`)
	}
	switch {
	case r < 0xD800 || r > 0xDFFF:
		return 6, nil
	case r >= 0xDC00:
		return 0, syntaxErrAt(j, `unpaired UTF-16 surrogate in \u escape`)
	}
	if j+7 < len(b) && b[j+6] == '\\' && b[j+7] == 'u' {
		if r2, ok := hex4(b, j+8); ok && r2 >= 0xDC00 && r2 <= 0xDFFF {
			return 12, nil
		}
	}
	return 0, syntaxErrAt(j, `unpaired UTF-16 surrogate in \u escape`)
}

// hex4 parses the four hexadecimal digits at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// appendUnescaped appends the contents of the checked string s, unescaped.
func appendUnescaped(dst, body []byte, s stringSpan) []byte {
	b := body[:s.end]
	i := s.start
	for i < len(b) {
		j := i
		for j < len(b) && b[j] != '\\' {
			j++
		}
		dst = append(dst, b[i:j]...)
		if j == len(b) {
			break
		}
		c, r, n := unescapeAt(b, j)
		if n == 2 {
			dst = append(dst, c)
		} else {
			dst = utf8.AppendRune(dst, r)
		}
		i = j + n
	}
	return dst
}

// writeUnescaped writes the contents of the checked string s, unescaped.
func writeUnescaped(sb *strings.Builder, body []byte, s stringSpan) {
	b := body[:s.end]
	if !s.esc {
		sb.Write(b[s.start:])
		return
	}
	i := s.start
	for i < len(b) {
		j := i
		for j < len(b) && b[j] != '\\' {
			j++
		}
		sb.Write(b[i:j])
		if j == len(b) {
			break
		}
		c, r, n := unescapeAt(b, j)
		if n == 2 {
			sb.WriteByte(c)
		} else {
			sb.WriteRune(r)
		}
		i = j + n
	}
}

// unescapeAt decodes the checked escape sequence at the backslash at j. It
// returns the byte of a two-byte escape, or the rune of a \u escape, and
// the sequence's length.
func unescapeAt(b []byte, j int) (byte, rune, int) {
	switch c := b[j+1]; c {
	case 'b':
		return '\b', 0, 2
	case 'f':
		return '\f', 0, 2
	case 'n':
		return '\n', 0, 2
	case 'r':
		return '\r', 0, 2
	case 't':
		return '\t', 0, 2
	case 'u':
	default:
		return c, 0, 2
	}
	r, _ := hex4(b, j+2)
	if r < 0xD800 || r > 0xDFFF {
		return 0, r, 6
	}
	r2, _ := hex4(b, j+8)
	return 0, (r-0xD800)<<10 | (r2 - 0xDC00) + 0x10000, 12
}

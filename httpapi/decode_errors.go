package httpapi

import (
	"errors"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// syntaxErr turns an error of st.dec into a [*syntaxError]. The decoder
// says where the body went wrong; the message says what was expected
// there, from the decoder's state (the innermost open object or array and
// how much of it was read) and the bytes at that offset, so that it reads
// the same whatever the wording of the library's errors.
func (st *decodeState) syntaxErr(body []byte, err error) error {
	se, _ := errors.AsType[*jsontext.SyntacticError](err)
	if se != nil && errors.Is(se.Err, jsontext.ErrDuplicateName) {
		return duplicate(int(se.ByteOffset), se.JSONPointer.LastToken())
	}
	off := len(body) // where the input ran out
	if se != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		off = int(se.ByteOffset)
	}

	d := st.dec
	kind, n := d.StackIndex(d.StackDepth())
	inObject := kind == '{'
	end := int(d.InputOffset()) // of the last token read
	if end > 0 && end < len(body) && body[end-1] == '0' && isJSONDigit(body[end]) {
		// Only a number ends with a digit, and only 0 or -0 ends before one.
		return syntaxErrAt(end-1, "invalid number (leading zeros are not allowed)")
	}
	i := skipWS(body, end)
	// The separator the next token needs, if any.
	switch {
	case inObject && n%2 == 1:
		if i >= len(body) || body[i] != ':' {
			return errChar(body, i, "after object member name (expecting ':')")
		}
		i = skipWS(body, i+1)
	case n > 0:
		if i >= len(body) || body[i] != ',' {
			if inObject {
				return errChar(body, i, "after object member value (expecting ',' or '}')")
			}
			return errChar(body, i, "after array element (expecting ',' or ']')")
		}
		i = skipWS(body, i+1)
	}

	// The token that failed starts at i.
	expectName := inObject && n%2 == 0
	if i >= len(body) {
		if expectName {
			return errChar(body, i, "")
		}
		return syntaxErrAt(i, "unexpected end of input (expecting a value)")
	}
	switch c := body[i]; {
	case expectName && c != '"':
		return errChar(body, i, "at start of object member name (expecting '\"')")
	case c == '"':
		return stringErr(body, i, off)
	case c == '-' || isJSONDigit(c):
		return numberErr(body, i, off)
	case c == 't':
		return literalErr(body, i, "true")
	case c == 'f':
		return literalErr(body, i, "false")
	case c == 'n':
		return literalErr(body, i, "null")
	case c == '{' || c == '[':
		return syntaxErrAt(i, "nesting depth exceeds "+strconv.Itoa(maxNestingDepth))
	}
	return errChar(body, i, "at start of value")
}

// stringErr reports the problem at off in the string starting with the
// quote at start.
func stringErr(b []byte, start, off int) error {
	if off >= len(b) {
		return stringEOF(b, start)
	}
	switch c := b[off]; {
	case c == '\\':
		return escapeErr(b, off)
	case c < 0x20:
		return errChar(b, off, "in string (control characters must be escaped)")
	}
	return syntaxErrAt(off, "invalid UTF-8 in string")
}

// stringEOF reports a string, starting with the quote at start, that the
// body ends in. What is wrong with it is an escape sequence or a UTF-8
// character cut short, or a surrogate left unpaired, if there is one: the
// decoder only says that the input ran out.
func stringEOF(b []byte, start int) error {
	high := -1 // the \u escape of a high surrogate just before k, if any
	for k := start + 1; k < len(b); {
		switch {
		case b[k] >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(b[k:])
			if r == utf8.RuneError && n == 1 {
				return syntaxErrAt(k, "invalid UTF-8 in string") // cut short
			}
			high = -1
			k += n
			continue
		case b[k] != '\\':
			high = -1
			k++
			continue
		case k+1 < len(b) && b[k+1] != 'u':
			high = -1
			k += 2
			continue
		case high >= 0:
			// A low surrogate must follow; the library checked one that did.
			if k+6 <= len(b) {
				high = -1
				k += 6
				continue
			}
			return unpaired(high)
		case k+1 >= len(b):
			return syntaxErrAt(len(b), "unexpected end of input in string")
		case k+6 > len(b):
			return badUnicodeEscape(k)
		}
		switch r, err := strconv.ParseUint(string(b[k+2:k+6]), 16, 16); {
		case err != nil:
			return badUnicodeEscape(k)
		case 0xDC00 <= r && r <= 0xDFFF:
			return unpaired(k)
		case 0xD800 <= r && r < 0xDC00:
			high = k
		}
		k += 6
	}
	if high >= 0 {
		return unpaired(high)
	}
	return syntaxErrAt(len(b), "unexpected end of input in string")
}

func unpaired(j int) error { return syntaxErrAt(j, `unpaired UTF-16 surrogate in \u escape`) }

func badUnicodeEscape(j int) error {
	return syntaxErrAt(j, `invalid \u escape in string (expecting 4 hexadecimal digits)`)
}

// escapeErr reports the invalid escape sequence at the backslash at j.
func escapeErr(b []byte, j int) error {
	if j+1 >= len(b) {
		return syntaxErrAt(j+1, "unexpected end of input in string")
	}
	if b[j+1] != 'u' {
		return syntaxErrAt(j, "invalid escape sequence in string")
	}
	if _, err := strconv.ParseUint(string(b[j+2:min(j+6, len(b))]), 16, 16); err != nil || j+6 > len(b) {
		return badUnicodeEscape(j)
	}
	return unpaired(j)
}

// numberErr reports the problem at off in the number starting at i.
func numberErr(b []byte, i, off int) error {
	switch {
	case off >= len(b) && len(b) == i+1:
		return syntaxErrAt(len(b), "unexpected end of input in number") // after '-'
	case off >= len(b):
		return errChar(b, len(b), "")
	case off-1 == i && b[i] == '-':
		return errChar(b, off, "in number (expecting a digit)")
	case b[off-1] == '.':
		return errChar(b, off, "in number (expecting a digit after the decimal point)")
	}
	return errChar(b, off, "in number (expecting a digit in the exponent)")
}

// literalErr reports where the body at i stops spelling lit.
func literalErr(b []byte, i int, lit string) error {
	k := 0
	for k < len(lit) && i+k < len(b) && b[i+k] == lit[k] {
		k++
	}
	if k == len(lit) {
		// Unreachable: the literal was read, so it was not what failed.
		return errChar(b, i+k, "after a literal")
	}
	return errChar(b, i+k, "in literal "+lit+" (expecting "+strconv.QuoteRune(rune(lit[k]))+")")
}

// duplicate reports a repeated member name found at offset start.
func duplicate(start int, name string) error {
	const maxQuoted = 40
	q := ""
	if len(name) > maxQuoted {
		cut := maxQuoted
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		q = strconv.QuoteToASCII(name[:cut]) + "..."
	} else {
		q = strconv.QuoteToASCII(name)
	}
	return syntaxErrAt(start, "duplicate object member name "+q)
}

func syntaxErrAt(off int, msg string) error {
	return &syntaxError{Offset: off, Msg: msg}
}

// errChar reports the unexpected character at i, or the end of input.
func errChar(b []byte, i int, context string) error {
	if i >= len(b) {
		return syntaxErrAt(i, "unexpected end of input")
	}
	var q string
	if c := b[i]; ' ' <= c && c < 0x7f && c != '\'' && c != '\\' {
		// A one-byte string does not allocate.
		return syntaxErrAt(i, "invalid character '"+string(rune(c))+"' "+context)
	} else if c < utf8.RuneSelf {
		q = strconv.QuoteRuneToASCII(rune(c))
	} else if r, n := utf8.DecodeRune(b[i:]); r == utf8.RuneError && n == 1 {
		q = `'\x` + strconv.FormatUint(uint64(c), 16) + `'`
	} else {
		q = strconv.QuoteRuneToASCII(r)
	}
	return syntaxErrAt(i, "invalid character "+q+" "+context)
}

func isJSONDigit(c byte) bool { return '0' <= c && c <= '9' }

package httpapi

import (
	"strconv"
	"unicode/utf8"

	"github.com/plantstore/plantstore"
)

// appendPlant appends p as a JSON Plant: name, tag when present, and id
// first when withID is set. No other keys.
func appendPlant(b []byte, p plantstore.Plant, withID bool) []byte {
	if withID {
		b = append(b, `{"id":`...)
		b = strconv.AppendInt(b, p.ID, 10)
		b = append(b, `,"name":`...)
	} else {
		b = append(b, `{"name":`...)
	}
	b = appendString(b, p.Name)
	if p.HasTag {
		b = append(b, `,"tag":`...)
		b = appendString(b, p.Tag)
	}
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. s is valid UTF-8 (plants are
// validated before they are stored); any invalid byte would be written as
// U+FFFD so the output stays valid JSON.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	b = appendEscaped(b, s)
	return append(b, '"')
}

// appendEscaped appends s escaped as the contents of a JSON string, as
// appendString does, without the quotes.
func appendEscaped(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	return append(b, s[start:]...)
}

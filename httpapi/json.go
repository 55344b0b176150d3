package httpapi

import (
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

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

// appendString appends s as a JSON string, quoted by [jsontext.AppendQuote]
// in its shortest form (RFC 8785): '"', '\\' and control characters are
// escaped, \b, \f, \n, \r and \t in their short forms, nothing else. An
// invalid byte is written as U+FFFD, so the output stays valid JSON; its
// error, which says only that, is dropped. Plants are validated UTF-8
// before they are stored, so a Plant never has one.
func appendString(b []byte, s string) []byte {
	b, _ = jsontext.AppendQuote(b, s)
	return b
}

package httpapi

import (
	"bytes"
	"strconv"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/plantstore/plantstore"
)

// maxNestingDepth is how deeply arrays and objects may nest, the top-level
// object included: the default limit of [jsontext.Decoder].
const maxNestingDepth = 10000

// A syntaxError reports that a request body is not a single well-formed
// JSON object. Its message is safe to show to the client: it quotes at
// most one character, or a short member name, of the input.
type syntaxError struct {
	Offset int    // byte offset in the body where the problem was found
	Msg    string // what is wrong, a lowercase phrase
}

func (e *syntaxError) Error() string {
	return "malformed JSON at byte " + strconv.Itoa(e.Offset) + ": " + e.Msg
}

// decodeNewPlant parses body as exactly one JSON object holding a NewPlant.
// The returned strings do not alias body (the caller reuses its buffer).
//
// The body must be RFC 8259 JSON: valid UTF-8 with no byte-order mark,
// strict number syntax, surrogate escapes paired, no duplicate member names
// at any depth, nesting at most [maxNestingDepth] deep, and nothing but
// whitespace after the object. Member names are case-sensitive. Members
// other than id, name and tag are checked and ignored. A [jsontext.Decoder]
// with its default options checks all of that but the end of input (it
// reads a stream of values).
//
// Errors: a [*syntaxError] for a body that is not such an object, checked
// before anything else; otherwise a [*plantstore.ValidationError] for the
// first of id, name and tag (in that order) that is missing or of the
// wrong type: id must be an integer (1.0 and 1e2 count) within int64, name
// and tag strings (null is not a string).
func decodeNewPlant(body []byte) (plantstore.NewPlant, error) {
	st := statePool.Get().(*decodeState)
	st.rd = *bytes.NewBuffer(body)
	st.dec.Reset(&st.rd)
	np, err := st.decode(body)
	st.rd = bytes.Buffer{}
	st.dec.Reset(&st.rd) // do not pin body
	if cap(st.scratch) <= 4096 && len(body) <= 16<<10 {
		statePool.Put(st)
	}
	return np, err
}

// A decodeState is a [jsontext.Decoder] kept from one body to the next,
// with its input.
type decodeState struct {
	dec     *jsontext.Decoder
	rd      bytes.Buffer // the body: a Decoder reads a bytes.Buffer in place
	scratch []byte       // unescaped name and tag
}

var statePool = sync.Pool{New: func() any {
	return &decodeState{dec: jsontext.NewDecoder(&bytes.Buffer{})}
}}

// Bits for the members of a NewPlant.
const (
	fieldID = 1 << iota
	fieldName
	fieldTag
)

func (st *decodeState) decode(body []byte) (plantstore.NewPlant, error) {
	d := st.dec
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return plantstore.NewPlant{}, notObject(body)
	}
	var (
		seen, badType   int
		id              int64
		idReason        string
		nameRaw, tagRaw []byte // quoted, in body
		err             error
	)
	for d.PeekKind() != '}' {
		var k jsontext.Value
		if kind := d.PeekKind(); kind != '"' && kind != 0 {
			// ReadValue would read a whole value here before it
			// noticed that a name must be a string.
			return plantstore.NewPlant{}, st.syntaxErr(body, nil)
		}
		if k, err = d.ReadValue(); err != nil {
			return plantstore.NewPlant{}, st.syntaxErr(body, err)
		}
		field := classify(k)
		seen |= field
		switch kind := d.PeekKind(); {
		case field == fieldID && kind == '0':
			var v []byte
			if v, err = st.readValue(body); err == nil {
				id, idReason = exactInt64(v)
			}
		case field == fieldName && kind == '"':
			nameRaw, err = st.readValue(body)
		case field == fieldTag && kind == '"':
			tagRaw, err = st.readValue(body)
		default:
			badType |= field
			err = d.SkipValue()
		}
		if err != nil {
			return plantstore.NewPlant{}, st.syntaxErr(body, err)
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return plantstore.NewPlant{}, st.syntaxErr(body, err)
	}
	if i := skipWS(body, int(d.InputOffset())); i < len(body) {
		return plantstore.NewPlant{}, errChar(body, i, "after the top-level object (expecting end of input)")
	}

	switch {
	case seen&fieldID == 0:
		return plantstore.NewPlant{}, &plantstore.ValidationError{Field: "id", Reason: "is required"}
	case badType&fieldID != 0:
		return plantstore.NewPlant{}, &plantstore.ValidationError{Field: "id", Reason: "must be an integer"}
	case idReason != "":
		return plantstore.NewPlant{}, &plantstore.ValidationError{Field: "id", Reason: idReason}
	case seen&fieldName == 0:
		return plantstore.NewPlant{}, &plantstore.ValidationError{Field: "name", Reason: "is required"}
	case badType&fieldName != 0:
		return plantstore.NewPlant{}, &plantstore.ValidationError{Field: "name", Reason: "must be a string"}
	case badType&fieldTag != 0:
		return plantstore.NewPlant{}, &plantstore.ValidationError{Field: "tag", Reason: "must be a string"}
	}

	// One allocation holds name and tag.
	b := st.scratch[:0]
	if len(nameRaw) > 0 {
		b, _ = jsontext.AppendUnquote(b, nameRaw)
	}
	n := len(b)
	if len(tagRaw) > 0 {
		b, _ = jsontext.AppendUnquote(b, tagRaw)
	}
	s := string(b)
	st.scratch = b
	return plantstore.NewPlant{ID: id, Name: s[:n], Tag: s[n:], HasTag: seen&fieldTag != 0}, nil
}

// readValue reads the next value and returns its text in body, which,
// unlike what [jsontext.Decoder.ReadValue] returns, stays valid.
func (st *decodeState) readValue(body []byte) ([]byte, error) {
	v, err := st.dec.ReadValue()
	if err != nil {
		return nil, err
	}
	end := int(st.dec.InputOffset())
	return body[end-len(v) : end], nil
}

// classify reports which NewPlant member the quoted name k names, or 0
// for any other.
func classify(k jsontext.Value) int {
	// "\u006e\u0061\u006d\u0065" is the longest spelling of a known name.
	if len(k) > len(`"\u006e\u0061\u006d\u0065"`) {
		return 0
	}
	var buf [24]byte
	name, _ := jsontext.AppendUnquote(buf[:0], k)
	switch string(name) {
	case "id":
		return fieldID
	case "name":
		return fieldName
	case "tag":
		return fieldTag
	}
	return 0
}

// exactInt64 returns the value of the JSON number text when it is an
// integer within int64, or the reason it is not. It never rounds (a
// fraction or an exponent is fine if the value is an integer) and runs in
// time linear in len(text) whatever the exponent.
func exactInt64(text []byte) (int64, string) {
	const notInteger = "must be an integer"
	const tooBig = "must fit in a 64-bit signed integer"
	if bytes.IndexByte(text, '.') < 0 && bytes.IndexByte(text, 'e') < 0 && bytes.IndexByte(text, 'E') < 0 {
		v, err := strconv.ParseInt(string(text), 10, 64)
		if err != nil {
			return 0, tooBig // the syntax is checked: ErrRange
		}
		return v, ""
	}

	// The value is digits × 10^exp, digits being those before and after
	// the decimal point.
	neg := text[0] == '-'
	if neg {
		text = text[1:]
	}
	mant, expText := text, []byte(nil)
	if k := bytes.IndexAny(text, "eE"); k >= 0 {
		mant, expText = text[:k], text[k+1:]
	}
	var exp int64
	if len(expText) > 0 {
		var err error
		if exp, err = strconv.ParseInt(string(expText), 10, 64); err != nil {
			// Beyond int64, which no body has digits enough to make up for.
			exp = 1 << 40
			if expText[0] == '-' {
				exp = -exp
			}
		}
	}
	intPart, frac, _ := bytes.Cut(mant, []byte("."))
	exp -= int64(len(frac))
	intPart = bytes.TrimLeft(intPart, "0")
	digits := intPart
	if len(intPart) == 0 {
		frac = bytes.TrimLeft(frac, "0")
	}
	// The significant digits are intPart then frac, without the zeros at
	// the end, which move into exp.
	for len(frac) > 0 && frac[len(frac)-1] == '0' {
		frac = frac[:len(frac)-1]
		exp++
	}
	if len(frac) == 0 {
		for len(digits) > 0 && digits[len(digits)-1] == '0' {
			digits = digits[:len(digits)-1]
			exp++
		}
	}
	sig := int64(len(digits) + len(frac))
	switch {
	case sig == 0:
		return 0, "" // zero, however written
	case exp < 0:
		return 0, notInteger // the last significant digit is not in the units
	case sig+exp > 19:
		return 0, tooBig // at least 10^19
	}
	var canon [21]byte // sign and at most 19 digits
	c := canon[:0]
	if neg {
		c = append(c, '-')
	}
	c = append(c, digits...)
	c = append(c, frac...)
	for ; exp > 0; exp-- {
		c = append(c, '0')
	}
	v, err := strconv.ParseInt(string(c), 10, 64)
	if err != nil {
		return 0, tooBig
	}
	return v, ""
}

// skipWS returns the offset of the first byte at or after i that is not
// JSON whitespace.
func skipWS(b []byte, i int) int {
	return len(b) - len(bytes.TrimLeft(b[i:], " \t\r\n"))
}

// notObject reports a body whose first token is not '{'.
func notObject(b []byte) error {
	i := skipWS(b, 0)
	if i == len(b) {
		return syntaxErrAt(i, "unexpected end of input (expecting a JSON object)")
	}
	switch c := b[i]; {
	case c == 0xEF && len(b) >= i+3 && b[i+1] == 0xBB && b[i+2] == 0xBF:
		return syntaxErrAt(i, "byte order mark is not allowed (expecting a JSON object)")
	case c == '[':
		return syntaxErrAt(i, "body is an array (expecting a JSON object)")
	case c == '"':
		return syntaxErrAt(i, "body is a string (expecting a JSON object)")
	case c == '-' || isJSONDigit(c):
		return syntaxErrAt(i, "body is a number (expecting a JSON object)")
	case c == 't' || c == 'f':
		return syntaxErrAt(i, "body is a boolean (expecting a JSON object)")
	case c == 'n':
		return syntaxErrAt(i, "body is null (expecting a JSON object)")
	}
	return errChar(b, i, "at start of body (expecting a JSON object)")
}

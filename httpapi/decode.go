package httpapi

import (
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/plantstore/plantstore"
)

// maxNestingDepth bounds how deeply arrays and objects may nest, the
// top-level object included. It matches the limit of
// github.com/go-json-experiment/json; the decoder is iterative, so the
// limit guards memory (a bit per array, a few words per object) rather
// than the stack.
const maxNestingDepth = 10000

// errDepth is the message for bodies nested deeper than maxNestingDepth.
const errDepth = "nesting depth exceeds 10000"

// maxNamesScanned is how many member names of one object are compared
// pairwise before the decoder switches to a map, so that an object with
// very many members cannot make duplicate detection quadratic.
const maxNamesScanned = 32

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
// at any depth, and nothing but whitespace after the object. Members other
// than id, name and tag are checked and ignored.
//
// Errors: a [*syntaxError] for a body that is not such an object, checked
// before anything else; otherwise a [*plantstore.ValidationError] for the
// first of id, name and tag (in that order) that is missing or of the
// wrong type: id must be an integer (1.0 and 1e2 count) within int64, name
// and tag strings.
func decodeNewPlant(body []byte) (plantstore.NewPlant, error) {
	d := decoder{buf: body}
	np, err := d.decode()
	if d.decodeState != nil {
		d.release()
	}
	return np, err
}

// A stringSpan locates the contents of a JSON string (between its quotes) in
// the body. esc reports whether the contents hold escape sequences.
type stringSpan struct {
	start, end int
	esc        bool
}

// An object is an open JSON object. The names of its members read so far
// are d.names[first:] or, once there are more than maxNamesScanned of them,
// the keys of d.sets[k], k being its index in d.objects.
type object struct {
	first int
	big   bool
}

// A decoder reads one body. Its decodeState is taken from statePool only
// for bodies with members other than id, name and tag, or with values of
// the wrong type: those that need duplicate detection or nesting.
type decoder struct {
	buf []byte
	*decodeState
}

type decodeState struct {
	depth   int          // open arrays and objects, the top-level object included
	kinds   []uint64     // bit k%64 of kinds[k/64]: open container k is an object
	objects []object     // the open objects, outermost first
	names   []stringSpan // member names, see object
	sets    map[int]map[string]struct{}
	scratch []byte // unescaped member names being compared
}

var statePool = sync.Pool{New: func() any {
	return &decodeState{kinds: make([]uint64, 0, 1), objects: make([]object, 0, 8), names: make([]stringSpan, 0, 32)}
}}

// enter makes sure d has its decodeState, whose outermost container is
// the top-level object.
func (d *decoder) enter() {
	if d.decodeState == nil {
		d.decodeState = statePool.Get().(*decodeState)
		d.push(true)
	}
}

// push opens an array or an object.
func (st *decodeState) push(obj bool) {
	k := st.depth / 64
	if k == len(st.kinds) {
		st.kinds = append(st.kinds, 0)
	}
	bit := uint64(1) << (st.depth % 64)
	if obj {
		st.kinds[k] |= bit
		st.objects = append(st.objects, object{first: len(st.names)})
	} else {
		st.kinds[k] &^= bit
	}
	st.depth++
}

// inObject reports whether the innermost open container is an object.
func (st *decodeState) inObject() bool {
	d := st.depth - 1
	return st.kinds[d/64]>>(d%64)&1 != 0
}

// pop closes the innermost open container.
func (st *decodeState) pop() {
	if st.inObject() {
		k := len(st.objects) - 1
		st.names = st.names[:st.objects[k].first]
		if st.objects[k].big {
			delete(st.sets, k)
		}
		st.objects = st.objects[:k]
	}
	st.depth--
}

// release returns d's decodeState to statePool, unless a hostile body
// made it too large to keep.
func (d *decoder) release() {
	st := d.decodeState
	d.decodeState = nil
	st.sets = nil
	if cap(st.objects) > 256 || cap(st.kinds) > 16 || cap(st.names) > 1024 || cap(st.scratch) > 4096 {
		return
	}
	st.depth = 0
	st.kinds, st.objects, st.names, st.scratch = st.kinds[:0], st.objects[:0], st.names[:0], st.scratch[:0]
	statePool.Put(st)
}

// Bits for the members of a NewPlant.
const (
	fieldID = 1 << iota
	fieldName
	fieldTag
)

func (d *decoder) decode() (plantstore.NewPlant, error) {
	b := d.buf
	i := skipWS(b, 0)
	if i >= len(b) {
		return plantstore.NewPlant{}, syntaxErrAt(i, "unexpected end of input (expecting a JSON object)")
	}
	if b[i] != '{' {
		return plantstore.NewPlant{}, d.notObject(i)
	}
	i = skipWS(b, i+1)

	var (
		seen, badType int
		id            int64
		idReason      string
		name, tag     stringSpan
		err           error
	)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			var s stringSpan
			if i >= len(b) || b[i] != '"' {
				return plantstore.NewPlant{}, d.errChar(i, "at start of object member name (expecting '\"')")
			}
			start := i
			if s, i, err = d.scanString(i); err != nil {
				return plantstore.NewPlant{}, err
			}
			field := d.classify(s)
			if field != 0 {
				if seen&field != 0 {
					return plantstore.NewPlant{}, d.duplicate(start, s)
				}
				seen |= field
			} else {
				d.enter()
				if err := d.addName(start, s); err != nil {
					return plantstore.NewPlant{}, err
				}
			}
			if i, err = d.colon(i); err != nil {
				return plantstore.NewPlant{}, err
			}
			switch {
			case i >= len(b):
				return plantstore.NewPlant{}, syntaxErrAt(i, "unexpected end of input (expecting a value)")
			case field == fieldID && (b[i] == '-' || isJSONDigit(b[i])):
				start := i
				var num jsonNumber
				if num, i, err = d.scanNumber(i); err != nil {
					return plantstore.NewPlant{}, err
				}
				id, idReason = num.int64(b[start:i])
			case field == fieldName && b[i] == '"':
				name, i, err = d.scanString(i)
			case field == fieldTag && b[i] == '"':
				tag, i, err = d.scanString(i)
			default:
				badType |= field
				d.enter()
				i, err = d.skipValue(i)
			}
			if err != nil {
				return plantstore.NewPlant{}, err
			}
			i = skipWS(b, i)
			if i < len(b) && b[i] == ',' {
				i = skipWS(b, i+1)
				continue
			}
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			return plantstore.NewPlant{}, d.errChar(i, "after object member value (expecting ',' or '}')")
		}
	}
	if i = skipWS(b, i); i < len(b) {
		return plantstore.NewPlant{}, d.errChar(i, "after the top-level object (expecting end of input)")
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

	// One allocation holds name and tag: the unescaped form is never
	// longer than the escaped one.
	var sb strings.Builder
	sb.Grow(name.end - name.start + tag.end - tag.start)
	writeUnescaped(&sb, b, name)
	n := sb.Len()
	writeUnescaped(&sb, b, tag)
	s := sb.String()
	return plantstore.NewPlant{ID: id, Name: s[:n], Tag: s[n:], HasTag: seen&fieldTag != 0}, nil
}

// notObject reports a top-level value that is not an object.
func (d *decoder) notObject(i int) error {
	b := d.buf
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
	return d.errChar(i, "at start of body (expecting a JSON object)")
}

// classify reports which NewPlant member s names, or 0 for any other.
func (d *decoder) classify(s stringSpan) int {
	raw := d.buf[s.start:s.end]
	if s.esc {
		// "\u006e\u0061\u006d\u0065" is the longest spelling of a known name.
		if len(raw) > 24 {
			return 0
		}
		var buf [24]byte
		raw = appendUnescaped(buf[:0], d.buf, s)
	}
	switch string(raw) {
	case "id":
		return fieldID
	case "name":
		return fieldName
	case "tag":
		return fieldTag
	}
	return 0
}

// colon consumes the ':' after a member name at i and the whitespace
// around it.
func (d *decoder) colon(i int) (int, error) {
	b := d.buf
	i = skipWS(b, i)
	if i >= len(b) || b[i] != ':' {
		return i, d.errChar(i, "after object member name (expecting ':')")
	}
	return skipWS(b, i+1), nil
}

// addName records the member name s, which starts at offset start, in the
// innermost object, or reports that the object already has a member of
// that name.
func (d *decoder) addName(start int, s stringSpan) error {
	k := len(d.objects) - 1
	f := &d.objects[k]
	if f.big {
		set := d.sets[k]
		key := d.buf[s.start:s.end]
		if s.esc {
			key = d.unescape(s)
		}
		if _, dup := set[string(key)]; dup {
			return d.duplicate(start, s)
		}
		set[string(key)] = struct{}{}
		return nil
	}
	names := d.names[f.first:]
	for _, t := range names {
		if d.sameName(s, t) {
			return d.duplicate(start, s)
		}
	}
	d.names = append(d.names, s)
	if len(names) >= maxNamesScanned {
		set := make(map[string]struct{}, 2*len(names))
		for _, t := range d.names[f.first:] {
			key := d.buf[t.start:t.end]
			if t.esc {
				key = d.unescape(t)
			}
			set[string(key)] = struct{}{}
		}
		if d.sets == nil {
			d.sets = make(map[int]map[string]struct{})
		}
		d.sets[k] = set
		f.big = true
		d.names = d.names[:f.first]
	}
	return nil
}

// sameName reports whether two member names are equal once unescaped.
func (d *decoder) sameName(s, t stringSpan) bool {
	a, b := d.buf[s.start:s.end], d.buf[t.start:t.end]
	if !s.esc && !t.esc {
		return string(a) == string(b)
	}
	// Unescaping never lengthens a string, so a longer plain name cannot
	// equal an escaped one.
	if !s.esc && len(a) > len(b) || !t.esc && len(b) > len(a) {
		return false
	}
	d.scratch = appendUnescaped(d.scratch[:0], d.buf, s)
	n := len(d.scratch)
	d.scratch = appendUnescaped(d.scratch, d.buf, t)
	return string(d.scratch[:n]) == string(d.scratch[n:])
}

// unescape returns the contents of s unescaped, in d.scratch.
func (d *decoder) unescape(s stringSpan) []byte {
	d.scratch = appendUnescaped(d.scratch[:0], d.buf, s)
	return d.scratch
}

// duplicate reports a repeated member name s found at offset start.
func (d *decoder) duplicate(start int, s stringSpan) error {
	name := appendUnescaped(nil, d.buf, s)
	const maxQuoted = 40
	q := ""
	if len(name) > maxQuoted {
		cut := maxQuoted
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		q = strconv.QuoteToASCII(string(name[:cut])) + "..."
	} else {
		q = strconv.QuoteToASCII(string(name))
	}
	return syntaxErrAt(start, "duplicate object member name "+q)
}

// skipValue checks the JSON value at i, which must not be at the end of
// the body, and returns the offset just past it.
func (d *decoder) skipValue(i int) (int, error) {
	b := d.buf
	base := d.depth
	var err error
	for {
		// A value starts at i.
		switch c := b[i]; {
		case c == '"':
			if _, i, err = d.scanString(i); err != nil {
				return i, err
			}
		case c == '{' || c == '[':
			if d.depth >= maxNestingDepth {
				return i, syntaxErrAt(i, errDepth)
			}
			d.push(c == '{')
			i = skipWS(b, i+1)
			if i < len(b) && (c == '{' && b[i] == '}' || c == '[' && b[i] == ']') {
				d.pop()
				i++
				break
			}
			if c == '{' {
				if i, err = d.member(i); err != nil {
					return i, err
				}
			}
			if i >= len(b) {
				return i, syntaxErrAt(i, "unexpected end of input (expecting a value)")
			}
			continue
		case c == '-' || isJSONDigit(c):
			if _, i, err = d.scanNumber(i); err != nil {
				return i, err
			}
		case c == 't':
			if i, err = d.literal(i, "true"); err != nil {
				return i, err
			}
		case c == 'f':
			if i, err = d.literal(i, "false"); err != nil {
				return i, err
			}
		case c == 'n':
			if i, err = d.literal(i, "null"); err != nil {
				return i, err
			}
		default:
			return i, d.errChar(i, "at start of value")
		}

		// A value ends at i: close containers until one has another member.
		for {
			if d.depth == base {
				return i, nil
			}
			i = skipWS(b, i)
			obj := d.inObject()
			if i < len(b) && b[i] == ',' {
				i = skipWS(b, i+1)
				if obj {
					if i, err = d.member(i); err != nil {
						return i, err
					}
				}
				if i >= len(b) {
					return i, syntaxErrAt(i, "unexpected end of input (expecting a value)")
				}
				break
			}
			if i < len(b) && (obj && b[i] == '}' || !obj && b[i] == ']') {
				d.pop()
				i++
				continue
			}
			if obj {
				return i, d.errChar(i, "after object member value (expecting ',' or '}')")
			}
			return i, d.errChar(i, "after array element (expecting ',' or ']')")
		}
	}
}

// member consumes a member name of the innermost object and its colon.
func (d *decoder) member(i int) (int, error) {
	if i >= len(d.buf) || d.buf[i] != '"' {
		return i, d.errChar(i, "at start of object member name (expecting '\"')")
	}
	start := i
	s, i, err := d.scanString(i)
	if err != nil {
		return i, err
	}
	if err := d.addName(start, s); err != nil {
		return i, err
	}
	return d.colon(i)
}

// literal consumes the literal lit at i.
func (d *decoder) literal(i int, lit string) (int, error) {
	for k := 0; k < len(lit); k++ {
		if i+k >= len(d.buf) || d.buf[i+k] != lit[k] {
			return i + k, d.errChar(i+k, "in literal "+lit+" (expecting "+strconv.QuoteRune(rune(lit[k]))+")")
		}
	}
	return i + len(lit), nil
}

// skipWS returns the offset of the first byte at or after i that is not
// JSON whitespace.
func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// plainByte reports the bytes a string may hold as they are: printable ASCII
// other than '"' and '\\'.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func syntaxErrAt(off int, msg string) error {
	return &syntaxError{Offset: off, Msg: msg}
}

// errChar reports the unexpected character at i, or the end of input.
func (d *decoder) errChar(i int, context string) error {
	b := d.buf
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

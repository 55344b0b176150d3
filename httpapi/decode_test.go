package httpapi

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

func invalid(field, reason string) error {
	return &plantstore.ValidationError{Field: field, Reason: reason}
}

// malformed is a syntax error found at byte off.
func malformed(off int) error { return &syntaxError{Offset: off} }

const (
	notInteger = "must be an integer"
	tooBig     = "must fit in a 64-bit signed integer"
	notString  = "must be a string"
	required   = "is required"
)

// nest returns depth values opened by open and closed by end, around
// inner, in the value of member "x", so that the deepest is at depth+1
// counting the top-level object.
func nest(open, inner, end string, depth int) string {
	return `{"id":1,"name":"a","x":` + strings.Repeat(open, depth) + inner + strings.Repeat(end, depth) + `}`
}

// manyMembers returns an object with n unknown members, the last one
// named dup.
func manyMembers(n int, dup string) string {
	var b strings.Builder
	b.WriteString(`{"id":1,"name":"a"`)
	for i := range n {
		b.WriteString(`,"m`)
		b.WriteString(strings.Repeat("x", i))
		b.WriteString(`":0`)
	}
	b.WriteString(`,"` + dup + `":0}`)
	return b.String()
}

type decodeTest struct {
	name    string
	in      string
	want    plantstore.NewPlant
	wantErr error // a *syntaxError (Offset compared), a *plantstore.ValidationError, or any error matched with errors.Is
	reason  string
}

var decodeTests = []decodeTest{
	// Valid bodies.
	{name: "minimal", in: `{"id":1,"name":"Monstera"}`, want: plantstore.NewPlant{ID: 1, Name: "Monstera"}},
	{name: "with tag", in: `{"id":12345,"name":"Monstera","tag":"indoor"}`, want: plantstore.NewPlant{ID: 12345, Name: "Monstera", Tag: "indoor", HasTag: true}},
	{name: "empty tag", in: `{"id":1,"name":"a","tag":""}`, want: plantstore.NewPlant{ID: 1, Name: "a", HasTag: true}, reason: "an empty tag is a tag: HasTag tells it apart from none"},
	{name: "empty name", in: `{"id":1,"name":""}`, want: plantstore.NewPlant{ID: 1}, reason: "length rules belong to the contract, not the decoder"},
	{name: "member order", in: `{"tag":"t","name":"n","id":7}`, want: plantstore.NewPlant{ID: 7, Name: "n", Tag: "t", HasTag: true}},
	{name: "whitespace everywhere", in: " \t\r\n{ \"id\" : 1 ,\n\"name\"\t:\r\"a\" } \n\t\r", want: plantstore.NewPlant{ID: 1, Name: "a"}},
	{name: "unknown members ignored", in: `{"id":1,"name":"a","color":"green","pots":[1,2.5e3,{"a":null,"b":[true,false,{}]}],"x":{}}`, want: plantstore.NewPlant{ID: 1, Name: "a"}},
	{name: "same name in different objects", in: `{"id":1,"name":"a","x":{"id":2,"name":3},"y":[{"a":1},{"a":2}]}`, want: plantstore.NewPlant{ID: 1, Name: "a"}, reason: "names are unique per object, not per document"},
	{name: "nested name equal to outer", in: `{"id":1,"name":"a","a":{"a":{"a":1}}}`, want: plantstore.NewPlant{ID: 1, Name: "a"}},
	{name: "escaped member names", in: `{"\u0069d":1,"n\u0061me":"a","\u0074\u0061\u0067":"t"}`, want: plantstore.NewPlant{ID: 1, Name: "a", Tag: "t", HasTag: true}, reason: "member names are compared after unescaping"},
	{name: "escapes in strings", in: `{"id":1,"name":"\"\\\/\b\f\n\r\t","tag":"\u00e9\u20AC"}`, want: plantstore.NewPlant{ID: 1, Name: "\"\\/\b\f\n\r\t", Tag: "é€", HasTag: true}},
	{name: "surrogate pair", in: `{"id":1,"name":"\ud83c\udf35 cactus"}`, want: plantstore.NewPlant{ID: 1, Name: "🌵 cactus"}},
	{name: "raw UTF-8", in: `{"id":1,"name":"Kaktus 🌵 ü"}`, want: plantstore.NewPlant{ID: 1, Name: "Kaktus 🌵 ü"}},
	{name: "escaped NUL", in: `{"id":1,"name":"a\u0000b"}`, want: plantstore.NewPlant{ID: 1, Name: "a\x00b"}, reason: "NewPlant.Validate rejects NUL; the decoder only decodes"},
	{name: "unicode noncharacter", in: `{"id":1,"name":"\uffff"}`, want: plantstore.NewPlant{ID: 1, Name: "\uffff"}},
	{name: "escaped DEL and slash", in: `{"id":1,"name":"\u007f/"}`, want: plantstore.NewPlant{ID: 1, Name: "\x7f/"}},

	// id values.
	{name: "id zero", in: `{"id":0,"name":"a"}`, want: plantstore.NewPlant{Name: "a"}},
	{name: "id negative", in: `{"id":-42,"name":"a"}`, want: plantstore.NewPlant{ID: -42, Name: "a"}},
	{name: "id minus zero", in: `{"id":-0,"name":"a"}`, want: plantstore.NewPlant{Name: "a"}},
	{name: "id max", in: `{"id":9223372036854775807,"name":"a"}`, want: plantstore.NewPlant{ID: 1<<63 - 1, Name: "a"}},
	{name: "id min", in: `{"id":-9223372036854775808,"name":"a"}`, want: plantstore.NewPlant{ID: -1 << 63, Name: "a"}},
	{name: "id max plus one", in: `{"id":9223372036854775808,"name":"a"}`, wantErr: invalid("id", tooBig)},
	{name: "id min minus one", in: `{"id":-9223372036854775809,"name":"a"}`, wantErr: invalid("id", tooBig)},
	{name: "id twenty digits", in: `{"id":12345678901234567890,"name":"a"}`, wantErr: invalid("id", tooBig)},
	{name: "id leading zeros in fraction form", in: `{"id":0.000000000000000000000000001e27,"name":"a"}`, want: plantstore.NewPlant{ID: 1, Name: "a"}},
	{name: "id decimal zero fraction", in: `{"id":1.0,"name":"a"}`, want: plantstore.NewPlant{ID: 1, Name: "a"}, reason: "JSON Schema: an integer is a number with a zero fractional part"},
	{name: "id exponent", in: `{"id":1e2,"name":"a"}`, want: plantstore.NewPlant{ID: 100, Name: "a"}},
	{name: "id exponent upper case signed", in: `{"id":25E+1,"name":"a"}`, want: plantstore.NewPlant{ID: 250, Name: "a"}},
	{name: "id negative exponent integral", in: `{"id":1200e-2,"name":"a"}`, want: plantstore.NewPlant{ID: 12, Name: "a"}},
	{name: "id max in exponent form", in: `{"id":9.223372036854775807e18,"name":"a"}`, want: plantstore.NewPlant{ID: 1<<63 - 1, Name: "a"}},
	{name: "id min in exponent form", in: `{"id":-92233720368547758.08e2,"name":"a"}`, want: plantstore.NewPlant{ID: -1 << 63, Name: "a"}},
	{name: "id just over max in exponent form", in: `{"id":9.223372036854775808e18,"name":"a"}`, wantErr: invalid("id", tooBig), reason: "float64 would round both to 2^63; the decoder is exact"},
	{name: "id fraction", in: `{"id":1.5,"name":"a"}`, wantErr: invalid("id", notInteger)},
	{name: "id negative exponent fraction", in: `{"id":1e-1,"name":"a"}`, wantErr: invalid("id", notInteger)},
	{name: "id tiny fraction", in: `{"id":1.0000000000000000000001,"name":"a"}`, wantErr: invalid("id", notInteger), reason: "a float64 would round this to 1"},
	{name: "id zero with huge exponent", in: `{"id":0e999999999999999999999,"name":"a"}`, want: plantstore.NewPlant{Name: "a"}},
	{name: "id huge exponent", in: `{"id":1e999999999999999999999,"name":"a"}`, wantErr: invalid("id", tooBig), reason: "decided from digit counts, without computing 10^exp"},
	{name: "id huge negative exponent", in: `{"id":1e-999999999999999999999,"name":"a"}`, wantErr: invalid("id", notInteger)},
	{name: "id 1e19", in: `{"id":1e19,"name":"a"}`, wantErr: invalid("id", tooBig)},
	{name: "id 1e18", in: `{"id":1e18,"name":"a"}`, want: plantstore.NewPlant{ID: 1e18, Name: "a"}},
	{name: "id signed zero with huge negative exponent", in: `{"id":-0.0e-99999999999999999999,"name":"a"}`, want: plantstore.NewPlant{Name: "a"}},
	{name: "id fraction times ten", in: `{"id":1.50e1,"name":"a"}`, want: plantstore.NewPlant{ID: 15, Name: "a"}},
	{name: "id tenths that make an integer", in: `{"id":150e-1,"name":"a"}`, want: plantstore.NewPlant{ID: 15, Name: "a"}},
	{name: "id tenths that do not", in: `{"id":155e-1,"name":"a"}`, wantErr: invalid("id", notInteger)},
	{name: "id many trailing zeros then exponent", in: `{"id":100000000000000000000000000000e-28,"name":"a"}`, want: plantstore.NewPlant{ID: 10, Name: "a"}},
	{name: "id string", in: `{"id":"1","name":"a"}`, wantErr: invalid("id", notInteger)},
	{name: "id true", in: `{"id":true,"name":"a"}`, wantErr: invalid("id", notInteger)},
	{name: "id null", in: `{"id":null,"name":"a"}`, wantErr: invalid("id", notInteger)},
	{name: "id object", in: `{"id":{"a":1},"name":"a"}`, wantErr: invalid("id", notInteger)},
	{name: "id array", in: `{"id":[1],"name":"a"}`, wantErr: invalid("id", notInteger)},
	{name: "id missing", in: `{"name":"a"}`, wantErr: invalid("id", required)},
	{name: "id upper case is not id", in: `{"ID":1,"name":"a"}`, wantErr: invalid("id", required), reason: "member names are case-sensitive; ID is an unknown member"},

	// name and tag values.
	{name: "name missing", in: `{"id":1}`, wantErr: invalid("name", required)},
	{name: "name null", in: `{"id":1,"name":null}`, wantErr: invalid("name", notString)},
	{name: "name number", in: `{"id":1,"name":5}`, wantErr: invalid("name", notString)},
	{name: "name array", in: `{"id":1,"name":["a"]}`, wantErr: invalid("name", notString)},
	{name: "name object", in: `{"id":1,"name":{}}`, wantErr: invalid("name", notString)},
	{name: "tag null", in: `{"id":1,"name":"a","tag":null}`, wantErr: invalid("tag", notString), reason: "null is not a string, and not the same as leaving tag out"},
	{name: "tag false", in: `{"id":1,"name":"a","tag":false}`, wantErr: invalid("tag", notString)},
	{name: "empty object", in: `{}`, wantErr: invalid("id", required)},
	{name: "fields reported in order id name tag", in: `{"tag":1,"name":1,"id":"x"}`, wantErr: invalid("id", notInteger), reason: "the first bad field of id, name, tag, whatever the member order"},
	{name: "name before tag", in: `{"tag":1,"id":1}`, wantErr: invalid("name", required)},
	{name: "syntax before schema", in: `{"id":"x","name":1,}`, wantErr: malformed(19), reason: "a malformed body is reported as such even when a field is also wrong"},

	// Not exactly one object.
	{name: "empty body", in: ``, wantErr: malformed(0)},
	{name: "only whitespace", in: " \n", wantErr: malformed(2)},
	{name: "array", in: `[{"id":1,"name":"a"}]`, wantErr: malformed(0)},
	{name: "string", in: `"x"`, wantErr: malformed(0)},
	{name: "number", in: `1`, wantErr: malformed(0)},
	{name: "null", in: `null`, wantErr: malformed(0)},
	{name: "true", in: `true`, wantErr: malformed(0)},
	{name: "byte order mark", in: "\xef\xbb\xbf{\"id\":1,\"name\":\"a\"}", wantErr: malformed(0), reason: "RFC 8259 section 8.1: a BOM must not be added to JSON text"},
	{name: "two objects", in: `{"id":1,"name":"a"}{"id":2,"name":"b"}`, wantErr: malformed(19)},
	{name: "trailing garbage", in: `{"id":1,"name":"a"} x`, wantErr: malformed(20)},
	{name: "trailing NUL", in: "{\"id\":1,\"name\":\"a\"}\x00", wantErr: malformed(19)},
	{name: "trailing comma after object", in: `{"id":1,"name":"a"},`, wantErr: malformed(19)},
	{name: "unclosed object", in: `{"id":1,"name":"a"`, wantErr: malformed(18)},
	{name: "truncated after colon", in: `{"id":`, wantErr: malformed(6)},
	{name: "truncated name", in: `{"id`, wantErr: malformed(4)},
	{name: "open brace only", in: `{`, wantErr: malformed(1)},
	{name: "garbage start", in: `x`, wantErr: malformed(0)},

	// Object structure.
	{name: "trailing comma", in: `{"id":1,"name":"a",}`, wantErr: malformed(19)},
	{name: "leading comma", in: `{,"id":1,"name":"a"}`, wantErr: malformed(1)},
	{name: "missing comma", in: `{"id":1 "name":"a"}`, wantErr: malformed(8)},
	{name: "missing colon", in: `{"id" 1,"name":"a"}`, wantErr: malformed(6)},
	{name: "unquoted name", in: `{id:1,"name":"a"}`, wantErr: malformed(1)},
	{name: "object for a name", in: `{{"id":0,"id":1}}`, wantErr: malformed(1), reason: "the error is the name that is not a string, not what is inside it"},
	{name: "object for a later name", in: `{"a":1,{"x":1,"x":2}}`, wantErr: malformed(7)},
	{name: "single quotes", in: `{'id':1,"name":"a"}`, wantErr: malformed(1)},
	{name: "comment", in: `{"id":1,/*c*/"name":"a"}`, wantErr: malformed(8)},
	{name: "number as name", in: `{1:1}`, wantErr: malformed(1)},
	{name: "missing value", in: `{"id":,"name":"a"}`, wantErr: malformed(6), reason: "a missing id value is malformed JSON, not a type error"},
	{name: "trailing comma in nested array", in: `{"id":1,"name":"a","x":[1,]}`, wantErr: malformed(26)},
	{name: "missing comma in nested array", in: `{"id":1,"name":"a","x":[1 2]}`, wantErr: malformed(26)},
	{name: "mismatched brackets", in: `{"id":1,"name":"a","x":[1}}`, wantErr: malformed(25)},
	{name: "unclosed nested object", in: `{"id":1,"name":"a","x":{"a":1}`, wantErr: malformed(30)},

	// Duplicates.
	{name: "duplicate id", in: `{"id":1,"name":"a","id":2}`, wantErr: malformed(19)},
	{name: "duplicate name", in: `{"id":1,"name":"a","name":"b"}`, wantErr: malformed(19)},
	{name: "duplicate tag", in: `{"id":1,"name":"a","tag":"x","tag":"x"}`, wantErr: malformed(29)},
	{name: "duplicate by escape", in: `{"id":1,"name":"a","\u0069d":2}`, wantErr: malformed(19), reason: "names are compared after unescaping"},
	{name: "duplicate unknown", in: `{"id":1,"name":"a","x":1,"x":2}`, wantErr: malformed(25)},
	{name: "duplicate unknown by escape", in: `{"id":1,"name":"a","\u00e9":1,"é":2}`, wantErr: malformed(30)},
	{name: "duplicate unknown escaped both ways", in: `{"id":1,"name":"a","\/":1,"\u002f":2}`, wantErr: malformed(26)},
	{name: "duplicate in nested object", in: `{"id":1,"name":"a","x":{"a":1,"a":2}}`, wantErr: malformed(30)},
	{name: "duplicate in object in array", in: `{"id":1,"name":"a","x":[{},{"b":{"c":1,"c":1}}]}`, wantErr: malformed(39)},
	{name: "duplicate after nested close", in: `{"id":1,"name":"a","x":{"y":1},"y":2,"x":3}`, wantErr: malformed(37), reason: "names of a closed nested object are forgotten, the outer ones kept"},
	{name: "duplicate among many members", in: manyMembers(100, "mxxxxx"), wantErr: malformed(len(manyMembers(100, "mxxxxx")) - 11), reason: "past maxNamesScanned names, duplicates are found through a map"},
	{name: "many distinct members", in: manyMembers(100, "other"), want: plantstore.NewPlant{ID: 1, Name: "a"}},
	{name: "escaped duplicate among many members", in: manyMembers(100, `m\u0078xxxx`), wantErr: malformed(len(manyMembers(100, `m\u0078xxxx`)) - 16)},
	{name: "many members in nested objects", in: `{"id":1,"name":"a","x":` + manyMembers(50, "x")[:len(manyMembers(50, "x"))-1] + `,"y":` + manyMembers(50, "y") + `}}`, want: plantstore.NewPlant{ID: 1, Name: "a"}, reason: "each object has its own set of names"},
	{name: "duplicate in nested object with many members", in: `{"id":1,"name":"a","x":` + manyMembers(50, "mxx") + `}`, wantErr: malformed(23 + len(manyMembers(50, "mxx")) - 8)},
	{name: "case differs is not duplicate", in: `{"id":1,"name":"a","Name":"b","NAME":"c"}`, want: plantstore.NewPlant{ID: 1, Name: "a"}},

	// Strings.
	{name: "unpaired high surrogate", in: `{"id":1,"name":"\ud800"}`, wantErr: malformed(16)},
	{name: "unpaired low surrogate", in: `{"id":1,"name":"\udc00"}`, wantErr: malformed(16)},
	{name: "reversed surrogates", in: `{"id":1,"name":"\udc00\ud800"}`, wantErr: malformed(16)},
	{name: "high surrogate then letter", in: `{"id":1,"name":"\ud800x"}`, wantErr: malformed(16)},
	{name: "two high surrogates", in: `{"id":1,"name":"\ud800\ud800"}`, wantErr: malformed(16)},
	{name: "unpaired surrogate in ignored member", in: `{"id":1,"name":"a","x":["\udfff"]}`, wantErr: malformed(25), reason: "ignored members are fully checked"},
	{name: "unpaired surrogate in unknown name", in: `{"id":1,"name":"a","\ud800":1}`, wantErr: malformed(20)},
	{name: "invalid escape", in: `{"id":1,"name":"\x"}`, wantErr: malformed(16)},
	{name: "escaped single quote", in: `{"id":1,"name":"\'"}`, wantErr: malformed(16)},
	{name: "short unicode escape", in: `{"id":1,"name":"\u12"}`, wantErr: malformed(16)},
	{name: "bad hex in unicode escape", in: `{"id":1,"name":"\u12g4"}`, wantErr: malformed(16)},
	{name: "upper case U escape", in: `{"id":1,"name":"\U0041"}`, wantErr: malformed(16)},
	{name: "raw newline", in: "{\"id\":1,\"name\":\"a\nb\"}", wantErr: malformed(17)},
	{name: "raw tab", in: "{\"id\":1,\"name\":\"a\tb\"}", wantErr: malformed(17)},
	{name: "raw NUL", in: "{\"id\":1,\"name\":\"a\x00\"}", wantErr: malformed(17)},
	{name: "raw control char in ignored member", in: "{\"id\":1,\"name\":\"a\",\"x\":\"\x1f\"}", wantErr: malformed(24)},
	{name: "invalid UTF-8", in: "{\"id\":1,\"name\":\"\xff\"}", wantErr: malformed(16)},
	{name: "truncated UTF-8", in: "{\"id\":1,\"name\":\"\xc3\"}", wantErr: malformed(16)},
	{name: "overlong UTF-8", in: "{\"id\":1,\"name\":\"\xc0\xaf\"}", wantErr: malformed(16)},
	{name: "UTF-8 encoded surrogate", in: "{\"id\":1,\"name\":\"\xed\xa0\x80\"}", wantErr: malformed(16)},
	{name: "invalid UTF-8 in name", in: "{\"id\":1,\"name\":\"a\",\"\xfe\":1}", wantErr: malformed(20)},
	{name: "invalid UTF-8 outside strings", in: "{\"id\":1,\"name\":\"a\"\xc3\xa9}", wantErr: malformed(18)},
	{name: "unterminated string", in: `{"id":1,"name":"abc`, wantErr: malformed(19)},
	{name: "escape at end", in: `{"id":1,"name":"abc\`, wantErr: malformed(20)},
	{name: "unicode escape cut short by the end", in: `{"id":1,"name":"\u12`, wantErr: malformed(16), reason: "what is wrong is the escape, not the end of input"},
	{name: "high surrogate at the end", in: `{"id":1,"name":"\ud800`, wantErr: malformed(16)},
	{name: "high surrogate then half an escape at the end", in: `{"id":1,"name":"\ud800\u`, wantErr: malformed(16)},
	{name: "low surrogate at the end", in: `{"id":1,"name":"\udc00`, wantErr: malformed(16)},
	{name: "surrogate pair at the end", in: `{"id":1,"name":"\ud83c\udf35`, wantErr: malformed(28)},
	{name: "UTF-8 cut short by the end", in: "{\"id\":1,\"name\":\"\xf0\x9f", wantErr: malformed(16)},

	// Numbers.
	{name: "leading zero", in: `{"id":01,"name":"a"}`, wantErr: malformed(6)},
	{name: "negative leading zero", in: `{"id":-01,"name":"a"}`, wantErr: malformed(7)},
	{name: "plus sign", in: `{"id":+1,"name":"a"}`, wantErr: malformed(6)},
	{name: "leading dot", in: `{"id":.5,"name":"a"}`, wantErr: malformed(6)},
	{name: "trailing dot", in: `{"id":1.,"name":"a"}`, wantErr: malformed(8)},
	{name: "lone minus", in: `{"id":-,"name":"a"}`, wantErr: malformed(7)},
	{name: "empty exponent", in: `{"id":1e,"name":"a"}`, wantErr: malformed(8)},
	{name: "exponent sign only", in: `{"id":1e+,"name":"a"}`, wantErr: malformed(9)},
	{name: "hex", in: `{"id":0x1,"name":"a"}`, wantErr: malformed(7)},
	{name: "infinity", in: `{"id":Infinity,"name":"a"}`, wantErr: malformed(6)},
	{name: "NaN", in: `{"id":NaN,"name":"a"}`, wantErr: malformed(6)},
	{name: "bad number in ignored member", in: `{"id":1,"name":"a","x":[00]}`, wantErr: malformed(24)},
	{name: "truncated number", in: `{"id":1`, wantErr: malformed(7)},
	{name: "lone minus at the end", in: `{"id":-`, wantErr: malformed(7)},
	{name: "exponent cut short by the end", in: `{"id":1e`, wantErr: malformed(8)},
	{name: "leading zero in ignored member", in: `{"id":1,"name":"a","x":-00}`, wantErr: malformed(24)},

	// Literals.
	{name: "capitalised literal", in: `{"id":1,"name":"a","x":True}`, wantErr: malformed(23)},
	{name: "truncated literal", in: `{"id":1,"name":"a","x":nul}`, wantErr: malformed(26)},
	{name: "literal with suffix", in: `{"id":1,"name":"a","x":nullx}`, wantErr: malformed(27)},
	{name: "undefined", in: `{"id":1,"name":"a","x":undefined}`, wantErr: malformed(23)},

	// Nesting depth.
	{name: "deepest arrays", in: nest("[", "", "]", maxNestingDepth-1), want: plantstore.NewPlant{ID: 1, Name: "a"}, reason: "the top-level object and 9999 arrays make 10000 levels"},
	{name: "too deep arrays", in: nest("[", "", "]", maxNestingDepth), wantErr: malformed(23 + maxNestingDepth - 1)},
	{name: "deepest objects", in: nest(`{"a":`, "0", "}", maxNestingDepth-1), want: plantstore.NewPlant{ID: 1, Name: "a"}},
	{name: "too deep objects", in: nest(`{"a":`, "0", "}", maxNestingDepth), wantErr: malformed(23 + 5*(maxNestingDepth-1))},
	{name: "too deep in bad id", in: `{"id":` + strings.Repeat("[", maxNestingDepth), wantErr: malformed(6 + maxNestingDepth - 1), reason: "values of the wrong type are checked like ignored ones"},
}

func TestDecodeNewPlant(t *testing.T) {
	t.Parallel()
	for _, tt := range decodeTests {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(tt.in)
			got, err := decodeNewPlant(body)
			checkDecode(t, tt, got, err)
			if err == nil {
				// The caller reuses its buffer: the result must not alias it.
				for i := range body {
					body[i] = 'X'
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("result changed with the body (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func checkDecode(t *testing.T, tt decodeTest, got plantstore.NewPlant, err error) {
	t.Helper()
	switch want := tt.wantErr.(type) {
	case nil:
		if err != nil {
			t.Fatalf("decodeNewPlant(%.80q) = %v, want %+v", tt.in, err, tt.want)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("decodeNewPlant(%.80q) mismatch (-want +got):\n%s", tt.in, diff)
		}
	case *syntaxError:
		gotSE, ok := errors.AsType[*syntaxError](err)
		if !ok {
			t.Fatalf("decodeNewPlant(%.80q) = %+v, %v; want a *syntaxError", tt.in, got, err)
		}
		if gotSE.Offset != want.Offset {
			t.Errorf("decodeNewPlant(%.80q) error at byte %d (%v), want at byte %d", tt.in, gotSE.Offset, err, want.Offset)
		}
	case *plantstore.ValidationError:
		gotVE, ok := errors.AsType[*plantstore.ValidationError](err)
		if !ok {
			t.Fatalf("decodeNewPlant(%.80q) = %+v, %v; want a *plantstore.ValidationError", tt.in, got, err)
		}
		if diff := cmp.Diff(want, gotVE); diff != "" {
			t.Errorf("decodeNewPlant(%.80q) error mismatch (-want +got):\n%s", tt.in, diff)
		}
	default:
		if !errors.Is(err, want) {
			t.Fatalf("decodeNewPlant(%.80q) = %+v, %v; want %v", tt.in, got, err, want)
		}
	}
}

// TestDecodeErrorMessages checks that messages stay short and quote no
// more of the body than a character or a short name.
func TestDecodeErrorMessages(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("n", 10000)
	for _, in := range []string{
		`{"id":1,"name":"a","` + long + `":1,"` + long + `":2}`,
		`{"id":1,"name":"a","` + long + `":` + long + `}`,
		`{"id":1,"name":"` + long + "\x01\"}",
		`{"id":1,"name":"a"}` + long,
		"{\"id\":1,\"name\":\"a\"}\xe2\x80\xae" + long,
	} {
		_, err := decodeNewPlant([]byte(in))
		var se *syntaxError
		if !errors.As(err, &se) {
			t.Fatalf("decodeNewPlant(%.40q...) = %v, want a *syntaxError", in, err)
		}
		if msg := se.Error(); len(msg) > 120 || strings.Contains(msg, strings.Repeat("n", 50)) || !isPrintableASCII(msg) {
			t.Errorf("decodeNewPlant(%.40q...) message %q: want a short printable ASCII message", in, msg)
		}
	}
}

func isPrintableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

var benchInputs = []struct{ name, in string }{
	{"valid", `{"id":12345,"name":"Monstera","tag":"indoor"}`},
	{"valid-escaped", `{"id":12345,"name":"Monstera \"Thai Constellation\" \u00e9\ud83c\udf3f","tag":"indoor\/outdoor"}`},
	{"unknown-members", `{"id":12345,"name":"Monstera","tag":"indoor","color":"green","size":{"height":1.2e2,"pots":[1,2,3]},"rare":false}`},
	{"invalid", `{"id":12345,"name":"Monstera","tag":"indoor",}`},
	{"no-strings", `{"id":1,"name":""}`},
	{"not-an-integer", `{"id":"1","name":"a"}`},
	{"truncated", `{"id":1,"name":"a"`},
}

// benchDecode times decode over each of benchInputs.
func benchDecode(b *testing.B, decode func(body []byte)) {
	for _, bi := range benchInputs {
		b.Run(bi.name, func(b *testing.B) {
			body := []byte(bi.in)
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				decode(body)
			}
		})
	}
}

var sinkPlant plantstore.NewPlant

func BenchmarkDecode(b *testing.B) {
	benchDecode(b, func(body []byte) { sinkPlant, _ = decodeNewPlant(body) })
}

// wireNewPlant is the NewPlant the general-purpose decoders fill for
// comparison: pointers tell a missing member from a zero one.
type wireNewPlant struct {
	ID   *int64  `json:"id"`
	Name *string `json:"name"`
	Tag  *string `json:"tag"`
}

func BenchmarkDecodeJSONv2(b *testing.B) {
	benchDecode(b, func(body []byte) {
		var w wireNewPlant
		_ = jsonv2.Unmarshal(body, &w)
	})
}

func BenchmarkDecodeEncodingJSON(b *testing.B) {
	benchDecode(b, func(body []byte) {
		var w wireNewPlant
		_ = json.Unmarshal(body, &w)
	})
}

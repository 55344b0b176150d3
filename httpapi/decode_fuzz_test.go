package httpapi

import (
	"errors"
	"math/big"
	"strconv"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

// errReferenceSyntax marks a body the reference rejects as JSON.
var errReferenceSyntax = errors.New("reference: malformed")

// referenceDecode is decodeNewPlant built another way: the whole body
// through go-json-experiment's json.Unmarshal, whose default options are
// strict in the same ways (valid UTF-8 only, paired surrogate escapes, no
// duplicate names at any depth, no trailing data, nesting limited to
// 10000), then the schema rules applied to a map of the members' raw
// values, with integer-ness decided by math/big. It shares no code with
// decodeNewPlant's token walk, its end-of-input check or exactInt64. It is
// checked through FuzzDecode's seeds, which hold every input of
// decodeTests, on which it must agree with decodeNewPlant.
func referenceDecode(body []byte) (plantstore.NewPlant, error) {
	var v jsontext.Value
	if err := jsonv2.Unmarshal(body, &v); err != nil || v.Kind() != '{' {
		return plantstore.NewPlant{}, errReferenceSyntax
	}
	var members map[string]jsontext.Value
	if err := jsonv2.Unmarshal(v, &members); err != nil {
		return plantstore.NewPlant{}, errReferenceSyntax
	}
	var np plantstore.NewPlant
	id, ok := members["id"]
	switch {
	case !ok:
		return plantstore.NewPlant{}, invalid("id", required)
	case id.Kind() != '0':
		return plantstore.NewPlant{}, invalid("id", notInteger)
	}
	var reason string
	if np.ID, reason = referenceInt64(string(id)); reason != "" {
		return plantstore.NewPlant{}, invalid("id", reason)
	}
	name, ok := members["name"]
	switch {
	case !ok:
		return plantstore.NewPlant{}, invalid("name", required)
	case name.Kind() != '"':
		return plantstore.NewPlant{}, invalid("name", notString)
	}
	if err := jsonv2.Unmarshal(name, &np.Name); err != nil {
		return plantstore.NewPlant{}, errReferenceSyntax
	}
	if tag, ok := members["tag"]; ok {
		if tag.Kind() != '"' {
			return plantstore.NewPlant{}, invalid("tag", notString)
		}
		if err := jsonv2.Unmarshal(tag, &np.Tag); err != nil {
			return plantstore.NewPlant{}, errReferenceSyntax
		}
		np.HasTag = true
	}
	return np, nil
}

// referenceInt64 decides with math/big whether the valid JSON number text
// is an integer within int64.
func referenceInt64(text string) (int64, string) {
	mant, expText := text, "0"
	if k := strings.IndexAny(text, "eE"); k >= 0 {
		mant, expText = text[:k], text[k+1:]
	}
	exp, err := strconv.ParseInt(expText, 10, 64)
	if err != nil { // out of range: any exponent past 1<<62 decides alike
		exp = 1 << 62
		if expText[0] == '-' {
			exp = -exp
		}
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimPrefix(intPart, "-") + frac
	exp -= int64(len(frac))
	m, _ := new(big.Int).SetString(digits, 10)
	if m.Sign() == 0 {
		return 0, ""
	}
	if strings.HasPrefix(intPart, "-") {
		m.Neg(m)
	}
	switch {
	case exp > 0:
		if exp > 40 { // |m| >= 1, so |value| >= 10^41
			return 0, tooBig
		}
		m.Mul(m, new(big.Int).Exp(big.NewInt(10), big.NewInt(exp), nil))
	case exp < 0:
		if -exp > int64(len(digits)) { // 0 < |value| < 1
			return 0, notInteger
		}
		var r big.Int
		m.QuoRem(m, new(big.Int).Exp(big.NewInt(10), big.NewInt(-exp), nil), &r)
		if r.Sign() != 0 {
			return 0, notInteger
		}
	}
	if !m.IsInt64() {
		return 0, tooBig
	}
	return m.Int64(), ""
}

func FuzzDecode(f *testing.F) {
	for _, tt := range decodeTests {
		f.Add([]byte(tt.in))
	}
	for _, bi := range benchInputs {
		f.Add([]byte(bi.in))
	}
	for _, s := range []string{
		`{"id":-9.223372036854775808e18,"name":"\u0000","tag":"\ud83d\ude00"}`,
		`{"id":1E+0,"name":"a","":{"":[{},[],""]},"\"":null}`,
		`{"id":123456789012345678.9e1,"name":"a"}`,
		`{"id":0.1e1,"name":"\u00"}`,
		"{\"id\":1,\"name\":\"\xf4\x8f\xbf\xbf\xf4\x90\x80\x80\"}",
		`{"id":1,"name":"a","tag":"b","\u0074ag":"c"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		want, wantErr := referenceDecode(body)
		in := append([]byte(nil), body...)
		got, err := decodeNewPlant(in)
		for i := range in {
			in[i] = 0
		}
		tt := decodeTest{in: string(body), want: want, wantErr: wantErr}
		if errors.Is(wantErr, errReferenceSyntax) {
			var se *syntaxError
			if !errors.As(err, &se) {
				t.Fatalf("decodeNewPlant(%q) = %+v, %v; the reference rejects it as malformed", body, got, err)
			}
			return
		}
		checkDecode(t, tt, got, err)
		if err == nil {
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("decodeNewPlant(%q) result changed with the body (-want +got):\n%s", body, diff)
			}
		}
	})
}

package httpapi

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

func TestAppendPlant(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		p      plantstore.Plant
		withID bool
		want   string
		reason string
	}{
		{name: "untagged", p: plantstore.Plant{ID: 7, Name: "Fern"}, want: `{"name":"Fern"}`},
		{name: "untagged with id", p: plantstore.Plant{ID: -7, Name: "Fern"}, withID: true, want: `{"id":-7,"name":"Fern"}`},
		{name: "empty tag", p: plantstore.Plant{ID: 1, Name: "", Tag: "", HasTag: true}, withID: true,
			want: `{"id":1,"name":"","tag":""}`, reason: "a tag that is present is written even when empty"},
		{name: "tag without HasTag", p: plantstore.Plant{ID: 1, Name: "a", Tag: "x"}, want: `{"name":"a"}`},
		{name: "escapes", p: plantstore.Plant{Name: "q\"b\\s/\b\f\n\r\t\x01\x1f\x7f", Tag: "<&>\u2028é😀", HasTag: true},
			want:   `{"name":"q\"b\\s/\b\f\n\r\t\u0001\u001f` + "\x7f" + `","tag":"<&>` + "\u2028é😀" + `"}`,
			reason: "the shortest form: only quotes, backslashes and control characters are escaped"},
		{name: "invalid UTF-8", p: plantstore.Plant{Name: "a\xffb"}, want: `{"name":"a` + "\ufffd" + `b"}`,
			reason: "never stored, but the output stays valid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := appendPlant([]byte("x"), tt.p, tt.withID)
			if diff := cmp.Diff("x"+tt.want, string(got)); diff != "" {
				t.Errorf("appendPlant(%+v, %v) mismatch (-want +got):\n%s", tt.p, tt.withID, diff)
			}
		})
	}
}

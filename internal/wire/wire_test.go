package wire

import (
	"slices"
	"testing"
)

func TestInvalidRoundTrip(t *testing.T) {
	tests := []struct {
		field, reason string
	}{
		{"name", "is required"},
		{"id", "must be an integer"},
		{"tag", "must not contain NUL (U+0000)"},
		{"limit", "must be an integer from 1 to 1000"},
		{"after", "must be a 64-bit signed integer in canonical decimal form"},
		{"name", "has: a colon"},
	}
	for _, tt := range tests {
		msg := Invalid(tt.field, tt.reason)
		field, reason, ok := ParseInvalid(msg)
		if !ok || field != tt.field || reason != tt.reason {
			t.Errorf("ParseInvalid(%q) = %q, %q, %v; want %q, %q, true", msg, field, reason, ok, tt.field, tt.reason)
		}
	}
	for _, msg := range []string{
		"", "invalid", "invalid name", "invalid bearer token", "invalid : empty field",
		"malformed JSON at byte 21: unexpected end of input", NoSuchResource, PlantMissing,
	} {
		if field, reason, ok := ParseInvalid(msg); ok {
			t.Errorf("ParseInvalid(%q) = %q, %q, true; want false", msg, field, reason)
		}
	}
}

func TestIsB64Token(t *testing.T) {
	for _, s := range []string{"a", "s3cret", "abc-._~+/", "YWJj==", "A0z9"} {
		if !IsB64Token(s) {
			t.Errorf("IsB64Token(%q) = false, want true", s)
		}
	}
	for _, s := range []string{"", "=", "==abc", "a b", "a=b", "tök", "a\\x00", "a,b", `a"`} {
		if IsB64Token(s) {
			t.Errorf("IsB64Token(%q) = true, want false", s)
		}
	}
}

func TestCodes(t *testing.T) {
	codes := Codes()
	if !slices.IsSorted(codes) || len(slices.Compact(slices.Clone(codes))) != len(codes) {
		t.Errorf("Codes() = %v, want ascending and distinct", codes)
	}
	for _, c := range codes {
		if c < 400 || c > 599 {
			t.Errorf("code %d is not an HTTP error status", c)
		}
	}
}

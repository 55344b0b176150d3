package client

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestNextLink(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		values []string
		want   string
		wantOK bool
		reason string
	}{
		{name: "plantstore's", values: []string{`<?limit=2&after=5>; rel="next"`}, want: "?limit=2&after=5", wantOK: true},
		{name: "none", values: nil},
		{name: "unquoted rel", values: []string{`</p?a=1>;rel=next`}, want: "/p?a=1", wantOK: true},
		{name: "case and spaces", values: []string{`<a>  ;  REL = "Next"`}, want: "a", wantOK: true},
		{name: "several types", values: []string{`<a>; rel="prev next"`}, want: "a", wantOK: true},
		{name: "after another link", values: []string{`<p>; rel="prev", <n>; rel="next"`}, want: "n", wantOK: true},
		{name: "in a second value", values: []string{`<p>; rel="prev"`, `<n>; rel="next"`}, want: "n", wantOK: true},
		{name: "comma in the target", values: []string{`<a,b>; rel="next"`}, want: "a,b", wantOK: true},
		{name: "other parameters", values: []string{`<a>; title="x; rel=next, y"; rel="next"`}, want: "a", wantOK: true,
			reason: "a quoted string may hold ; and ,"},
		{name: "escaped quote", values: []string{`<p>; title="a\"; rel=next"; rel=prev, <n>; rel=next`}, want: "n", wantOK: true},
		{name: "only the first rel counts", values: []string{`<a>; rel="prev"; rel="next"`}},
		{name: "rel of another name", values: []string{`<a>; relx="next"`}},
		{name: "not next", values: []string{`<a>; rel="nextpage"`}},
		{name: "no brackets", values: []string{`a; rel="next"`}},
		{name: "unterminated target", values: []string{`<a; rel="next"`}},
		{name: "unterminated quote", values: []string{`<a>; rel="next`}},
		{name: "junk after the target", values: []string{`<a> x; rel="next"`}},
		{name: "empty target", values: []string{`<>; rel=next`}, want: "", wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := nextLink(tt.values)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("nextLink(%q) = %q, %v; want %q, %v", tt.values, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func FuzzNextLink(f *testing.F) {
	f.Add(`<?limit=2&after=5>; rel="next"`)
	f.Add(`<p>; title="a\"; rel=next"; rel=prev, <n>; rel=next`)
	f.Add(`<a>; rel="next`)
	f.Fuzz(func(t *testing.T, v string) {
		got, ok := nextLink([]string{v})
		if !ok && got != "" {
			t.Errorf("nextLink(%q) = %q, false", v, got)
		}
		if len(got) > len(v) {
			t.Errorf("nextLink(%q) = %q, longer than its input", v, got)
		}
	})
}

// TestWait checks how a 503's Retry-After sets a wait, and that its
// random part is drawn up to half the wait.
func TestWait(t *testing.T) {
	t.Parallel()
	unavailable := func(retryAfter string) error {
		h := http.Header{}
		if retryAfter != "" {
			h.Set("Retry-After", retryAfter)
		}
		return &Error{StatusCode: 503, Code: 503, header: h}
	}
	tests := []struct {
		name     string
		maxDelay time.Duration
		drawn    int64 // what the jitter draws
		err      error
		want     time.Duration
		bound    int64 // if not 0, what the jitter must draw below
		reason   string
	}{
		{name: "drawn", maxDelay: time.Minute, drawn: int64(time.Second), err: unavailable(""), want: time.Second},
		{name: "retry-after", maxDelay: time.Minute, drawn: 5, err: unavailable("3"), want: 3*time.Second + 5,
			reason: "the server's wait, and a random part"},
		{name: "retry-after, the largest draw", maxDelay: time.Minute, drawn: int64(2 * time.Second), err: unavailable("4"),
			want: 6 * time.Second, bound: int64(2*time.Second) + 1},
		{name: "retry-after not capped", maxDelay: 2 * time.Second, drawn: int64(time.Second), err: unavailable("3"),
			want: 4 * time.Second, reason: "MaxDelay bounds the client's own backoff, not the server's Retry-After"},
		{name: "retry-after, no cap", drawn: 0, err: unavailable("120"), want: 2 * time.Minute},
		{name: "retry-after bounded", drawn: 0, err: unavailable("86400"), want: time.Hour,
			reason: "a server asking for a day gets an hour"},
		{name: "retry-after as a date ignored", maxDelay: time.Minute, drawn: 5,
			err: unavailable("Wed, 21 Oct 2015 07:28:00 GMT"), want: 5},
		{name: "retry-after on another error ignored", maxDelay: time.Minute, drawn: 5,
			err: &Error{Code: 504, header: http.Header{"Retry-After": {"3"}}}, want: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var bound int64
			c := &Client{
				retry:  RetryPolicy{MaxAttempts: 2, BaseDelay: time.Second, MaxDelay: tt.maxDelay},
				jitter: func(n int64) int64 { bound = n; return tt.drawn },
			}
			if diff := cmp.Diff(tt.want, c.wait(1, tt.err)); diff != "" {
				t.Errorf("wait mismatch (-want +got) %s:\n%s", tt.reason, diff)
			}
			if tt.bound != 0 && bound != tt.bound {
				t.Errorf("jitter drawn below %d, want %d", bound, tt.bound)
			}
		})
	}
}

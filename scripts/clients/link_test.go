package clients_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/scripts/clients"
)

func TestNextAfter(t *testing.T) {
	t.Parallel()
	type result struct {
		After int64
		More  bool
	}
	tests := []struct {
		name, link string
		want       result
		reason     string
	}{
		{name: "next", link: `<?limit=2&after=4>; rel="next"`, want: result{4, true}},
		{name: "negative id", link: `<?limit=2&after=-7>; rel="next"`, want: result{-7, true}},
		{name: "last page", link: "", want: result{}, reason: "the last page has no Link"},
		{name: "another relation", link: `<?limit=2&after=4>; rel="prev"`, want: result{}},
		{name: "no after", link: `<?limit=2>; rel="next"`, want: result{}},
		{name: "not a reference", link: `?limit=2&after=4; rel="next"`, want: result{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			after, more := clients.NextAfter(tt.link)
			if diff := cmp.Diff(tt.want, result{after, more}); diff != "" {
				t.Errorf("NextAfter(%q) mismatch (-want +got):\n%s\n%s", tt.link, diff, tt.reason)
			}
		})
	}
}

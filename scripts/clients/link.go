package clients

import (
	"net/url"
	"strconv"
	"strings"
)

// NextAfter returns the after parameter of the next page that a list's
// Link header value, such as `<?limit=2&after=4>; rel="next"`, names, and
// false when there is none: the page was the last. The reference is
// relative to the request's URL; only its query matters to a client that
// passes after as a parameter. These are the lines docs/api.md gives Go
// users of either generator.
func NextAfter(link string) (int64, bool) {
	ref, params, ok := strings.Cut(strings.TrimPrefix(link, "<"), ">")
	if !ok || !strings.Contains(params, `rel="next"`) {
		return 0, false
	}
	u, err := url.Parse(ref)
	if err != nil {
		return 0, false
	}
	after, err := strconv.ParseInt(u.Query().Get("after"), 10, 64)
	return after, err == nil
}

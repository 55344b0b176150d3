package apidocs

import "testing"

func TestAcceptsGzip(t *testing.T) {
	for _, tt := range []struct {
		values []string
		want   bool
	}{
		{nil, false},
		{[]string{"identity"}, false},
		{[]string{"gzip"}, true},
		{[]string{"br, GZIP;q=0.8"}, true},
		{[]string{"deflate", "x-gzip"}, true},
		{[]string{"gzip;q=0"}, false},
		{[]string{"gzip; q=0.000"}, false},
		{[]string{"gzip;q=0.001"}, true},
		{[]string{"gzipped"}, false},
		{[]string{"*"}, false},
	} {
		if got := acceptsGzip(tt.values); got != tt.want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", tt.values, got, tt.want)
		}
	}
}

package httpapi

import (
	"testing"
	"time"
)

func TestRetryAfterSeconds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		failing time.Duration
		want    int
		reason  string
	}{
		{0, 1, "writes are not failing"},
		{time.Millisecond, 1, ""},
		{2 * time.Second, 1, ""},
		{2*time.Second + 1, 2, "half, rounded up"},
		{19 * time.Second, 10, ""},
		{time.Minute, 30, ""},
		{time.Hour, 30, "never more than maxRetryAfter"},
	}
	for _, tt := range tests {
		if got := retryAfterSeconds(tt.failing); got != tt.want {
			t.Errorf("retryAfterSeconds(%v) = %d, want %d %s", tt.failing, got, tt.want, tt.reason)
		}
	}
}

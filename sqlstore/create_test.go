package sqlstore

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestLinger checks that the committer's wait for more Creates ends as soon
// as the batch holds what it waits for, when the Store closes, or when its
// time is up, and keeps every Create it took.
func TestLinger(t *testing.T) {
	tests := []struct {
		name   string
		sent   int // Creates sent during the wait
		want   int
		d      time.Duration
		close  bool
		reason string
	}{
		{name: "reaches want", sent: 3, want: 4, d: time.Hour, reason: "returns once 1+3 are in, long before d"},
		{name: "capped by maxBatch", sent: maxBatch - 1, want: maxBatch + 10, d: time.Hour, reason: "a full batch stops the wait"},
		{name: "store closes", sent: 0, want: 4, d: time.Hour, close: true},
		{name: "time is up", sent: 0, want: 4, d: 10 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Store{reqs: make(chan *createReq), closed: make(chan struct{})}
			go func() {
				for range tt.sent {
					s.reqs <- &createReq{}
				}
				if tt.close {
					close(s.closed)
				}
			}()
			batch := s.linger([]*createReq{{}}, tt.want, tt.d)
			wantLen := min(tt.want, maxBatch, 1+tt.sent)
			if diff := cmp.Diff(wantLen, len(batch)); diff != "" {
				t.Errorf("len(linger(...)) (-want +got):\n%s\n%s", diff, tt.reason)
			}
		})
	}
}

package robustness

import (
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// A History records operations from concurrent clients. Times are
// nanoseconds since the History was made, read from the monotonic clock.
type History struct {
	start time.Time

	mu      sync.Mutex
	ops     []porcupine.Operation
	unknown int
}

// NewHistory returns an empty History whose clock starts now.
func NewHistory() *History {
	return &History{start: time.Now()}
}

// Now returns the time to record as an operation's call or return.
func (h *History) Now() int64 {
	return int64(time.Since(h.start))
}

// Add records an operation of client that was called at call and returned
// out at ret. A read that failed tells nothing and is left out. An
// operation of [Unknown] outcome is recorded as still pending when every
// other operation has returned (see [History.Operations]).
func (h *History) Add(client int, in Input, call int64, out Output, ret int64) {
	if in.Kind == Read && (out.Result == Unknown || out.Result == Unavailable) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if out.Result == Unknown {
		h.unknown++
	}
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
}

// Len returns the number of operations recorded and how many of them
// have an unknown outcome.
func (h *History) Len() (ops, unknown int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ops), h.unknown
}

// Operations returns the recorded history for the checker. Every
// operation of unknown outcome returns after every other operation's
// return and call, since it may take effect at any time after its call.
func (h *History) Operations() []porcupine.Operation {
	h.mu.Lock()
	defer h.mu.Unlock()
	ops := make([]porcupine.Operation, len(h.ops))
	copy(ops, h.ops)
	var end int64
	for _, op := range ops {
		end = max(end, op.Call, op.Return)
	}
	for i := range ops {
		if ops[i].Output.(Output).Result == Unknown {
			end++
			ops[i].Return = end
		}
	}
	return ops
}

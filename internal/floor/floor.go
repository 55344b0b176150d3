// Package floor serves the cheapest possible answer to a plant creation: it
// is the floor that plantstore's HTTP throughput is measured against on the
// same machine, so that a figure can be read as a ratio rather than as an
// absolute that depends on the hardware.
package floor

import (
	"io"
	"net/http"
	"time"
)

// body is the fixed answer: a Plant, as the API's 200 response has.
var body = []byte(`{"name":"x"}`)

// Handler returns a handler that reads the request body fully and answers
// 200 with a fixed Plant body, whatever the method, path or body. It parses
// nothing, so it costs only what net/http itself costs.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		h := w.Header()
		h["Content-Type"] = []string{"application/json"}
		w.WriteHeader(http.StatusOK)
		w.Write(body)
	})
}

// Working returns a handler that keeps the processor busy for d, without
// sleeping, before it hands the request to h. Serving it next to the floor
// shows what a given amount of handler work costs in throughput on a
// machine, which is more than the work itself wherever the load generator
// has to be woken for answers that come less often.
func Working(h http.Handler, d time.Duration) http.Handler {
	if d <= 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for start := time.Now(); time.Since(start) < d; {
		}
		h.ServeHTTP(w, r)
	})
}

package server

import (
	"fmt"
	"log"
	"net/http"
	"time"
)

// Timeouts are the deadlines a [Server] gives its clients, so that slow or
// idle ones cannot hold connections forever. A zero duration is no bound,
// but for ReadHeader: with ReadHeader zero the headers are bounded by
// Read, as net/http does. The package documentation says how they add up
// into the connection's deadlines.
type Timeouts struct {
	// ReadHeader is how long a client may take to send a request's
	// headers.
	ReadHeader time.Duration
	// Read is how long a client may take to send a whole request, body
	// included.
	Read time.Duration
	// Write is how long a client may take to read an answer before the
	// server drops the connection. Zero: the server sets no write
	// deadline at all.
	Write time.Duration
	// Idle is how long a kept-alive connection may wait for its next
	// request.
	Idle time.Duration
	// Handler is the longest a handler waits before it answers: for the
	// plantstore API, the storage's timeout
	// ([github.com/plantstore/plantstore/sqlstore.WithTimeout]). It is part
	// of the write deadline.
	Handler time.Duration
}

// DefaultTimeouts are the plantstore binary's defaults, which a server
// given no [WithTimeouts] has: 10 s for the headers and for the whole
// request, 30 s for the client to read the answer, 2 minutes idle, and 5
// s for the handler, sqlstore's default timeout.
var DefaultTimeouts = Timeouts{
	ReadHeader: 10 * time.Second,
	Read:       10 * time.Second,
	Write:      30 * time.Second,
	Idle:       120 * time.Second,
	Handler:    5 * time.Second,
}

// DefaultMaxHeaderBytes is the limit on a request's line and headers to
// give both the handler (httpapi.WithMaxHeaderBytes) and [WithMaxHeaderBytes]:
// 64 KiB, the binary's. The server reads twice as much (see the package
// documentation).
const DefaultMaxHeaderBytes = 64 << 10

// DefaultShutdownTimeout is how long [Server.Serve] drains the requests in
// flight once its context ends, unless [WithShutdownTimeout] says
// otherwise.
const DefaultShutdownTimeout = 10 * time.Second

// metricsHeaderBytes bounds the headers of a request to the metrics
// listener, which serves scrapers and the operator only.
const metricsHeaderBytes = 64 << 10

// check returns an error naming the first negative duration of t.
func (t Timeouts) check() error {
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"ReadHeader", t.ReadHeader}, {"Read", t.Read}, {"Write", t.Write}, {"Idle", t.Idle}, {"Handler", t.Handler}} {
		if f.d < 0 {
			return fmt.Errorf("server: Timeouts.%s is negative: %v", f.name, f.d)
		}
	}
	return nil
}

// writeDeadline is the http.Server's WriteTimeout: Read + Handler + Write,
// or none when Write is zero. See the package documentation.
func (t Timeouts) writeDeadline() time.Duration {
	if t.Write == 0 {
		return 0
	}
	return t.Read + t.Handler + t.Write
}

// newHTTPServer returns the http.Server of one listener: the deadlines of
// t in net/http's terms, headers read to headerBytes, and net/http's own
// complaints to errorLog.
//
// A zero timeout is none: net/http then neither reads the clock for it nor
// moves a deadline timer per request. A build without the timeouts served
// 4-8 % more creates; the binary with all four at zero measured within the
// noise of its defaults (docs/performance.md). Zero is for servers behind
// a proxy that bounds its clients itself.
func newHTTPServer(h http.Handler, t Timeouts, headerBytes int, errorLog *log.Logger) *http.Server {
	idle := t.Idle
	if idle == 0 {
		idle = -1 // net/http's "none"; zero would mean Read
	}
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: t.ReadHeader,
		ReadTimeout:       t.Read,
		WriteTimeout:      t.writeDeadline(),
		IdleTimeout:       idle,
		MaxHeaderBytes:    headerBytes,
		ErrorLog:          errorLog,
	}
}

package httpapi

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"net/http"
)

// requestIDHeader is X-Request-Id in the canonical form net/http keys
// headers by.
const requestIDHeader = "X-Request-Id"

// maxRequestIDLen is the longest X-Request-Id the handler accepts from a
// client; a longer one is replaced.
const maxRequestIDLen = 128

// requestIDKey is the context key of a request's idContext.
type requestIDKey struct{}

// An idContext is a request's context with its id. It is one allocation
// where context.WithValue and the response header's value slice would be
// two, and it hands the context package the parent's Done channel as it
// is, so that contexts derived from it cancel without a goroutine.
type idContext struct {
	context.Context
	id string
	// hdr is the X-Request-Id value of the response, hdr[:].
	hdr [1]string
}

func (c *idContext) Value(key any) any {
	if key == (requestIDKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// RequestID returns the id of the request that ctx belongs to, or "" when
// ctx does not come from a request the handler is serving. The id is the
// request's X-Request-Id when that is 1 to 128 bytes of
// printable ASCII (0x21 to 0x7e), or else one the handler generated: 32
// lowercase hex digits, 128 random bits. Authenticators and storage
// receive that context, so they can log the id too.
func RequestID(ctx context.Context) string {
	if c, ok := ctx.Value(requestIDKey{}).(*idContext); ok {
		return c.id
	}
	return ""
}

// withRequestID gives r its id: it returns r with the id in its context,
// and sets the X-Request-Id header of the response, so that every answer,
// the router's 404 and 405 included, carries it.
func withRequestID(w http.ResponseWriter, r *http.Request) *http.Request {
	c := &idContext{Context: r.Context()}
	if v := r.Header[requestIDHeader]; len(v) == 1 && validRequestID(v[0]) {
		c.id = v[0]
	} else {
		c.id = newRequestID()
	}
	c.hdr[0] = c.id
	w.Header()[requestIDHeader] = c.hdr[:]
	return r.WithContext(c)
}

// validRequestID reports whether a client's X-Request-Id can be kept: 1 to
// maxRequestIDLen bytes, each printable ASCII and not a space, so that it
// is safe to echo in a header and to write in a log line.
func validRequestID(s string) bool {
	if len(s) == 0 || len(s) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// newRequestID returns 128 random bits as 32 lowercase hex digits, the form
// of a W3C trace id. The bits come from math/rand/v2's runtime source, a
// ChaCha8 generator seeded by the system per thread: an id needs to be
// unique, not secret, and this one costs no system call.
func newRequestID() string {
	const hex = "0123456789abcdef"
	var b [32]byte
	for half := range 2 {
		x := rand.Uint64()
		for i := range 16 {
			b[half*16+i] = hex[x&0xf]
			x >>= 4
		}
	}
	return string(b[:])
}

// requestIDAttr is the key of the request id in log lines.
const requestIDAttr = "request_id"

// idHandler adds the request id found in a record's context to the record,
// so that every line the handler logs while serving a request names it.
type idHandler struct{ slog.Handler }

func (h idHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestID(ctx); id != "" {
		r.AddAttrs(slog.String(requestIDAttr, id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h idHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return idHandler{h.Handler.WithAttrs(attrs)}
}

func (h idHandler) WithGroup(name string) slog.Handler {
	return idHandler{h.Handler.WithGroup(name)}
}

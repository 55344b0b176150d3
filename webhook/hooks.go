package webhook

import (
	"context"
	"net/http"
)

// Hooks are told what a [Dispatcher] does, so that a caller can trace it
// (package oteltrace does, for OpenTelemetry). The Dispatcher calls the
// funcs that are not nil, on the goroutine of the attempt; they must be
// safe for concurrent use, and quick. With no Hooks the Dispatcher does
// none of this work.
type Hooks struct {
	// Attempt is called before each delivery attempt, with the attempt's
	// context, what is attempted, and the header of its request, which it
	// may add to: a tracer adds traceparent. The signature covers the
	// body, the webhook-id and the timestamp, not the header. The attempt
	// goes on with the context Attempt returns, which must not be nil,
	// and end, unless nil, is called once the attempt is over, with the
	// response's status (0 when none came) and the attempt's error (nil
	// for a 2xx).
	Attempt func(ctx context.Context, a Attempt, header http.Header) (_ context.Context, end func(status int, err error))
}

// An Attempt is one POST of an event to a subscriber, for [Hooks].
type Attempt struct {
	// Subscriber is the subscriber's index in the list given to [New],
	// and Origin its URL's scheme and host: no path, no credentials.
	Subscriber int
	Origin     string
	// MessageID is the webhook-id, the same for every attempt of the
	// event, and PlantID the id of the plant it announces.
	MessageID string
	PlantID   int64
	// Number counts the attempts of this delivery, this one included, as
	// far as the outbox knows: 1 for the first.
	Number int
}

// WithHooks makes the Dispatcher call h. Several WithHooks add up, as
// [net/http/httptrace.WithClientTrace] does: each Attempt is called in the
// order the sets were given, with the context the one before it returned
// and the same header, and their ends in the reverse order, the last
// set's first, as spans nested that way end. A single set is called as it
// is, at no cost over that set alone.
func WithHooks(h Hooks) Option {
	return func(cfg *config) { cfg.hooks = cfg.hooks.join(h) }
}

// join returns hooks that call h's, then next's.
func (h Hooks) join(next Hooks) Hooks {
	if h.Attempt == nil {
		return next
	}
	if next.Attempt == nil {
		return h
	}
	first, second := h.Attempt, next.Attempt
	return Hooks{Attempt: func(ctx context.Context, a Attempt, header http.Header) (context.Context, func(int, error)) {
		ctx1, end1 := first(ctx, a, header)
		if ctx1 == nil {
			ctx1 = ctx
		}
		ctx2, end2 := second(ctx1, a, header)
		if ctx2 == nil {
			ctx2 = ctx1
		}
		switch {
		case end1 == nil:
			return ctx2, end2
		case end2 == nil:
			return ctx2, end1
		}
		return ctx2, func(status int, err error) {
			end2(status, err)
			end1(status, err)
		}
	}}
}

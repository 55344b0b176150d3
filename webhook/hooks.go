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

// WithHooks makes the Dispatcher call h. Later WithHooks replace earlier.
func WithHooks(h Hooks) Option {
	return func(cfg *config) { cfg.hooks = h }
}

package plantstore

import (
	"context"
	"time"
)

// An Event records that a plant was added, for delivery to webhook
// subscribers.
type Event struct {
	// Seq orders events and identifies one within its Outbox. It only grows.
	Seq   int64
	Plant Plant
	// Time is when the plant was created.
	Time time.Time
}

// An Outbox keeps events waiting for delivery. A durable storage that
// implements it records the event in the same transaction as the plant, so
// that an acknowledged create is delivered even if the process dies right
// after acknowledging it.
type Outbox interface {
	// PendingEvents returns at most limit events with Seq greater than
	// after, in ascending Seq order, or an empty slice.
	PendingEvents(ctx context.Context, after int64, limit int) ([]Event, error)

	// DeleteEvent removes the event with seq once it is delivered or
	// abandoned. Removing an event that is gone is not an error.
	DeleteEvent(ctx context.Context, seq int64) error
}

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

// A Delivery is one event on its way to one subscriber, as an
// [Outbox.Claim] returns it.
type Delivery struct {
	Event
	// Attempts counts the failed attempts recorded by [Outbox.Retry].
	Attempts int
}

// A Retry postpones one claimed delivery after a failed attempt.
type Retry struct {
	Seq int64
	// Attempts counts the failed attempts so far, the last one included.
	Attempts int
	// Due is when the delivery may be claimed again.
	Due time.Time
}

// An Outbox keeps events waiting for delivery to webhook subscribers, and
// the state of each (event, subscriber) delivery. A durable storage that
// implements it records the event in the same transaction as the plant, so
// that an acknowledged create is delivered even if the process dies right
// after acknowledging it, and keeps the delivery state in the same
// database, so that several processes can share one outbox.
//
// Subscribers are named by keys the caller chooses (a stable function of
// the subscriber's URL). Every process sharing an Outbox must fan out to
// the same set of subscribers.
//
// A delivery is claimed with a lease: until the lease expires, no other
// owner can claim it, so that with every owner alive each delivery is
// made once; once it expires, any owner may claim it again, so that a
// delivery whose owner died is still made: at least once. Owners are
// never shared by two live processes; an [OutboxRuns] may end the leases
// of an owner known gone before they expire. A delivery ends
// with [Outbox.Ack]; an event is removed once every subscriber's delivery
// of it has ended.
//
// Implementations are safe for concurrent use. Errors are those of the
// storage: an error wrapping [ErrUnavailable] when it cannot be reached,
// the context's error, or another failure, wrapped.
type Outbox interface {
	// FanOut creates a delivery to each of subscribers, due now, for each
	// of the oldest events that have none yet, at most limit events, and
	// returns how many events it fanned out. Each event is fanned out
	// once, in ascending Seq order among the events visible together: an
	// event recorded by a transaction that commits late may follow events
	// of a greater Seq.
	FanOut(ctx context.Context, subscribers []string, limit int) (int, error)

	// Claim leases to owner, until until, at most limit deliveries to
	// subscriber that are due and whose lease, if any, has expired, and
	// returns them in ascending Seq order, or an empty slice. A delivery
	// whose event is gone is ended instead of returned.
	Claim(ctx context.Context, subscriber, owner string, until time.Time, limit int) ([]Delivery, error)

	// Extend moves the lease of the deliveries seqs to subscriber to until,
	// for those that owner still holds, and returns their Seqs. A delivery
	// missing from the result was ended, claimed by another owner after
	// owner's lease expired, or taken back from a run taken for gone (see
	// [OutboxRuns]): owner must not attempt it again.
	Extend(ctx context.Context, subscriber, owner string, seqs []int64, until time.Time) ([]int64, error)

	// Retry records failed attempts of deliveries to subscriber that owner
	// holds, and releases them until their Due time. Deliveries owner no
	// longer holds are left as they are.
	Retry(ctx context.Context, subscriber, owner string, retries []Retry) error

	// Ack ends the deliveries seqs to subscriber, delivered or abandoned,
	// whoever holds them, and removes the events whose deliveries have all
	// ended. Ending a delivery that has ended is not an error.
	Ack(ctx context.Context, subscriber string, seqs []int64) error

	// Depth returns the number of events not yet ended for every
	// subscriber, fanned out or not.
	Depth(ctx context.Context) (int, error)
}

// An OutboxRuns is an [Outbox] that keeps a record of each run of the
// Dispatchers sharing it while the run lives, so that an instance
// restarted after a crash or kill -9 takes back what its previous run
// held as soon as that run is known gone, instead of waiting for the
// leases to expire.
//
// A run is the life of one Dispatcher, named by the lease owner it claims
// under, which no other run shares. It belongs to an instance: a name that
// stays the same across the restarts of one process (cmd/plantstore uses
// its host name and address), and that several live runs may share, as two
// containers of one service with one host name, both listening on
// [::]:8080, do. A live run renews its record; a record not renewed for
// its time to live is that of a run that is gone. Times to live are
// counted by the storage's clock, so that the clocks of the processes
// sharing it need not agree.
type OutboxRuns interface {
	// Beat records that run owner of instance lives, for ttl from now,
	// and reports whether the record was there already: false at a run's
	// first beat, and after TakeBack found the run gone.
	Beat(ctx context.Context, instance, owner string, ttl time.Duration) (renewed bool, err error)

	// TakeBack ends the leases held by the other runs of instance whose
	// record has expired, which any owner may then claim when they are
	// due, and removes their records. It returns how many leases it ended,
	// and how many other runs of instance it left recorded: live ones,
	// which TakeBack never touches, or gone ones whose record has not
	// expired yet. A run's own leases and records are never taken back,
	// nor those of another instance's runs.
	TakeBack(ctx context.Context, instance, owner string) (released, others int, err error)

	// EndRun ends the leases run owner still holds, as a run that stops
	// hands back what it holds, or for a run known to be gone, and removes
	// its record. It returns how many leases it ended.
	EndRun(ctx context.Context, owner string) (released int, err error)
}

package webhook

import (
	"context"
	"errors"
	"log/slog"

	"github.com/plantstore/plantstore"
)

// errNoEvents is Start's error for a durable storage that records no
// events: a sqlstore.Store opened without sqlstore.WithOutbox.
var errNoEvents = errors.New("webhook: the storage records no events: open it with its outbox (sqlstore.WithOutbox)")

// An eventRecorder is a storage that is a [plantstore.Outbox] and records
// events only when told to, as a sqlstore.Store does when opened with
// sqlstore.WithOutbox.
type eventRecorder interface {
	RecordsEvents() bool
}

// WithMemoryOutbox configures the [MemoryOutbox] that [Start] makes for a
// storage that is no [plantstore.Outbox]: its bounds ([WithMaxPending],
// [WithMaxPendingBytes]) and where its drops are logged, by default the
// Dispatcher's logger ([WithLogger]). [New] ignores it.
func WithMemoryOutbox(opts ...MemoryOption) Option {
	return func(cfg *config) { cfg.memory = append(cfg.memory, opts...) }
}

// Start starts delivering the plant-added events of storage to
// subscribers, signed with secret, as the cmd/plantstore binary does. It
// returns the running Dispatcher, and the options that the PlantStore over
// storage needs ([plantstore.New]'s), which add the events to the outbox
// where storage does not and wake the Dispatcher at each create:
//
//	d, psOpts, err := webhook.Start(ctx, store, urls, secret, webhook.WithLogger(logger))
//	ps := plantstore.New(store, psOpts...)
//	… // serve, then drain the requests
//	d.Stop()
//	store.Close()
//
// The outbox is chosen by storage. A storage that is a
// [plantstore.Outbox], such as a sqlstore.Store opened with
// sqlstore.WithOutbox, is the outbox: it records each event in the
// plant's own transaction, so that an acknowledged create is delivered
// even if the process dies right after it, and it keeps the state of the
// deliveries, which every process on the same database shares by lease.
// Its bound is its own (sqlstore.WithOutboxMaxPending). Any other storage
// gets a [MemoryOutbox], which loses what is pending when the process
// ends, bounded as [WithMemoryOutbox] says, by default to
// [DefaultMaxPending] events and [DefaultMaxPendingBytes] bytes. Start
// logs at info level "delivering plant-added webhooks", with the number
// of subscribers and whether the outbox is durable.
//
// Delivery runs until ctx ends or [Dispatcher.Stop] is called. The events
// of requests still served after ctx ends wait for the next run, or, in
// a MemoryOutbox, are lost: to deliver those of requests drained at
// shutdown, give a ctx that outlives the drain and call Stop after it.
//
// Errors: those of [New]; an error when storage is an outbox that records
// no events (a sqlstore.Store opened without sqlstore.WithOutbox), which
// would deliver nothing.
func Start(ctx context.Context, storage plantstore.Storage, subscribers []string, secret []byte, opts ...Option) (*Dispatcher, []plantstore.Option, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	var psOpts []plantstore.Option
	source, durable := storage.(plantstore.Outbox)
	if r, ok := storage.(eventRecorder); durable && ok && !r.RecordsEvents() {
		return nil, nil, errNoEvents
	}
	if !durable {
		mopts := cfg.memory
		if cfg.logger != nil {
			mopts = append([]MemoryOption{WithDropLogger(cfg.logger)}, mopts...)
		}
		mo := NewMemoryOutbox(mopts...)
		psOpts = append(psOpts, plantstore.OnCreate(mo.Add))
		source = mo
	}
	d, err := New(source, subscribers, secret, opts...)
	if err != nil {
		return nil, nil, err
	}
	ctx, err = d.begin(ctx)
	if err != nil {
		return nil, nil, err // not reached: d is new
	}
	go d.run(ctx)
	d.log.LogAttrs(ctx, slog.LevelInfo, "delivering plant-added webhooks",
		slog.Int("subscribers", len(subscribers)), slog.Bool("durable", durable))
	return d, append(psOpts, plantstore.OnCreate(func(plantstore.Plant) { d.Notify() })), nil
}

// Package webhook delivers "plant added" events to HTTP subscribers, signed
// the Standard Webhooks way and delivered at least once.
//
// A [Dispatcher] reads events from a [plantstore.Outbox] and POSTs each one
// to every subscriber. The outbox is either a [MemoryOutbox], fed by
// [plantstore.OnCreate], or a durable storage that records the event in the
// same transaction as the plant:
//
//	mo := webhook.NewMemoryOutbox()
//	d, err := webhook.New(mo, urls, secret, webhook.WithLogger(logger))
//	ps := plantstore.New(storage,
//		plantstore.OnCreate(mo.Add),
//		plantstore.OnCreate(func(plantstore.Plant) { d.Notify() }))
//	go d.Run(ctx)
//
// Dispatchers in several processes may share one durable outbox, such as
// a [github.com/plantstore/plantstore/sqlstore.Store] on one database:
// they split its deliveries by claiming them with a lease, so that each
// event reaches each subscriber once while they all live, and at least
// once when one dies.
//
// Each delivery carries the headers webhook-id, webhook-timestamp and
// webhook-signature. Receivers check them with [Verify] and drop
// deliveries whose webhook-id they have already handled, since an event may
// arrive more than once.
//
// [Verify] returns [ErrMissingHeader], [ErrTimestamp] or [ErrSignature],
// checked with [errors.Is]; [New], [Sign] and [Verify] return [ErrSecret]
// for a secret they cannot use.
package webhook

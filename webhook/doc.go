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
// [Start] does all of that, choosing the outbox by the storage: the
// storage itself when it is one, a bounded MemoryOutbox otherwise.
//
// Dispatchers in several processes may share one durable outbox, such as
// a [github.com/plantstore/plantstore/sqlstore.Store] on one database:
// they split its deliveries by claiming them with a lease, so that each
// event reaches each subscriber once while they all live, and at least
// once when one dies. Each run of a Dispatcher leases under an owner of
// its own; named for its instance ([WithInstance]), a restarted process
// takes back what its previous run held as soon as that run is known gone
// ([WithRunLock], [WithHeartbeat]), never what a live run of the same name
// holds.
//
// Each subscriber gets up to [DefaultConcurrency] attempts at once over
// kept-alive connections, in no promised order. The outbox is read and
// written in batches beside the attempts: one claim and one write of acks
// and retries in flight per subscriber, at least 10 ms apart while there
// is work, so that on SQLite, whose single writer the creates also need,
// deliveries keep up with creates at full load (see docs/performance.md).
//
// A subscriber that fails ten attempts in a row is taken as down: the
// Dispatcher hands back the deliveries waiting to be sent, lets the
// attempts in flight end, and sends one at a time, a probe, after a wait
// that doubles from the initial backoff up to 30 s; the first that
// succeeds resumes delivery. So a subscriber that is down for long costs
// neither a request nor a log line per event, and does not slow creates.
// Its events wait in the outbox, however long it is away: a failure that
// finds the subscriber down never abandons an event, whatever its age
// ([WithMaxAge] counts only the failures of a subscriber that is up). The
// outbox's bound is the only limit: a durable storage keeps it unbounded
// unless told otherwise (sqlstore.WithOutboxMaxPending), and a
// [MemoryOutbox] bounds it ([WithMaxPending]); events past a bound are
// dropped undelivered, counted and logged. Both states show in
// [Dispatcher.Stats] and [Dispatcher.Depth] (which package promstats
// exports as plantstore_webhook_subscribers_down,
// plantstore_webhook_dropped_total and plantstore_webhook_outbox_depth)
// and in a log line every [DefaultStatsInterval] with the outbox depth
// and the delivery rate.
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

package sqlstore

// RecordsEvents reports whether the Store records an event for every
// Create, as it does when opened [WithOutbox]: a Store is always a
// [plantstore.Outbox], but one opened without the option has no events to
// give, and a webhook dispatcher that took it for its outbox would deliver
// nothing. webhook.Start asks, and refuses such a Store.
func (s *Store) RecordsEvents() bool { return s.cfg.outbox }

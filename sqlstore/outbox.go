package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"github.com/plantstore/plantstore"
)

// PendingEvents implements [plantstore.Outbox]. Events are recorded only by
// a Store opened [WithOutbox]; seq numbers are never reused, and an event
// becomes visible only after every event with a lower seq.
//
// Errors: [plantstore.ErrUnavailable], the context's error, or another
// failure, wrapped.
func (s *Store) PendingEvents(ctx context.Context, after int64, limit int) (_ []plantstore.Event, err error) {
	defer s.m.done(opReadEvents, s.m.start(), &err)
	if limit <= 0 {
		return []plantstore.Event{}, nil
	}
	rows, err := s.db.QueryContext(ctx, s.q.pendingEvents, after, limit)
	if err != nil {
		return nil, failure(ctx, "read events", err)
	}
	defer rows.Close()
	events := []plantstore.Event{}
	for rows.Next() {
		var (
			e       plantstore.Event
			tag     sql.NullString
			created int64
		)
		if err := rows.Scan(&e.Seq, &e.Plant.ID, &e.Plant.Name, &tag, &created); err != nil {
			return nil, failure(ctx, "read events", err)
		}
		e.Plant.Tag, e.Plant.HasTag = tag.String, tag.Valid
		e.Time = time.UnixMicro(created).UTC()
		events = append(events, e)
	}
	if err := rows.Err(); err != nil {
		return nil, failure(ctx, "read events", err)
	}
	return events, nil
}

// DeleteEvent implements [plantstore.Outbox]. Deleting an event that is
// gone is not an error.
//
// Errors: [plantstore.ErrUnavailable], the context's error, or another
// failure, wrapped.
func (s *Store) DeleteEvent(ctx context.Context, seq int64) (err error) {
	defer s.m.done(opDeleteEvent, s.m.start(), &err)
	if err := s.lockWrites(ctx); err != nil {
		return err
	}
	defer s.unlockWrites()
	if _, err := s.db.ExecContext(ctx, s.q.deleteEvent, seq); err != nil {
		return failure(ctx, "delete event", err)
	}
	return nil
}

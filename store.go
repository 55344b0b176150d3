package plantstore

import "context"

// Storage keeps plants. It is the contract every backend meets:
// package memstore, package sqlstore, and any a user writes.
// Package storagetest checks an implementation against it.
//
// Every method must be safe for concurrent use, must honour ctx (return
// promptly with ctx.Err(), possibly wrapped, once ctx is done, having
// changed nothing), and must keep Name, Tag and HasTag exactly as given.
// Storage failures other than the sentinels below are returned wrapped;
// failures to reach the backend wrap [ErrUnavailable], which promises that
// nothing of the call was kept. A Create or Delete whose commit may have
// taken effect, when that cannot be learned, returns an error wrapping
// [ErrOutcomeUnknown] instead.
type Storage interface {
	// Create stores p. Before Create returns nil, the plant must be kept as
	// durably as the storage promises: a later Plant, List or Create sees
	// it. It returns an error wrapping ErrConflict when a plant with p.ID is
	// already stored, and then changes nothing; among concurrent Creates of
	// one id exactly one succeeds. p has passed [NewPlant.Validate].
	Create(ctx context.Context, p Plant) error

	// Plant returns the plant stored under id, or an error wrapping
	// ErrNotFound.
	Plant(ctx context.Context, id int64) (Plant, error)

	// List returns at most limit plants whose ids are at least from, in
	// ascending id order. limit is between 1 and MaxListLimit. The cost
	// of a call grows with limit, not with the number of plants stored. It
	// returns an empty, non-nil slice when there are none.
	List(ctx context.Context, from int64, limit int) ([]Plant, error)

	// Delete removes the plant stored under id, or returns an error
	// wrapping ErrNotFound. Once it returns nil, Create may store the id
	// again.
	Delete(ctx context.Context, id int64) error
}

// A Pinger is a [Storage] that can tell whether its backend is reachable.
// Storage that does not implement it is taken to be always reachable.
type Pinger interface {
	// Ping returns nil when the storage can serve requests, or an error
	// wrapping ErrUnavailable.
	Ping(ctx context.Context) error
}

// Ping reports whether ps's storage can serve requests.
//
// Errors: an error wrapping [ErrUnavailable] when it cannot.
func (ps *PlantStore) Ping(ctx context.Context) error {
	if p, ok := ps.storage.(Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

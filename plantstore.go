package plantstore

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"
)

// A Plant is a plant as stored.
//
// Tag is optional: HasTag reports whether the plant has one, so that a plant
// created without a tag is told apart from one created with an empty tag.
type Plant struct {
	ID     int64
	Name   string
	Tag    string
	HasTag bool
}

// A NewPlant is the input of [PlantStore.Create]. Its fields mean what
// they mean in [Plant].
type NewPlant struct {
	ID     int64
	Name   string
	Tag    string
	HasTag bool
}

// Validate reports whether np can be stored exactly as given. It returns a
// [*ValidationError] naming the first field that cannot: name and tag must
// be valid UTF-8 without NUL characters, which no durable storage keeps
// unchanged.
func (np NewPlant) Validate() error {
	if reason := textProblem(np.Name); reason != "" {
		return &ValidationError{Field: "name", Reason: reason}
	}
	if np.HasTag {
		if reason := textProblem(np.Tag); reason != "" {
			return &ValidationError{Field: "tag", Reason: reason}
		}
	} else if np.Tag != "" {
		return &ValidationError{Field: "tag", Reason: "set without HasTag"}
	}
	return nil
}

func textProblem(s string) string {
	if !utf8.ValidString(s) {
		return "must be valid UTF-8"
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "must not contain NUL (U+0000)"
	}
	return ""
}

// DefaultListLimit and MaxListLimit bound the plants one [PlantStore.List]
// call returns.
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

// ListOptions selects a page of plants for [PlantStore.List].
type ListOptions struct {
	// Limit caps the number of plants returned. Zero means
	// DefaultListLimit; it must not be negative or over MaxListLimit.
	Limit int

	// After, when HasAfter is set, makes the page start at the first id
	// greater than After: pass the last id of a page to get the next.
	After    int64
	HasAfter bool
}

// A PlantStore validates plants and keeps them in a [Storage]. It is safe
// for concurrent use as far as its Storage is.
type PlantStore struct {
	storage  Storage
	onCreate []func(Plant)
	// failingSince is when writes started failing, in Unix nanoseconds,
	// while the latest Create or Delete the storage failed, as opposed to
	// succeeded, and zero otherwise; see Ready.
	failingSince atomic.Int64
	// writeFailures counts the failed writes, so that a probe that
	// succeeds while another write fails does not clear failingSince.
	writeFailures atomic.Uint64
}

// An Option configures a PlantStore.
type Option func(*PlantStore)

// OnCreate makes Create call f with each plant it has stored, after storing
// it and before returning. f must be safe for concurrent use and must not
// block: it runs on the caller's goroutine.
func OnCreate(f func(Plant)) Option {
	return func(ps *PlantStore) { ps.onCreate = append(ps.onCreate, f) }
}

// New returns a PlantStore that keeps its plants in s.
func New(s Storage, opts ...Option) *PlantStore {
	ps := &PlantStore{storage: s}
	for _, o := range opts {
		o(ps)
	}
	return ps
}

// Create validates np and stores it, returning the stored plant.
//
// Errors: a [*ValidationError] when np cannot be stored as given;
// [ErrConflict] when its id is taken; [ErrUnavailable] when the storage
// cannot be reached; [ErrOutcomeUnknown], wrapped, when the storage lost
// contact during the commit and the plant may or may not be stored; the
// context's error when ctx ends first; any other storage failure, wrapped.
// On any error but ErrOutcomeUnknown nothing is stored.
func (ps *PlantStore) Create(ctx context.Context, np NewPlant) (Plant, error) {
	if err := np.Validate(); err != nil {
		return Plant{}, err
	}
	p := Plant(np)
	if err := ps.storage.Create(ctx, p); err != nil {
		ps.noteWrite(err)
		return Plant{}, storageError("create", np.ID, err)
	}
	ps.noteWrite(nil)
	for _, f := range ps.onCreate {
		f(p)
	}
	return p, nil
}

// Plant returns the plant stored under id.
//
// Errors: [ErrNotFound] when no plant has that id; [ErrUnavailable], the
// context's error, or another storage failure, wrapped.
func (ps *PlantStore) Plant(ctx context.Context, id int64) (Plant, error) {
	p, err := ps.storage.Plant(ctx, id)
	if err != nil {
		return Plant{}, storageError("read", id, err)
	}
	return p, nil
}

// List returns a page of stored plants in ascending id order.
//
// Errors: a [*ValidationError] for field "limit" when opts.Limit is
// negative or over [MaxListLimit]; [ErrUnavailable], the context's error, or
// another storage failure, wrapped.
func (ps *PlantStore) List(ctx context.Context, opts ListOptions) ([]Plant, error) {
	limit := opts.Limit
	switch {
	case limit == 0:
		limit = DefaultListLimit
	case limit < 0:
		return nil, &ValidationError{Field: "limit", Reason: "must be positive"}
	case limit > MaxListLimit:
		return nil, &ValidationError{Field: "limit", Reason: fmt.Sprintf("must be at most %d", MaxListLimit)}
	}
	from := int64(-1 << 63)
	if opts.HasAfter {
		if opts.After == 1<<63-1 {
			return []Plant{}, nil
		}
		from = opts.After + 1
	}
	plants, err := ps.storage.List(ctx, from, limit)
	if err != nil {
		return nil, storageError(listOp, 0, err)
	}
	return plants, nil
}

// Delete removes the plant stored under id. Its id may then be created again.
//
// Errors: [ErrNotFound] when no plant has that id; [ErrOutcomeUnknown],
// wrapped, when the plant may or may not have been deleted;
// [ErrUnavailable], the context's error, or another storage failure,
// wrapped.
func (ps *PlantStore) Delete(ctx context.Context, id int64) error {
	err := ps.storage.Delete(ctx, id)
	ps.noteWrite(err)
	if err != nil {
		return storageError("delete", id, err)
	}
	return nil
}

// storageError wraps a storage failure with the operation it broke and
// the plant's id, which [listOp] has none of. The sentinels stay reachable
// through errors.Is; bare ErrConflict and ErrNotFound, which the caller
// expects and whose id it knows, are returned as they are, so that
// answering them costs nothing.
func storageError(op string, id int64, err error) error {
	if err == ErrConflict || err == ErrNotFound {
		return err
	}
	return &opError{op: op, id: id, err: err}
}

// listOp is the operation of List, which names no plant.
const listOp = "list"

// An opError is a storage failure of one operation on one plant, or of a
// List. Its message is built only when asked for, so that wrapping a
// failure costs a single allocation.
type opError struct {
	op  string
	id  int64
	err error
}

func (e *opError) Error() string {
	if e.op == listOp {
		return "plantstore: list plants: " + e.err.Error()
	}
	return "plantstore: " + e.op + " plant " + strconv.FormatInt(e.id, 10) + ": " + e.err.Error()
}

func (e *opError) Unwrap() error { return e.err }

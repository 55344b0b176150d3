package plantstore

import "errors"

var (
	// ErrConflict reports that a plant with the same id is already stored.
	ErrConflict = errors.New("plantstore: plant id already taken")

	// ErrNotFound reports that no plant with the requested id is stored.
	ErrNotFound = errors.New("plantstore: plant not found")

	// ErrUnavailable reports that the storage could not be reached or failed
	// before it could answer. The operation may be retried; nothing of it
	// was kept. Storage implementations wrap their connection failures with
	// it.
	ErrUnavailable = errors.New("plantstore: storage unavailable")

	// ErrOutcomeUnknown reports that the storage lost contact while a
	// change was being committed, and could not learn afterwards whether
	// the commit took effect: the plant may or may not have been stored
	// (or deleted). A retried Create may then return ErrConflict, a
	// retried Delete ErrNotFound; read the plant to find out.
	ErrOutcomeUnknown = errors.New("plantstore: outcome unknown")
)

// A ValidationError reports that an input field was rejected. Nothing is
// stored when Create returns one.
type ValidationError struct {
	Field  string // the field's name in the contract: "id", "name" or "tag"; "limit" from List
	Reason string // why it was rejected, a lowercase phrase
}

func (e *ValidationError) Error() string {
	return "plantstore: invalid " + e.Field + ": " + e.Reason
}

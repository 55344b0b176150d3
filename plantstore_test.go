package plantstore_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
)

// fakeStorage records the calls a PlantStore makes and answers each with
// err, so that a row can tell which rules the PlantStore applies itself
// and what it makes of the storage's answer.
type fakeStorage struct {
	mu    sync.Mutex
	calls []call
	// err is what every method returns when it is set.
	err error
	// page is what List returns when err is not set.
	page []plantstore.Plant
}

// A call is one call of a fakeStorage method, with the arguments that
// method takes; the others are zero.
type call struct {
	Op    string
	Plant plantstore.Plant
	ID    int64
	From  int64
	Limit int
}

var _ plantstore.Storage = (*fakeStorage)(nil)

func (s *fakeStorage) record(c call) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
	return s.err
}

func (s *fakeStorage) Create(ctx context.Context, p plantstore.Plant) error {
	return s.record(call{Op: "create", Plant: p})
}

func (s *fakeStorage) Plant(ctx context.Context, id int64) (plantstore.Plant, error) {
	if err := s.record(call{Op: "plant", ID: id}); err != nil {
		return plantstore.Plant{}, err
	}
	return plantstore.Plant{ID: id, Name: "stored"}, nil
}

func (s *fakeStorage) List(ctx context.Context, from int64, limit int) ([]plantstore.Plant, error) {
	if err := s.record(call{Op: "list", From: from, Limit: limit}); err != nil {
		return nil, err
	}
	if s.page == nil {
		return []plantstore.Plant{}, nil
	}
	return s.page, nil
}

func (s *fakeStorage) Delete(ctx context.Context, id int64) error {
	return s.record(call{Op: "delete", ID: id})
}

func (s *fakeStorage) Calls() []call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// validationError returns err's *ValidationError, or nil when it has none.
func validationError(err error) *plantstore.ValidationError {
	ve, _ := errors.AsType[*plantstore.ValidationError](err)
	return ve
}

// Reasons of a [*plantstore.ValidationError].
const (
	badUTF8 = "must be valid UTF-8"
	hasNUL  = "must not contain NUL (U+0000)"
)

// invalid returns the *ValidationError of field for reason.
func invalid(field, reason string) *plantstore.ValidationError {
	return &plantstore.ValidationError{Field: field, Reason: reason}
}

func TestCreateValidates(t *testing.T) {
	type np = plantstore.NewPlant
	tests := []struct {
		name    string
		input   np
		wantErr *plantstore.ValidationError
		reason  string
	}{
		{name: "no tag", input: np{ID: 1, Name: "Monstera"}},
		{name: "tag", input: np{ID: 1, Name: "Aloe", Tag: "succulent", HasTag: true}},
		{name: "empty tag", input: np{ID: 1, Name: "Fern", HasTag: true},
			reason: "an empty tag is a tag, told apart from none by HasTag"},
		{name: "empty name", input: np{ID: 1}, reason: "the contract sets no minimum length"},
		{name: "extreme ids", input: np{ID: math.MinInt64, Name: "min"}, reason: "every int64 is an id"},
		{name: "control characters but NUL", input: np{ID: 1, Name: "tab\tline\n\x01\x7f", Tag: "\u2028", HasTag: true},
			reason: "only NUL is refused: durable storage keeps the others"},
		{name: "replacement character", input: np{ID: 1, Name: "\uFFFD"},
			reason: "U+FFFD itself is valid UTF-8; only invalid bytes are refused"},

		{name: "name not UTF-8", input: np{ID: 1, Name: "caf\xe9"}, wantErr: invalid("name", badUTF8)},
		{name: "name with a surrogate", input: np{ID: 1, Name: "\xed\xa0\x80"}, wantErr: invalid("name", badUTF8),
			reason: "UTF-8 excludes encoded surrogates, which JSON's \\ud800 would otherwise let through"},
		{name: "name with NUL", input: np{ID: 1, Name: "a\x00b"}, wantErr: invalid("name", hasNUL)},
		{name: "tag not UTF-8", input: np{ID: 1, Name: "ok", Tag: "\xff", HasTag: true}, wantErr: invalid("tag", badUTF8)},
		{name: "tag with NUL", input: np{ID: 1, Name: "ok", Tag: "\x00", HasTag: true}, wantErr: invalid("tag", hasNUL)},
		{name: "both bad", input: np{ID: 1, Name: "\x00", Tag: "\xff", HasTag: true}, wantErr: invalid("name", hasNUL),
			reason: "the first field that cannot be stored is named, name before tag"},

		{name: "tag without HasTag", input: np{ID: 1, Name: "ok", Tag: "indoor"}, wantErr: invalid("tag", "set without HasTag"),
			reason: "storing it would drop the tag or invent HasTag: neither keeps the input as given"},
		{name: "bad tag without HasTag", input: np{ID: 1, Name: "ok", Tag: "\x00"}, wantErr: invalid("tag", "set without HasTag"),
			reason: "a tag that is not there is not checked for its text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.wantErr, validationError(tt.input.Validate())); diff != "" {
				t.Errorf("Validate() error mismatch (-want +got):\n%s%s", diff, tt.reason)
			}

			fs := &fakeStorage{}
			got, err := plantstore.New(fs).Create(context.Background(), tt.input)
			if diff := cmp.Diff(tt.wantErr, validationError(err)); diff != "" {
				t.Errorf("Create() error mismatch (-want +got):\n%s%s", diff, tt.reason)
			}
			var want plantstore.Plant
			var wantCalls []call
			if tt.wantErr == nil {
				if err != nil {
					t.Errorf("Create() = %v, want nil", err)
				}
				want = plantstore.Plant(tt.input)
				wantCalls = []call{{Op: "create", Plant: want}}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Create() plant mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantCalls, fs.Calls()); diff != "" {
				t.Errorf("storage calls mismatch (-want +got):\n%s%s", diff, tt.reason)
			}
		})
	}
}

func TestListOptions(t *testing.T) {
	type lo = plantstore.ListOptions
	page := []plantstore.Plant{{ID: 3, Name: "three"}}
	// list is the storage's List call with from and limit.
	list := func(from int64, limit int) []call { return []call{{Op: "list", From: from, Limit: limit}} }
	positive := invalid("limit", "must be positive")
	atMost := invalid("limit", fmt.Sprintf("must be at most %d", plantstore.MaxListLimit))
	tests := []struct {
		name      string
		input     lo
		want      []plantstore.Plant
		wantCalls []call
		wantErr   *plantstore.ValidationError
		reason    string
	}{
		{name: "zero limit", input: lo{}, want: page, wantCalls: list(math.MinInt64, plantstore.DefaultListLimit),
			reason: "zero means DefaultListLimit"},
		{name: "limit 1", input: lo{Limit: 1}, want: page, wantCalls: list(math.MinInt64, 1)},
		{name: "limit at the maximum", input: lo{Limit: plantstore.MaxListLimit}, want: page,
			wantCalls: list(math.MinInt64, plantstore.MaxListLimit)},
		{name: "negative limit", input: lo{Limit: -1}, wantErr: positive},
		{name: "most negative limit", input: lo{Limit: math.MinInt}, wantErr: positive},
		{name: "oversize limit", input: lo{Limit: plantstore.MaxListLimit + 1}, wantErr: atMost},
		{name: "largest limit", input: lo{Limit: math.MaxInt}, wantErr: atMost},
		{name: "bad limit with the last cursor", input: lo{Limit: -1, After: math.MaxInt64, HasAfter: true}, wantErr: positive,
			reason: "the limit is checked even when the page is known to be empty"},

		{name: "after without HasAfter", input: lo{Limit: 10, After: 5}, want: page, wantCalls: list(math.MinInt64, 10),
			reason: "After means nothing unless HasAfter is set: the first page"},
		{name: "after zero", input: lo{Limit: 10, HasAfter: true}, want: page, wantCalls: list(1, 10),
			reason: "HasAfter tells a cursor of 0 from no cursor"},
		{name: "after a negative id", input: lo{Limit: 10, After: -1, HasAfter: true}, want: page, wantCalls: list(0, 10)},
		{name: "after the smallest id", input: lo{Limit: 10, After: math.MinInt64, HasAfter: true}, want: page,
			wantCalls: list(math.MinInt64+1, 10)},
		{name: "after the largest id", input: lo{Limit: 10, After: math.MaxInt64, HasAfter: true}, want: []plantstore.Plant{},
			reason: "no id follows it; After+1 would wrap around to the first page"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := &fakeStorage{page: page}
			got, err := plantstore.New(fs).List(context.Background(), tt.input)
			if diff := cmp.Diff(tt.wantErr, validationError(err)); diff != "" {
				t.Errorf("List() error mismatch (-want +got):\n%s%s", diff, tt.reason)
			}
			if tt.wantErr == nil && err != nil {
				t.Errorf("List() = %v, want nil", err)
			}
			if tt.want != nil && got == nil {
				t.Errorf("List() = nil, want a non-nil slice")
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("List() mismatch (-want +got):\n%s%s", diff, tt.reason)
			}
			if diff := cmp.Diff(tt.wantCalls, fs.Calls()); diff != "" {
				t.Errorf("storage calls mismatch (-want +got):\n%s%s", diff, tt.reason)
			}
		})
	}
}

func TestOnCreate(t *testing.T) {
	fern := plantstore.NewPlant{ID: 1, Name: "Fern", Tag: "", HasTag: true}
	tests := []struct {
		name     string
		storeErr error
		input    plantstore.NewPlant
		want     []string
		reason   string
	}{
		{name: "stored", input: fern, want: []string{"first 1", "second 1", "third 1"},
			reason: "hooks run in the order of their options, each once, before Create returns"},
		{name: "invalid", input: plantstore.NewPlant{ID: 1, Name: "\x00"}, reason: "nothing was stored"},
		{name: "conflict", input: fern, storeErr: plantstore.ErrConflict, reason: "nothing was stored"},
		{name: "unavailable", input: fern, storeErr: fmt.Errorf("dial: %w", plantstore.ErrUnavailable), reason: "nothing was stored"},
		{name: "outcome unknown", input: fern, storeErr: fmt.Errorf("commit: %w", plantstore.ErrOutcomeUnknown),
			reason: "the plant may not have been stored; a hook must only see plants that were"},
		{name: "canceled", input: fern, storeErr: context.Canceled, reason: "nothing was stored"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			var seen []plantstore.Plant
			hook := func(name string) plantstore.Option {
				return plantstore.OnCreate(func(p plantstore.Plant) {
					got = append(got, fmt.Sprint(name, " ", p.ID))
					seen = append(seen, p)
				})
			}
			fs := &fakeStorage{err: tt.storeErr}
			ps := plantstore.New(fs, hook("first"), hook("second"), hook("third"))
			_, err := ps.Create(context.Background(), tt.input)
			if (err == nil) != (tt.want != nil) {
				t.Fatalf("Create() = %v, want an error: %v", err, tt.want == nil)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("hooks run mismatch (-want +got):\n%s%s", diff, tt.reason)
			}
			for _, p := range seen {
				if diff := cmp.Diff(plantstore.Plant(tt.input), p); diff != "" {
					t.Errorf("plant a hook saw mismatch (-want +got):\n%s", diff)
				}
			}

			// Other operations never run the hooks.
			got = nil
			fs.err = nil
			ps.Plant(context.Background(), 1)
			ps.List(context.Background(), plantstore.ListOptions{})
			ps.Delete(context.Background(), 1)
			if got != nil {
				t.Errorf("hooks run by Plant, List or Delete: %q, want none", got)
			}
		})
	}
}

func TestStorageErrors(t *testing.T) {
	ctx := context.Background()
	do := func(ps *plantstore.PlantStore, op string) (err error) {
		switch op {
		case "create":
			_, err = ps.Create(ctx, plantstore.NewPlant{ID: 7, Name: "seven"})
		case "plant":
			_, err = ps.Plant(ctx, 7)
		case "list":
			_, err = ps.List(ctx, plantstore.ListOptions{})
		case "delete":
			err = ps.Delete(ctx, 7)
		}
		return err
	}
	cause := errors.New("disk on fire")
	tests := []struct {
		name     string
		op       string
		storeErr error
		// wantIs is the sentinel the error must match with errors.Is.
		wantIs error
		// wantBare is set when the storage's error must come back as it
		// is; otherwise it must come back wrapped once, so that
		// errors.Unwrap yields it.
		wantBare bool
		reason   string
	}{
		{name: "conflict", op: "create", storeErr: plantstore.ErrConflict, wantIs: plantstore.ErrConflict, wantBare: true,
			reason: "an expected answer whose id the caller knows costs no allocation"},
		{name: "not found", op: "plant", storeErr: plantstore.ErrNotFound, wantIs: plantstore.ErrNotFound, wantBare: true},
		{name: "delete not found", op: "delete", storeErr: plantstore.ErrNotFound, wantIs: plantstore.ErrNotFound, wantBare: true},
		{name: "conflict wrapped by the storage", op: "create", storeErr: fmt.Errorf("unique violation: %w", plantstore.ErrConflict), wantIs: plantstore.ErrConflict,
			reason: "only the bare sentinels are passed through; a storage's own wrapping keeps its cause and gains the operation"},
		{name: "not found wrapped by the storage", op: "delete", storeErr: fmt.Errorf("no row: %w", plantstore.ErrNotFound), wantIs: plantstore.ErrNotFound},

		{name: "create unavailable", op: "create", storeErr: plantstore.ErrUnavailable, wantIs: plantstore.ErrUnavailable},
		{name: "plant unavailable", op: "plant", storeErr: fmt.Errorf("dial: %w", plantstore.ErrUnavailable), wantIs: plantstore.ErrUnavailable},
		{name: "list unavailable", op: "list", storeErr: fmt.Errorf("dial: %w", plantstore.ErrUnavailable), wantIs: plantstore.ErrUnavailable},
		{name: "delete unavailable", op: "delete", storeErr: plantstore.ErrUnavailable, wantIs: plantstore.ErrUnavailable},
		{name: "create outcome unknown", op: "create", storeErr: fmt.Errorf("commit: %w", plantstore.ErrOutcomeUnknown), wantIs: plantstore.ErrOutcomeUnknown},
		{name: "delete outcome unknown", op: "delete", storeErr: plantstore.ErrOutcomeUnknown, wantIs: plantstore.ErrOutcomeUnknown},

		{name: "create other failure", op: "create", storeErr: cause, wantIs: cause},
		{name: "plant other failure", op: "plant", storeErr: cause, wantIs: cause},
		{name: "list other failure", op: "list", storeErr: cause, wantIs: cause},
		{name: "delete other failure", op: "delete", storeErr: cause, wantIs: cause},
		{name: "context ended", op: "list", storeErr: fmt.Errorf("query: %w", context.DeadlineExceeded), wantIs: context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := do(plantstore.New(&fakeStorage{err: tt.storeErr}), tt.op)
			if !errors.Is(err, tt.wantIs) {
				t.Errorf("%s error = %v, want one matching %v (%s)", tt.op, err, tt.wantIs, tt.reason)
			}
			if tt.wantBare {
				if err != tt.storeErr {
					t.Errorf("%s error = %#v, want the storage's %#v as it is (%s)", tt.op, err, tt.storeErr, tt.reason)
				}
				return
			}
			if got := errors.Unwrap(err); got != tt.storeErr {
				t.Errorf("%s error = %v, unwraps to %v, want it to wrap the storage's %v once (%s)", tt.op, err, got, tt.storeErr, tt.reason)
			}
			if validationError(err) != nil {
				t.Errorf("%s error = %v, a *ValidationError; the storage failed, not the input", tt.op, err)
			}
		})
	}
}

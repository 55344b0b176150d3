package peers

import (
	"crypto/subtle"
	"errors"
	"slices"
	"strings"
	"sync"
)

// ErrExists is Create's error for an id the Store holds.
var ErrExists = errors.New("a plant with this id exists")

// A Plant is what a Store holds for an id.
type Plant struct {
	ID   int64
	Name string
	Tag  *string
}

// A Store keeps plants in memory, as plantstore's memstore does: a map
// under one lock.
type Store struct {
	mu     sync.RWMutex
	plants map[int64]Plant
}

// NewStore returns an empty Store.
func NewStore() *Store { return &Store{plants: map[int64]Plant{}} }

// Create adds p, or returns ErrExists.
func (s *Store) Create(p Plant) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.plants[p.ID]; ok {
		return ErrExists
	}
	s.plants[p.ID] = p
	return nil
}

// Get returns the plant of id.
func (s *Store) Get(id int64) (Plant, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.plants[id]
	return p, ok
}

// Delete removes the plant of id and says whether there was one.
func (s *Store) Delete(id int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.plants[id]
	delete(s.plants, id)
	return ok
}

// List returns up to limit plants with ids above after, in id order.
func (s *Store) List(after int64, limit int) []Plant {
	s.mu.RLock()
	var ps []Plant
	for id, p := range s.plants {
		if id > after {
			ps = append(ps, p)
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(ps, func(a, b Plant) int { return int(min(max(a.ID-b.ID, -1), 1)) })
	return ps[:min(limit, len(ps))]
}

// Tokens are the bearer tokens a peer accepts.
type Tokens [][]byte

// ParseTokens splits PLANTSTORE_TOKENS' comma-separated list.
func ParseTokens(list string) Tokens {
	var ts Tokens
	for t := range strings.SplitSeq(list, ",") {
		if t = strings.TrimSpace(t); t != "" {
			ts = append(ts, []byte(t))
		}
	}
	return ts
}

// Valid says whether t is one of ts, in time independent of where they
// differ, as plantstore compares them.
func (ts Tokens) Valid(t string) bool {
	ok := 0
	for _, want := range ts {
		ok |= subtle.ConstantTimeCompare([]byte(t), want)
	}
	return ok == 1
}

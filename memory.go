package plantstore

import (
	"cmp"
	"context"
	"slices"
	"sync"
)

// MemoryStorage is a [Storage] that keeps plants in memory: they are lost
// when the process exits. The zero value is not usable; call
// [NewMemoryStorage].
type MemoryStorage struct {
	mu     sync.RWMutex
	plants map[int64]Plant
}

var _ Storage = (*MemoryStorage)(nil)

// NewMemoryStorage returns an empty MemoryStorage.
func NewMemoryStorage() *MemoryStorage {
	return &MemoryStorage{plants: make(map[int64]Plant)}
}

// Create implements [Storage.Create].
func (m *MemoryStorage) Create(ctx context.Context, p Plant) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.plants[p.ID]; ok {
		return ErrConflict
	}
	m.plants[p.ID] = p
	return nil
}

// Plant implements [Storage.Plant].
func (m *MemoryStorage) Plant(ctx context.Context, id int64) (Plant, error) {
	if err := ctx.Err(); err != nil {
		return Plant{}, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.plants[id]
	if !ok {
		return Plant{}, ErrNotFound
	}
	return p, nil
}

// List implements [Storage.List].
func (m *MemoryStorage) List(ctx context.Context, from int64, limit int) ([]Plant, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := []Plant{}
	for id, p := range m.plants {
		if id >= from {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b Plant) int { return cmp.Compare(a.ID, b.ID) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Delete implements [Storage.Delete].
func (m *MemoryStorage) Delete(ctx context.Context, id int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.plants[id]; !ok {
		return ErrNotFound
	}
	delete(m.plants, id)
	return nil
}

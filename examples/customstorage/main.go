// Command customstorage serves the Plant Store API over a Storage written
// for it: plants kept in a sorted slice. Any Storage that passes
// storagetest.Run can take its place.
//
//	PLANTSTORE_TOKENS=s3cret go run ./examples/customstorage
//
// It listens on 127.0.0.1:8082, or on $PLANTSTORE_ADDR, and stops cleanly
// on SIGINT or SIGTERM.
package main

import (
	"cmp"
	"context"
	"log"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/server"
)

// sliceStorage keeps plants sorted by id in a slice. It is simple, not
// fast: Create and Delete cost O(n).
type sliceStorage struct {
	mu     sync.Mutex
	plants []plantstore.Plant
}

var _ plantstore.Storage = (*sliceStorage)(nil)

func (s *sliceStorage) find(id int64) (int, bool) {
	return slices.BinarySearchFunc(s.plants, id, func(p plantstore.Plant, id int64) int {
		switch {
		case p.ID < id:
			return -1
		case p.ID > id:
			return 1
		}
		return 0
	})
}

func (s *sliceStorage) Create(ctx context.Context, p plantstore.Plant) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i, found := s.find(p.ID)
	if found {
		return plantstore.ErrConflict
	}
	s.plants = slices.Insert(s.plants, i, p)
	return nil
}

func (s *sliceStorage) Plant(ctx context.Context, id int64) (plantstore.Plant, error) {
	if err := ctx.Err(); err != nil {
		return plantstore.Plant{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i, found := s.find(id)
	if !found {
		return plantstore.Plant{}, plantstore.ErrNotFound
	}
	return s.plants[i], nil
}

func (s *sliceStorage) List(ctx context.Context, from int64, limit int) ([]plantstore.Plant, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i, _ := s.find(from)
	end := min(i+limit, len(s.plants))
	return append([]plantstore.Plant{}, s.plants[i:end]...), nil
}

func (s *sliceStorage) Delete(ctx context.Context, id int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i, found := s.find(id)
	if !found {
		return plantstore.ErrNotFound
	}
	s.plants = slices.Delete(s.plants, i, i+1)
	return nil
}

func main() {
	var tokens []string
	for t := range strings.SplitSeq(os.Getenv("PLANTSTORE_TOKENS"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			if err := httpapi.CheckToken(t); err != nil {
				log.Fatalf("PLANTSTORE_TOKENS: %v", err)
			}
			tokens = append(tokens, t)
		}
	}
	if len(tokens) == 0 {
		log.Fatal("set PLANTSTORE_TOKENS to the bearer tokens clients may send, comma-separated")
	}
	h := httpapi.New(plantstore.New(&sliceStorage{}), httpapi.WithTokens(tokens...))

	// Package server serves it as the plantstore binary serves its API:
	// the same client deadlines and header limit, and a drain on SIGTERM.
	srv, err := server.Listen(cmp.Or(os.Getenv("PLANTSTORE_ADDR"), "127.0.0.1:8082"))
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("listening on http://%s", srv.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := srv.Serve(ctx, h); err != nil {
		log.Fatal(err)
	}
	log.Println("stopped")
}

// Package plantstore implements the Plant Store: a store of plants, each
// identified by an int64 id, with a name and an optional tag.
//
// A [PlantStore] validates input and keeps plants in a pluggable [Storage]:
// package memstore keeps plants in memory, package sqlstore in SQLite or
// PostgreSQL. Package httpapi serves a PlantStore over HTTP as the Plant
// Store API.
//
//	ps := plantstore.New(memstore.New())
//	p, err := ps.Create(ctx, plantstore.NewPlant{ID: 1, Name: "Monstera"})
//
// Errors are typed. A [*ValidationError] (checked with [errors.As]) names the
// field that was rejected and why; [ErrConflict] and [ErrNotFound] (checked
// with [errors.Is]) report a taken or missing id; [ErrUnavailable] reports
// that the storage could not be reached and nothing was kept;
// [ErrOutcomeUnknown] that a change was being committed when contact was
// lost, so it may or may not have been kept. Any other error is a storage
// failure, wrapped with its cause.
//
// [New] takes the storage and functional options ([OnCreate]); no option
// is required.
package plantstore

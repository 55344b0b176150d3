package plantstore_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/memstore"
)

func ExamplePlantStore_Create() {
	ctx := context.Background()
	ps := plantstore.New(memstore.New())

	p, err := ps.Create(ctx, plantstore.NewPlant{ID: 1, Name: "Monstera", Tag: "indoor", HasTag: true})
	fmt.Println(p.Name, p.Tag, err)

	_, err = ps.Create(ctx, plantstore.NewPlant{ID: 1, Name: "Fern"})
	fmt.Println(errors.Is(err, plantstore.ErrConflict))

	_, err = ps.Create(ctx, plantstore.NewPlant{ID: 2, Name: "bad\x00name"})
	var ve *plantstore.ValidationError
	if errors.As(err, &ve) {
		fmt.Printf("field %s %s\n", ve.Field, ve.Reason)
	}
	// Output:
	// Monstera indoor <nil>
	// true
	// field name must not contain NUL (U+0000)
}

func ExamplePlantStore_List() {
	ctx := context.Background()
	ps := plantstore.New(memstore.New())
	for id := int64(1); id <= 5; id++ {
		ps.Create(ctx, plantstore.NewPlant{ID: id * 10, Name: fmt.Sprint("plant ", id)})
	}
	opts := plantstore.ListOptions{Limit: 2}
	for {
		page, err := ps.List(ctx, opts)
		if err != nil || len(page) == 0 {
			break
		}
		for _, p := range page {
			fmt.Print(p.ID, " ")
		}
		opts.After, opts.HasAfter = page[len(page)-1].ID, true
	}
	fmt.Println()
	// Output:
	// 10 20 30 40 50
}

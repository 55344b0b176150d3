package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/client"
	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/memstore"
)

func Example() {
	// A plantstore server mounted under /api/, as a host server would.
	mux := http.NewServeMux()
	mux.Handle("/api/", http.StripPrefix("/api", httpapi.New(
		plantstore.New(memstore.New()), httpapi.WithTokens("s3cret"))))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	ctx := context.Background()
	c, err := client.New(srv.URL+"/api", client.WithToken("s3cret"))
	if err != nil {
		panic(err)
	}
	p, err := c.Create(ctx, plantstore.NewPlant{ID: 1, Name: "Monstera", Tag: "indoor", HasTag: true})
	fmt.Println(p.ID, p.Name, p.Tag, err)

	_, err = c.Create(ctx, plantstore.NewPlant{ID: 1, Name: "Fern"})
	fmt.Println(errors.Is(err, plantstore.ErrConflict), err)

	_, err = c.Plant(ctx, 2)
	fmt.Println(errors.Is(err, plantstore.ErrNotFound))

	_, err = c.List(ctx, plantstore.ListOptions{Limit: 5000})
	if ve, ok := errors.AsType[*plantstore.ValidationError](err); ok {
		fmt.Println(ve.Field, "-", ve.Reason)
	}

	stranger, err := client.New(srv.URL+"/api", client.WithToken("guess"))
	if err != nil {
		panic(err)
	}
	_, err = stranger.Plant(ctx, 1)
	fmt.Println(errors.Is(err, client.ErrUnauthorized))

	if _, err := c.Create(ctx, plantstore.NewPlant{ID: 2, Name: "Aloe"}); err != nil {
		panic(err)
	}
	for p, err := range c.All(ctx) {
		if err != nil {
			panic(err)
		}
		fmt.Println(p.ID, p.Name)
	}
	// Output:
	// 1 Monstera indoor <nil>
	// true client: error 409: a plant with this id already exists
	// true
	// limit - must be an integer from 1 to 1000
	// true
	// 1 Monstera
	// 2 Aloe
}

// Command ogenclient runs the scenario of package clients with ogen's
// client (package ogenapi, generated), against the server at the URL its
// first argument names, with the bearer token its second gives, and
// prints what it saw, one step a line.
//
// ogen's client answers a declared 400 as a result (err == nil), of type
// *ogenapi.PlantStoreErrorStatusCodeWithHeaders, and any other status of
// an Error (the default response) as an error of that same type: with
// -conventional-status, an Error reaches the caller by either road,
// depending on its code.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/ogen-go/ogen/ogenerrors"

	"github.com/plantstore/plantstore/scripts/clients"
	"github.com/plantstore/plantstore/scripts/clients/ogenclient/ogenapi"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: ogenclient URL TOKEN")
		os.Exit(2)
	}
	base, token := os.Args[1], os.Args[2]
	ctx := context.Background()
	client := newClient(base, bearer(token))

	report("create", plant(client.AddPlant(ctx, &ogenapi.NewPlant{ID: 1, Name: "Fern", Tag: ogenapi.NewOptString("green")}, ogenapi.AddPlantParams{})))
	report("create without tag", plant(client.AddPlant(ctx, &ogenapi.NewPlant{ID: 2, Name: "Ivy"}, ogenapi.AddPlantParams{})))
	report("get", listed(client.GetPlant(ctx, ogenapi.GetPlantParams{ID: 1})))
	report("get unknown", listed(client.GetPlant(ctx, ogenapi.GetPlantParams{ID: 404})))
	report("duplicate id", plant(client.AddPlant(ctx, &ogenapi.NewPlant{ID: 1, Name: "Fern"}, ogenapi.AddPlantParams{})))
	report("bad body: NUL in name", plant(client.AddPlant(ctx, &ogenapi.NewPlant{ID: 3, Name: "Fe\x00rn"}, ogenapi.AddPlantParams{})))
	report("bad body: NUL in tag", plant(client.AddPlant(ctx, &ogenapi.NewPlant{ID: 3, Name: "Fern", Tag: ogenapi.NewOptString("\x00")}, ogenapi.AddPlantParams{})))
	// ogen sends no request that lacks a security requirement: a source
	// that skips the token makes the client refuse.
	report("no token", plant(newClient(base, bearer("")).AddPlant(ctx, &ogenapi.NewPlant{ID: 3, Name: "Moss"}, ogenapi.AddPlantParams{})))
	report("empty token", plant(newClient(base, emptyBearer{}).AddPlant(ctx, &ogenapi.NewPlant{ID: 3, Name: "Moss"}, ogenapi.AddPlantParams{})))
	report("wrong token", plant(newClient(base, bearer("wrong")).AddPlant(ctx, &ogenapi.NewPlant{ID: 3, Name: "Moss"}, ogenapi.AddPlantParams{})))
	for _, p := range []ogenapi.NewPlant{{ID: 3, Name: "Moss"}, {ID: 4, Name: "Aloe"}, {ID: 5, Name: "Pothos"}} {
		report(fmt.Sprintf("create %d", p.ID), plant(client.AddPlant(ctx, &p, ogenapi.AddPlantParams{})))
	}

	// Every page but the last has a Link to the next; its after is where
	// the next page starts.
	params := ogenapi.ListPlantsParams{Limit: ogenapi.NewOptInt32(2)}
	for n := 1; ; n++ {
		step := fmt.Sprintf("list page %d", n)
		res, err := client.ListPlants(ctx, params)
		page, ok := res.(*ogenapi.ListPlantsOKHeaders)
		if err != nil || !ok {
			report(step, failure(res, err))
			break
		}
		ids := make([]int64, len(page.Response))
		for i, p := range page.Response {
			ids[i] = p.ID
		}
		after, more := clients.NextAfter(page.Link.Or(""))
		if !more {
			report(step, fmt.Sprintf("200 %v last", ids))
			break
		}
		report(step, fmt.Sprintf("200 %v next after=%d", ids, after))
		params.After = ogenapi.NewOptInt64(after)
	}

	report("delete", deleted(client.DeletePlant(ctx, ogenapi.DeletePlantParams{ID: 5})))
	report("delete again", deleted(client.DeletePlant(ctx, ogenapi.DeletePlantParams{ID: 5})))
}

func newClient(base string, sec ogenapi.SecuritySource) *ogenapi.Client {
	c, err := ogenapi.NewClient(base, sec)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	return c
}

// bearer sends its token; the empty one sends none.
type bearer string

func (b bearer) BearerAuth(context.Context, ogenapi.OperationName) (ogenapi.BearerAuth, error) {
	if b == "" {
		return ogenapi.BearerAuth{}, ogenerrors.ErrSkipClientSecurity
	}
	return ogenapi.BearerAuth{Token: string(b)}, nil
}

// emptyBearer sends "Authorization: Bearer " with no token after it.
type emptyBearer struct{}

func (emptyBearer) BearerAuth(context.Context, ogenapi.OperationName) (ogenapi.BearerAuth, error) {
	return ogenapi.BearerAuth{}, nil
}

func report(step, saw string) { fmt.Printf("%s\t%s\n", step, saw) }

func plant(res ogenapi.AddPlantRes, err error) string {
	if p, ok := res.(*ogenapi.PlantHeaders); ok && err == nil {
		return fmt.Sprintf("200 {name:%q%s}", p.Response.Name, tag(p.Response.Tag))
	}
	return failure(res, err)
}

func listed(res ogenapi.GetPlantRes, err error) string {
	if p, ok := res.(*ogenapi.ListedPlantHeaders); ok && err == nil {
		return fmt.Sprintf("200 {id:%d name:%q%s}", p.Response.ID, p.Response.Name, tag(p.Response.Tag))
	}
	return failure(res, err)
}

func deleted(res ogenapi.DeletePlantRes, err error) string {
	if _, ok := res.(*ogenapi.DeletePlantNoContent); ok && err == nil {
		return "204"
	}
	return failure(res, err)
}

func tag(t ogenapi.OptString) string {
	if v, ok := t.Get(); ok {
		return fmt.Sprintf(" tag:%q", v)
	}
	return ""
}

// failure describes an answer other than the operation's success: an
// Error, and whether it came as the result or as the error.
func failure(res any, err error) string {
	e, err := plantStoreError(res, err)
	switch {
	case errors.Is(err, ogenerrors.ErrSecurityRequirementIsNotSatisfied):
		return "not sent: ogenerrors.ErrSecurityRequirementIsNotSatisfied"
	case err != nil:
		return "failed: " + err.Error()
	case e == nil:
		return fmt.Sprintf("unexpected result %T", res)
	}
	road := "error"
	if res == e {
		road = "result"
	}
	if e.Response.Message == "" {
		return fmt.Sprintf("Error %d without a message, status %d, as the %s", e.Response.Error, e.StatusCode, road)
	}
	return fmt.Sprintf("Error %d, status %d, as the %s", e.Response.Error, e.StatusCode, road)
}

// plantStoreError returns the Error an operation answered, if it answered
// one, whichever road ogen gave it; err is then nil. These are the lines
// docs/api.md gives users of ogen.
func plantStoreError(res any, err error) (*ogenapi.PlantStoreErrorStatusCodeWithHeaders, error) {
	var e *ogenapi.PlantStoreErrorStatusCodeWithHeaders
	if errors.As(err, &e) {
		return e, nil
	}
	e, _ = res.(*ogenapi.PlantStoreErrorStatusCodeWithHeaders)
	return e, err
}

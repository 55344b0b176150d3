// Command oapiclient runs the scenario of package clients with
// oapi-codegen's client (package oapiapi, generated with -generate
// types,client), against the server at the URL its first argument names,
// with the bearer token its second gives, and prints what it saw, one
// step a line.
//
// oapi-codegen's ClientWithResponses decodes an Error with status 400 into
// the response's JSON400, and one with any other status (the default
// response) into JSONDefault; err is for the transport only. With
// -conventional-status, an Error lands in either field, depending on its
// code.
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"github.com/plantstore/plantstore/scripts/clients"
	"github.com/plantstore/plantstore/scripts/clients/oapiclient/oapiapi"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: oapiclient URL TOKEN")
		os.Exit(2)
	}
	base, token := os.Args[1], os.Args[2]
	ctx := context.Background()
	client := newClient(base, token)
	tag := "green"

	report("create", plant(client.AddPlantWithResponse(ctx, nil, oapiapi.NewPlant{Id: 1, Name: "Fern", Tag: &tag})))
	report("create without tag", plant(client.AddPlantWithResponse(ctx, nil, oapiapi.NewPlant{Id: 2, Name: "Ivy"})))
	report("get", listed(client.GetPlantWithResponse(ctx, 1, nil)))
	report("get unknown", listed(client.GetPlantWithResponse(ctx, 404, nil)))
	report("duplicate id", plant(client.AddPlantWithResponse(ctx, nil, oapiapi.NewPlant{Id: 1, Name: "Fern"})))
	report("bad body: NUL in name", plant(client.AddPlantWithResponse(ctx, nil, oapiapi.NewPlant{Id: 3, Name: "Fe\x00rn"})))
	nul := "\x00"
	report("bad body: NUL in tag", plant(client.AddPlantWithResponse(ctx, nil, oapiapi.NewPlant{Id: 3, Name: "Fern", Tag: &nul})))
	report("no token", plant(newClient(base, "").AddPlantWithResponse(ctx, nil, oapiapi.NewPlant{Id: 3, Name: "Moss"})))
	report("wrong token", plant(newClient(base, "wrong").AddPlantWithResponse(ctx, nil, oapiapi.NewPlant{Id: 3, Name: "Moss"})))
	for _, p := range []oapiapi.NewPlant{{Id: 3, Name: "Moss"}, {Id: 4, Name: "Aloe"}, {Id: 5, Name: "Pothos"}} {
		report(fmt.Sprintf("create %d", p.Id), plant(client.AddPlantWithResponse(ctx, nil, p)))
	}

	// Every page but the last has a Link to the next; its after is where
	// the next page starts.
	limit := int32(2)
	params := oapiapi.ListPlantsParams{Limit: &limit}
	for n := 1; ; n++ {
		step := fmt.Sprintf("list page %d", n)
		r, err := client.ListPlantsWithResponse(ctx, &params)
		if err != nil {
			report(step, failure(0, nil, nil, err))
			break
		}
		if r.JSON200 == nil {
			report(step, failure(r.StatusCode(), r.JSON400, r.JSONDefault, nil))
			break
		}
		var ids []int64
		for _, p := range *r.JSON200 {
			ids = append(ids, p.Id)
		}
		after, more := clients.NextAfter(r.HTTPResponse.Header.Get("Link"))
		if !more {
			report(step, fmt.Sprintf("%d %v last", r.StatusCode(), ids))
			break
		}
		report(step, fmt.Sprintf("%d %v next after=%d", r.StatusCode(), ids, after))
		params.After = &after
	}

	report("delete", deleted(client.DeletePlantWithResponse(ctx, 5, nil)))
	report("delete again", deleted(client.DeletePlantWithResponse(ctx, 5, nil)))
}

// newClient returns a client that sends token, or no Authorization for "".
func newClient(base, token string) *oapiapi.ClientWithResponses {
	var opts []oapiapi.ClientOption
	if token != "" {
		opts = append(opts, oapiapi.WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+token)
			return nil
		}))
	}
	c, err := oapiapi.NewClientWithResponses(base, opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	return c
}

func report(step, saw string) { fmt.Printf("%s\t%s\n", step, saw) }

func plant(r *oapiapi.AddPlantResponse, err error) string {
	if err == nil && r.JSON200 != nil {
		return fmt.Sprintf("%d {name:%q%s}", r.StatusCode(), r.JSON200.Name, tag(r.JSON200.Tag))
	}
	if err != nil {
		return failure(0, nil, nil, err)
	}
	return failure(r.StatusCode(), r.JSON400, r.JSONDefault, nil)
}

func listed(r *oapiapi.GetPlantResponse, err error) string {
	if err == nil && r.JSON200 != nil {
		return fmt.Sprintf("%d {id:%d name:%q%s}", r.StatusCode(), r.JSON200.Id, r.JSON200.Name, tag(r.JSON200.Tag))
	}
	if err != nil {
		return failure(0, nil, nil, err)
	}
	return failure(r.StatusCode(), r.JSON400, r.JSONDefault, nil)
}

func deleted(r *oapiapi.DeletePlantResponse, err error) string {
	if err == nil && r.StatusCode() == http.StatusNoContent {
		return "204"
	}
	if err != nil {
		return failure(0, nil, nil, err)
	}
	return failure(r.StatusCode(), r.JSON400, r.JSONDefault, nil)
}

func tag(t *string) string {
	if t != nil {
		return fmt.Sprintf(" tag:%q", *t)
	}
	return ""
}

// failure describes an answer other than the operation's success: the
// Error, and the field it was decoded into.
func failure(status int, json400, jsonDefault *oapiapi.PlantStoreError, err error) string {
	var e *oapiapi.PlantStoreError
	field := ""
	switch {
	case err != nil:
		return "failed: " + err.Error()
	case json400 != nil:
		e, field = json400, "JSON400"
	case jsonDefault != nil:
		e, field = jsonDefault, "JSONDefault"
	default:
		return fmt.Sprintf("status %d with neither JSON400 nor JSONDefault", status)
	}
	if e.Message == "" {
		return fmt.Sprintf("Error %d without a message, status %d, in %s", e.Error, status, field)
	}
	return fmt.Sprintf("Error %d, status %d, in %s", e.Error, status, field)
}

// Package oapipeer is the Plant Store API served by oapi-codegen's strict
// server on net/http (package oapiapi, made by go generate).
package oapipeer

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/plantstore/plantstore/scripts/peers"
	"github.com/plantstore/plantstore/scripts/peers/oapipeer/oapiapi"
)

// New returns the server, keeping plants in a new Store and accepting the
// bearer tokens ts. oapi-codegen checks no security scheme itself: the
// token is checked by a middleware, as its documentation shows.
func New(ts peers.Tokens) http.Handler {
	si := oapiapi.NewStrictHandlerWithOptions(&handler{store: peers.NewStore()}, nil, oapiapi.StrictHTTPServerOptions{
		RequestErrorHandlerFunc:  func(w http.ResponseWriter, _ *http.Request, err error) { writeError(w, 400, err.Error()) },
		ResponseErrorHandlerFunc: func(w http.ResponseWriter, _ *http.Request, err error) { writeError(w, 500, err.Error()) },
	})
	return oapiapi.HandlerWithOptions(si, oapiapi.StdHTTPServerOptions{
		ErrorHandlerFunc: func(w http.ResponseWriter, _ *http.Request, err error) { writeError(w, 400, err.Error()) },
		Middlewares:      []oapiapi.MiddlewareFunc{bearer(ts)},
	})
}

// bearer refuses a request without one of ts as its bearer token, but on
// the paths the document leaves open.
func bearer(ts peers.Tokens) oapiapi.MiddlewareFunc {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/healthz", "/readyz", "/openapi.json":
			default:
				scheme, t, _ := strings.Cut(r.Header.Get("Authorization"), " ")
				if !strings.EqualFold(scheme, "Bearer") || !ts.Valid(t) {
					writeError(w, http.StatusUnauthorized, "invalid token")
					return
				}
			}
			next.ServeHTTP(w, r)
		})
	}
}

// writeError answers an Error: status 400 (the contract's one failure
// status) with code, the conventional status of the failure.
func writeError(w http.ResponseWriter, code int32, msg string) {
	b, _ := json.Marshal(oapiapi.PlantStoreError{Error: code, Message: msg})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(b)
}

func apiError(code int32, msg string) oapiapi.PlantStoreErrorJSONResponse {
	return oapiapi.PlantStoreErrorJSONResponse{Body: oapiapi.PlantStoreError{Error: code, Message: msg}}
}

type handler struct{ store *peers.Store }

func (h *handler) AddPlant(_ context.Context, req oapiapi.AddPlantRequestObject) (oapiapi.AddPlantResponseObject, error) {
	b := req.Body
	if b == nil {
		return oapiapi.AddPlant400JSONResponse{PlantStoreErrorJSONResponse: apiError(400, "no body")}, nil
	}
	if err := h.store.Create(peers.Plant{ID: b.Id, Name: b.Name, Tag: b.Tag}); err != nil {
		return oapiapi.AddPlant400JSONResponse{PlantStoreErrorJSONResponse: apiError(409, err.Error())}, nil
	}
	return oapiapi.AddPlant200JSONResponse{
		Body:    oapiapi.Plant{Name: b.Name, Tag: b.Tag},
		Headers: oapiapi.AddPlant200ResponseHeaders{XRequestId: req.Params.XRequestId},
	}, nil
}

func (h *handler) GetPlant(_ context.Context, req oapiapi.GetPlantRequestObject) (oapiapi.GetPlantResponseObject, error) {
	p, ok := h.store.Get(req.Id)
	if !ok {
		return oapiapi.GetPlantdefaultJSONResponse{StatusCode: 400, Body: oapiapi.PlantStoreError{Error: 404, Message: "no such plant"}}, nil
	}
	return oapiapi.GetPlant200JSONResponse{
		Body:    oapiapi.ListedPlant{Id: p.ID, Name: p.Name, Tag: p.Tag},
		Headers: oapiapi.GetPlant200ResponseHeaders{XRequestId: req.Params.XRequestId},
	}, nil
}

func (h *handler) DeletePlant(_ context.Context, req oapiapi.DeletePlantRequestObject) (oapiapi.DeletePlantResponseObject, error) {
	if !h.store.Delete(req.Id) {
		return oapiapi.DeletePlantdefaultJSONResponse{StatusCode: 400, Body: oapiapi.PlantStoreError{Error: 404, Message: "no such plant"}}, nil
	}
	return oapiapi.DeletePlant204Response{Headers: oapiapi.DeletePlant204ResponseHeaders{XRequestId: req.Params.XRequestId}}, nil
}

func (h *handler) ListPlants(_ context.Context, req oapiapi.ListPlantsRequestObject) (oapiapi.ListPlantsResponseObject, error) {
	after, limit := int64(0), 100
	if req.Params.After != nil {
		after = *req.Params.After
	}
	if req.Params.Limit != nil {
		limit = int(*req.Params.Limit)
	}
	ps := h.store.List(after, limit)
	out := make([]oapiapi.ListedPlant, len(ps))
	for i, p := range ps {
		out[i] = oapiapi.ListedPlant{Id: p.ID, Name: p.Name, Tag: p.Tag}
	}
	return oapiapi.ListPlants200JSONResponse{Body: out, Headers: oapiapi.ListPlants200ResponseHeaders{XRequestId: req.Params.XRequestId}}, nil
}

func (h *handler) Healthz(context.Context, oapiapi.HealthzRequestObject) (oapiapi.HealthzResponseObject, error) {
	return oapiapi.Healthz200JSONResponse{Body: oapiapi.Status{Status: "ok"}}, nil
}

func (h *handler) Readyz(context.Context, oapiapi.ReadyzRequestObject) (oapiapi.ReadyzResponseObject, error) {
	return oapiapi.Readyz200JSONResponse{Body: oapiapi.Status{Status: "ready"}}, nil
}

func (h *handler) OpenAPI(context.Context, oapiapi.OpenAPIRequestObject) (oapiapi.OpenAPIResponseObject, error) {
	return oapiapi.OpenAPIdefaultJSONResponse{StatusCode: 400, Body: oapiapi.PlantStoreError{Error: 404, Message: "not served by this peer"}}, nil
}

// Package ogenpeer is the Plant Store API served by ogen's generated
// server (package ogenapi, made by go generate), without OpenTelemetry.
package ogenpeer

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/ogen-go/ogen/ogenerrors"

	"github.com/plantstore/plantstore/scripts/peers"
	"github.com/plantstore/plantstore/scripts/peers/ogenpeer/ogenapi"
)

// New returns the server, keeping plants in a new Store and accepting the
// bearer tokens ts.
func New(ts peers.Tokens) (http.Handler, error) {
	h := &handler{store: peers.NewStore()}
	return ogenapi.NewServer(h, security(ts), ogenapi.WithErrorHandler(writeError))
}

type handler struct{ store *peers.Store }

// apiError is an Error answer: status 400 (the contract's one failure
// status) with code, the conventional status of the failure.
func apiError(code int32, msg string) *ogenapi.PlantStoreErrorStatusCodeWithHeaders {
	return &ogenapi.PlantStoreErrorStatusCodeWithHeaders{
		StatusCode: http.StatusBadRequest,
		Response:   ogenapi.PlantStoreError{Error: code, Message: msg},
	}
}

func (h *handler) AddPlant(_ context.Context, req *ogenapi.NewPlant, params ogenapi.AddPlantParams) (ogenapi.AddPlantRes, error) {
	p := peers.Plant{ID: req.ID, Name: req.Name}
	if tag, ok := req.Tag.Get(); ok {
		p.Tag = &tag
	}
	if err := h.store.Create(p); err != nil {
		return apiError(409, err.Error()), nil
	}
	return &ogenapi.PlantHeaders{
		XRequestID: params.XRequestID,
		Response:   ogenapi.Plant{Name: req.Name, Tag: req.Tag},
	}, nil
}

func (h *handler) GetPlant(_ context.Context, params ogenapi.GetPlantParams) (ogenapi.GetPlantRes, error) {
	p, ok := h.store.Get(params.ID)
	if !ok {
		return apiError(404, "no such plant"), nil
	}
	return &ogenapi.ListedPlantHeaders{XRequestID: params.XRequestID, Response: listed(p)}, nil
}

func (h *handler) DeletePlant(_ context.Context, params ogenapi.DeletePlantParams) (ogenapi.DeletePlantRes, error) {
	if !h.store.Delete(params.ID) {
		return apiError(404, "no such plant"), nil
	}
	return &ogenapi.DeletePlantNoContent{XRequestID: params.XRequestID}, nil
}

func (h *handler) ListPlants(_ context.Context, params ogenapi.ListPlantsParams) (ogenapi.ListPlantsRes, error) {
	ps := h.store.List(params.After.Or(0), int(params.Limit.Or(100)))
	out := make([]ogenapi.ListedPlant, len(ps))
	for i, p := range ps {
		out[i] = listed(p)
	}
	return &ogenapi.ListPlantsOKHeaders{XRequestID: params.XRequestID, Response: out}, nil
}

func listed(p peers.Plant) ogenapi.ListedPlant {
	l := ogenapi.ListedPlant{ID: p.ID, Name: p.Name}
	if p.Tag != nil {
		l.Tag = ogenapi.NewOptString(*p.Tag)
	}
	return l
}

func (h *handler) Healthz(_ context.Context, params ogenapi.HealthzParams) (ogenapi.HealthzRes, error) {
	return &ogenapi.StatusHeaders{XRequestID: params.XRequestID, Response: ogenapi.Status{Status: "ok"}}, nil
}

func (h *handler) Readyz(_ context.Context, params ogenapi.ReadyzParams) (ogenapi.ReadyzRes, error) {
	return &ogenapi.StatusHeaders{XRequestID: params.XRequestID, Response: ogenapi.Status{Status: "ready"}}, nil
}

func (h *handler) OpenAPI(context.Context, ogenapi.OpenAPIParams) (ogenapi.OpenAPIRes, error) {
	return apiError(404, "not served by this peer"), nil
}

// NewError answers what fails before the handler, a missing token or a
// body that does not decode, with an Error, as ogen's convenient errors do.
func (h *handler) NewError(_ context.Context, err error) *ogenapi.PlantStoreErrorStatusCodeWithHeaders {
	return apiError(codeOf(err), err.Error())
}

// codeOf is the conventional status of err.
func codeOf(err error) int32 {
	var sec *ogenerrors.SecurityError
	if errors.As(err, &sec) {
		return http.StatusUnauthorized
	}
	return int32(ogenerrors.ErrorCode(err))
}

// writeError answers what fails before the handler (a bad body, a missing
// token) with an Error, as the contract wants every failure answered.
func writeError(_ context.Context, w http.ResponseWriter, _ *http.Request, err error) {
	b, _ := json.Marshal(ogenapi.PlantStoreError{Error: codeOf(err), Message: err.Error()})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(b)
}

type security peers.Tokens

func (s security) HandleBearerAuth(ctx context.Context, _ ogenapi.OperationName, t ogenapi.BearerAuth) (context.Context, error) {
	if !peers.Tokens(s).Valid(t.Token) {
		return ctx, errors.New("invalid token")
	}
	return ctx, nil
}

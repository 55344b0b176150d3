package httpapi_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/plantstore/plantstore/httpapi"
)

// specRouter loads the handler's own OpenAPI document, once, checks that
// it is a valid OpenAPI document, and returns a router over it, whose
// response schemas are closed (see [loadStrict]).
var specRouter = sync.OnceValues(func() (routers.Router, error) {
	doc, err := loadStrict(httpapi.OpenAPI())
	if err != nil {
		return nil, err
	}
	return gorillamux.NewRouter(doc)
})

// openAPIRouter returns specRouter's router, or stops t if the document is
// not valid.
func openAPIRouter(t *testing.T) routers.Router {
	t.Helper()
	router, err := specRouter()
	if err != nil {
		t.Fatalf("the OpenAPI document is not valid: %v", err)
	}
	return router
}

// loadStrict loads the OpenAPI document data, checks that it is valid, and
// closes every object schema of a response that names its properties
// (additionalProperties: false), so that a response carrying a property the
// document does not name fails validation. The document leaves those
// schemas open, so that a generated client accepts a property a later
// version adds (TestOpenAPIKeepsGeneratedClientsWorking); the tests hold the
// server to the properties it names today.
func loadStrict(data []byte) (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, err
	}
	closed := false
	for _, s := range responseSchemas(doc) {
		if len(s.schema.Properties) > 0 {
			s.schema.AdditionalProperties = openapi3.AdditionalProperties{Has: &closed}
		}
	}
	return doc, nil
}

// validatingTransport checks every response that passes through it
// against the OpenAPI document, and its X-Request-Id, failing the test on
// any mismatch.
type validatingTransport struct {
	t      *testing.T
	router routers.Router // the document's routes; nil for openAPIRouter's
}

func (vt validatingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	vt.validate(req, resp, body)
	return resp, nil
}

func (vt validatingTransport) validate(req *http.Request, resp *http.Response, body []byte) {
	t := vt.t
	t.Helper()
	// Every answer carries one X-Request-Id: the client's, or a generated
	// one; which ids are kept is TestRequestIDFromClient's.
	if got, sent := resp.Header.Values("X-Request-Id"), req.Header.Get("X-Request-Id"); len(got) != 1 ||
		sent != "" && got[0] != sent || sent == "" && !generatedID.MatchString(got[0]) {
		t.Errorf("%s %s with X-Request-Id %q: answered with X-Request-Id %q, want the client's or a generated one",
			req.Method, req.URL.Path, sent, got)
	}
	r := req.Clone(context.Background())
	if (r.URL.Path == "/metrics" || r.URL.Path == "/docs" || strings.HasPrefix(r.URL.Path, "/docs/")) && resp.StatusCode < 300 {
		// The host's metrics, or its reference page, in their own
		// formats: not the API's.
		return
	}
	r.URL.Host, r.URL.Scheme, r.Host = "", "", ""
	head := r.Method == http.MethodHead
	switch r.Method {
	case http.MethodOptions:
		// The document leaves OPTIONS out: on a known path it is 204
		// with Allow and no body; on any other, the Error of a GET.
		if resp.StatusCode == http.StatusNoContent {
			if resp.Header.Get("Allow") == "" || len(body) != 0 {
				t.Errorf("OPTIONS %s: 204 with Allow %q and body %q, want an Allow and no body",
					req.URL.Path, resp.Header.Get("Allow"), body)
			}
			return
		}
		r.Method = http.MethodGet
	case http.MethodHead:
		// A HEAD answer is its GET's without the body.
		if len(body) != 0 {
			t.Errorf("HEAD %s answered with a body: %q", req.URL.Path, body)
		}
		r.Method = http.MethodGet
	}
	router := vt.router
	if router == nil {
		router = openAPIRouter(t)
	}
	route, params, err := router.FindRoute(r)
	if err != nil {
		// Unknown paths and methods are not in the document; their answers
		// must still be the Error shape.
		if !head {
			checkErrorShape(t, resp, body)
		}
		return
	}
	if err := validateResponse(r, route, params, resp.StatusCode, resp.Header, body, head); err != nil {
		t.Errorf("%s %s: response %d %s does not match the OpenAPI document: %v",
			req.Method, req.URL.Path, resp.StatusCode, body, err)
	}
}

// validateResponse checks a response to r, which the document routes to
// route with params, against the document; its body is left out for head.
func validateResponse(r *http.Request, route *routers.Route, params map[string]string, status int, header http.Header, body []byte, head bool) error {
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: r, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, ExcludeResponseBody: head},
	}
	in.SetBodyBytes(body)
	return openapi3filter.ValidateResponse(context.Background(), in)
}

// TestValidatorCatchesDrift shows that the response validation used by
// every test is not vacuous: responses that break the document fail it.
func TestValidatorCatchesDrift(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, method, path string
		status             int
		body               string
	}{
		{"id in a Plant", "POST", "/plants", 200, `{"name":"x","id":1}`},
		{"Plant without name", "POST", "/plants", 200, `{"tag":"x"}`},
		{"null tag", "POST", "/plants", 200, `{"name":"x","tag":null}`},
		{"Error without message", "POST", "/plants", 400, `{"error":400}`},
		{"Error code too large", "POST", "/plants", 400, `{"error":4000000000,"message":"x"}`},
		{"listed plant without id", "GET", "/plants", 200, `[{"name":"x"}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, tt.path, nil)
			route, params, err := openAPIRouter(t).FindRoute(req)
			if err != nil {
				t.Fatal(err)
			}
			header := http.Header{"Content-Type": {"application/json"}}
			if err := validateResponse(req, route, params, tt.status, header, []byte(tt.body), false); err == nil {
				t.Errorf("response %d %s passed validation, want a failure", tt.status, tt.body)
			}
		})
	}
}

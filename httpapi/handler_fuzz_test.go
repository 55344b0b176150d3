package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/internal/testkit"
	"github.com/plantstore/plantstore/memstore"
)

// fuzzMaxBody is the body limit of the fuzzed handler: small, so that
// fuzzing reaches the limit often.
const fuzzMaxBody = 4096

// The methods and paths a fuzzed request is sent with, chosen by index.
var (
	fuzzMethods = []string{"POST", "GET", "DELETE", "PUT", "PATCH", "HEAD", "OPTIONS"}
	fuzzPaths   = []string{"/plants", "/plants/1", "/plants/2", "/plants/x", "/plants/",
		"/Plants", "/nowhere", "/openapi.json", "/healthz", "/readyz", "/plants?limit=1&after=0"}
)

// How a fuzzed request carries its Authorization header, chosen by index.
const (
	authValid  = iota // "Bearer " and the accepted token
	authFuzzed        // the fuzzed value as it is
	authBearer        // "Bearer " and the fuzzed value
	authAbsent        // no Authorization header
	authChoices
)

// fuzzPresent is the plant every fuzzed request finds already stored.
var fuzzPresent = plantstore.NewPlant{ID: 1, Name: "Monstera", Tag: "aroid", HasTag: true}

// FuzzHandler sends arbitrary bodies, with a fuzzed Content-Type and
// Authorization header, a method and a path, to a handler over memory
// storage holding one plant. Whatever a client sends, the handler must not
// fail (no 5xx code, nothing logged as a warning or error), must answer any
// failure with exactly the Error shape and status 400, and must create a
// plant exactly when the body is a valid NewPlant according to an
// independent reference, answering with exactly the plant sent.
func FuzzHandler(f *testing.F) {
	const json = "application/json"
	seeds := []struct {
		body         string
		contentType  string
		auth         string
		authMode     uint8
		method, path uint8
	}{
		// Bodies: what the decoder takes and refuses is FuzzDecode's, whose
		// seeds hold every input of decodeTests; these seed each outcome of
		// a create.
		{`{"id":2,"name":"Aloe","tag":"succulent"}`, json, "", authValid, 0, 0},
		{`{"id":2,"name":"Aloe"}`, json, "", authValid, 0, 0},
		{`{"id":1,"name":"again"}`, json, "", authValid, 0, 0},
		{`{"id":3,"name":"a\u0000b"}`, json, "", authValid, 0, 0},
		{`{"id":3,"name":"x"} `, "Application/JSON; charset=utf-8", "", authValid, 0, 0},
		{`{"id":3,"name":"x"}`, "text/plain", "", authValid, 0, 0},
		{`{"id":3,"name":"x"}`, json, "", authAbsent, 0, 0},
		{`{"id":3,"name":"x"}`, json, "Basic dTpw", authFuzzed, 0, 0},
		{`{"id":3,"name":"x"}`, json, "wrong-token", authBearer, 0, 0},
		{`{"id":3,"name":"` + strings.Repeat("x", fuzzMaxBody) + `"}`, json, "", authValid, 0, 0},
		{`[1]`, json, "", authValid, 0, 0},
		{`{"id":3,"name":"x"}`, json, "", authValid, 3, 0},
		{``, json, "", authValid, 2, 1},
		{``, json, "", authValid, 2, 3},
		{``, json, "", authValid, 1, 10},
		{``, "", "", authAbsent, 1, 7},
		{``, "", "", authAbsent, 1, 9},
		{`{"id":3,"name":"x"}`, json, "", authValid, 0, 6},
		{``, "", "", authAbsent, 6, 0},
		{``, "", "", authAbsent, 6, 6},
		{``, "", "", authAbsent, 5, 1},
	}
	for _, s := range seeds {
		f.Add([]byte(s.body), s.contentType, s.auth, s.authMode, s.method, s.path)
	}
	f.Fuzz(func(t *testing.T, body []byte, contentType, auth string, authMode, method, path uint8) {
		req := httptest.NewRequest(fuzzMethods[int(method)%len(fuzzMethods)], fuzzPaths[int(path)%len(fuzzPaths)], bytes.NewReader(body))
		if contentType != "" {
			req.Header["Content-Type"] = []string{contentType}
		}
		switch authMode % authChoices {
		case authValid:
			req.Header["Authorization"] = []string{"Bearer " + testToken}
		case authFuzzed:
			req.Header["Authorization"] = []string{auth}
		case authBearer:
			req.Header["Authorization"] = []string{"Bearer " + auth}
		}
		checkFuzzRequest(t, req, body)
	})
}

// checkFuzzRequest checks the answer to req, one request FuzzHandler sends
// with body.
func checkFuzzRequest(t *testing.T, req *http.Request, body []byte) {
	t.Helper()
	ps := plantstore.New(memstore.New())
	if _, err := ps.Create(context.Background(), fuzzPresent); err != nil {
		t.Fatal(err)
	}
	var logs testkit.Buffer
	h := httpapi.New(ps, httpapi.WithTokens(testToken), httpapi.WithMaxBodyBytes(fuzzMaxBody),
		httpapi.WithLogger(testkit.NewLogger(&logs, slog.LevelWarn)))
	what := req.Method + " " + req.URL.RequestURI()
	createRequest := what == "POST /plants"
	// An authorized JSON create within the limit, which passes every check
	// made before the body is read, fails only for its body.
	ordinaryCreate := createRequest && slices.Equal(req.Header["Authorization"], []string{"Bearer " + testToken}) &&
		slices.Equal(req.Header["Content-Type"], []string{"application/json"}) && len(body) <= fuzzMaxBody
	rec := serve(h, req)
	resp := rec.Result()
	got := rec.Body.Bytes()

	if out := logs.String(); out != "" {
		t.Errorf("%s: logged %s", what, out)
	}
	want, refErr := referenceNewPlant(body)

	switch {
	case resp.StatusCode == http.StatusOK && createRequest:
		if refErr != nil {
			t.Fatalf("created a plant from a body the reference rejects (%v): %q, answer %s", refErr, body, got)
		}
		checkCreated(t, ps, want, resp, got)
	case resp.StatusCode == http.StatusOK:
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" || !jsontext.Value(got).IsValid() {
			t.Errorf("%s: 200 answer with Content-Type %q is not JSON: %s", what, ct, got)
		}
	case resp.StatusCode == http.StatusNoContent && req.Method == "OPTIONS":
		if len(got) != 0 || resp.Header.Get("Allow") == "" {
			t.Errorf("%s answered 204 with Allow %q and body %q, want an Allow and no body", what, resp.Header.Get("Allow"), got)
		}
	case resp.StatusCode == http.StatusNoContent && what == "DELETE /plants/1":
		if len(got) != 0 {
			t.Errorf("DELETE answered 204 with a body: %s", got)
		}
	default:
		code := checkFuzzError(t, what, resp, got)
		switch {
		case !ordinaryCreate:
		case refErr == nil && want.ID == fuzzPresent.ID:
			if code != http.StatusConflict {
				t.Errorf("body %q takes a stored id: error code %d, want 409", body, code)
			}
		case refErr == nil:
			t.Errorf("body %q is a valid NewPlant (%+v) but was refused: %s", body, want, got)
		case code != http.StatusBadRequest:
			t.Errorf("body %q is not a NewPlant (%v): error code %d, want 400", body, refErr, code)
		}
	}
}

// checkFuzzError checks that a failure is answered with status 400 and
// exactly the Error shape (checkErrorShape), with a code a client can
// cause, and returns the code; what names the request.
func checkFuzzError(t *testing.T, what string, resp *http.Response, body []byte) int {
	t.Helper()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("%s: status %d, want 400 (body %s)", what, resp.StatusCode, body)
	}
	e := checkErrorShape(t, resp, body)
	switch e.Error {
	case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusConflict,
		http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
	case http.StatusUnauthorized:
		if resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: error code 401 without WWW-Authenticate", what)
		}
	default:
		t.Fatalf("%s: error code %d for a client's request (body %s)", what, e.Error, body)
	}
	return int(e.Error)
}

// referenceNewPlant decides, independently of the handler's decoder,
// whether body is a valid NewPlant: [httpapi.ReferenceDecode], the oracle
// the decoder is fuzzed against, accepts it, and name and tag hold no NUL.
func referenceNewPlant(body []byte) (plantstore.NewPlant, error) {
	np, err := httpapi.ReferenceDecode(body)
	if err != nil {
		return np, err
	}
	if strings.ContainsRune(np.Name, 0) || strings.ContainsRune(np.Tag, 0) {
		return np, errors.New("reference: name or tag has NUL")
	}
	return np, nil
}

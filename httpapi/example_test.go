package httpapi_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/memstore"
)

func ExampleNew() {
	ps := plantstore.New(memstore.New())
	h := httpapi.New(ps, httpapi.WithTokens("s3cret"))

	send := func(token, body string) {
		req := httptest.NewRequest("POST", "/plants", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Body)
	}
	send("s3cret", `{"id":1,"name":"Monstera","tag":"indoor"}`)
	send("s3cret", `{"id":1,"name":"Fern"}`)
	send("wrong", `{"id":2,"name":"Fern"}`)
	send("s3cret", `{"id":"2","name":"Fern"}`)
	// Output:
	// 200 {"name":"Monstera","tag":"indoor"}
	// 400 {"error":409,"message":"a plant with this id already exists"}
	// 400 {"error":401,"message":"invalid bearer token"}
	// 400 {"error":400,"message":"invalid id: must be an integer"}
}

func ExampleNew_mounted() {
	ps := plantstore.New(memstore.New())
	mux := http.NewServeMux()
	mux.Handle("/api/", http.StripPrefix("/api", httpapi.New(ps, httpapi.WithTokens("s3cret"))))

	req := httptest.NewRequest("POST", "/api/plants", strings.NewReader(`{"id":7,"name":"Aloe"}`))
	req.Header.Set("Authorization", "Bearer s3cret")
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	fmt.Println(rec.Code, rec.Body)
	// Output:
	// 200 {"name":"Aloe"}
}

func ExampleAuthenticatorFunc() {
	// keys stands in for the host's API keys and what each may do.
	keys := map[string]string{"key-admin": "write", "key-viewer": "read"}
	auth := httpapi.AuthenticatorFunc(func(r *http.Request, token string) error {
		role, ok := keys[r.Header.Get("X-Api-Key")]
		switch {
		case !ok:
			return errors.New("unknown API key")
		case r.Method != http.MethodGet && r.Method != http.MethodHead && role != "write":
			return fmt.Errorf("role %s may only read: %w", role, httpapi.ErrForbidden)
		}
		return nil
	})
	h := httpapi.New(plantstore.New(memstore.New()), httpapi.WithAuthenticator(auth))

	send := func(key, body string) {
		req := httptest.NewRequest("POST", "/plants", strings.NewReader(body))
		req.Header.Set("X-Api-Key", key)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Body)
	}
	send("key-admin", `{"id":1,"name":"Monstera"}`)
	send("key-viewer", `{"id":2,"name":"Fern"}`)
	send("key-nobody", `{"id":3,"name":"Aloe"}`)
	// Output:
	// 200 {"name":"Monstera"}
	// 400 {"error":403,"message":"forbidden: these credentials may not use this resource"}
	// 400 {"error":401,"message":"missing bearer token: send Authorization: Bearer <token>"}
}

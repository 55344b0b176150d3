// Command embed mounts the Plant Store API under /api/ in an existing
// net/http server, with the host's own authentication deciding which
// bearer tokens are accepted.
//
//	go run ./examples/embed
//	curl -H 'Authorization: Bearer alice-token' -H 'Content-Type: application/json' \
//	     -d '{"id":1,"name":"Monstera"}' http://127.0.0.1:8081/api/plants
package main

import (
	"context"
	"errors"
	"log"
	"net/http"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/httpapi"
)

// users stands in for the host's own account system.
var users = map[string]string{"alice-token": "alice"}

// authenticate is the host's authenticator: the plant store asks it about
// every bearer token it receives.
func authenticate(ctx context.Context, token string) error {
	if _, ok := users[token]; !ok {
		return errors.New("unknown user")
	}
	return nil
}

func main() {
	plants := plantstore.New(plantstore.NewMemoryStorage())

	mux := http.NewServeMux()
	mux.HandleFunc("GET /", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("the host's own pages\n"))
	})
	mux.Handle("/api/", http.StripPrefix("/api", httpapi.New(plants,
		httpapi.WithAuthenticator(httpapi.TokenAuthenticatorFunc(authenticate)))))

	log.Println("listening on http://127.0.0.1:8081; the Plant Store API is under /api/")
	log.Fatal(http.ListenAndServe("127.0.0.1:8081", mux))
}

// Command embed mounts the Plant Store API under /api/ in an existing
// net/http server, with the host's own authentication deciding which
// bearer tokens are accepted.
//
//	go run ./examples/embed
//	curl -H 'Authorization: Bearer alice-token' -H 'Content-Type: application/json' \
//	     -d '{"id":1,"name":"Monstera"}' http://127.0.0.1:8081/api/plants
//
// It listens on 127.0.0.1:8081, or on $PLANTSTORE_ADDR, and stops cleanly
// on SIGINT or SIGTERM.
package main

import (
	"context"
	"errors"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/memstore"
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

// hostPages stands in for the host's own pages.
func hostPages(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Write([]byte("the host's own pages\n"))
}

func main() {
	plants := plantstore.New(memstore.New())

	mux := http.NewServeMux()
	// The host's pages take "/", for every method, and not "GET /":
	// ServeMux panics on two patterns that both match a request, such as
	// GET /api/plants, when neither is more specific than the other, and
	// "GET /" (it names a method) against "/api/" (a longer path) is such
	// a pair.
	mux.HandleFunc("/", hostPages)
	mux.Handle("/api/", http.StripPrefix("/api", httpapi.New(plants,
		httpapi.WithAuthenticator(httpapi.TokenAuthenticatorFunc(authenticate)))))

	addr := os.Getenv("PLANTSTORE_ADDR")
	if addr == "" {
		addr = "127.0.0.1:8081"
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Printf("listening on http://%s; the Plant Store API is under /api/", ln.Addr())
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	select {
	case err := <-serveErr:
		log.Fatal(err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Fatal(err)
	}
	log.Println("stopped")
}

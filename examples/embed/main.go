// Command embed is a host that embeds the Plant Store API: its own
// net/http mux serves its own pages at / and mounts the API under /api/,
// with the host's own authentication deciding which bearer tokens are
// accepted. Package server serves the mux as the plantstore binary serves
// its API: the same client deadlines, header limit and drain on SIGTERM;
// the API writes the binary's access lines.
//
//	go run ./examples/embed
//	curl -H 'Authorization: Bearer alice-token' -H 'Content-Type: application/json' \
//	     -d '{"id":1,"name":"Monstera"}' http://127.0.0.1:8081/api/plants
//
// It listens on 127.0.0.1:8081, or on $PLANTSTORE_ADDR.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/memstore"
	"github.com/plantstore/plantstore/server"
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
	// The log never makes a request wait for stderr.
	logs := server.NewLogWriter(os.Stderr)
	logger := slog.New(httpapi.NewLogHandler(logs, httpapi.TextLog, nil))
	addr := os.Getenv("PLANTSTORE_ADDR")
	if addr == "" {
		addr = "127.0.0.1:8081"
	}
	// The binary's deadlines and header limit are server's defaults.
	srv, err := server.Listen(addr, server.WithLogger(logger))
	if err != nil {
		logger.Error("listen", "err", err)
		logs.Close()
		os.Exit(1)
	}
	api := httpapi.New(plantstore.New(memstore.New()),
		httpapi.WithPrefix("/api"),
		httpapi.WithAuthenticator(httpapi.TokenAuthenticatorFunc(authenticate)),
		httpapi.WithLogger(logger),
		httpapi.WithMaxHeaderBytes(server.DefaultMaxHeaderBytes),
		httpapi.WithAccessLog(logs, httpapi.AccessLog{}))
	mux := http.NewServeMux()
	// The host's pages take "/", for every method, and not "GET /":
	// ServeMux panics on two patterns that both match a request, such as
	// GET /api/plants, when neither is more specific than the other.
	mux.HandleFunc("/", hostPages)
	// WithPrefix: the API's router matches /api/... itself, so no
	// StripPrefix copies each request.
	mux.Handle("/api/", api)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Printf("listening on http://%s; the Plant Store API is under /api/\n", srv.Addr())
	// Serve returns once SIGTERM came and the requests in flight ended.
	err = srv.Serve(ctx, mux)
	if err != nil {
		logger.Error("serve", "err", err)
	}
	srv.Close()
	logs.Close()
	if err != nil {
		os.Exit(1)
	}
}

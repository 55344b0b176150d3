package server_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/plantstore/plantstore/server"
)

// A host serves its handler with the binary's deadlines and limits until
// its context ends (signal.NotifyContext with SIGTERM, in a real host),
// then drains the requests in flight.
func ExampleServer_Serve() {
	logger := slog.New(slog.DiscardHandler)
	srv, err := server.Listen("127.0.0.1:0", server.WithLogger(logger))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	served := make(chan error, 1)
	go func() {
		served <- srv.Serve(ctx, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "hello from "+r.URL.Path)
		}))
	}()

	resp, err := http.Get("http://" + srv.Addr().String() + "/plants")
	if err != nil {
		fmt.Println(err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))

	stop()
	fmt.Println("Serve:", <-served)
	// Output:
	// 200 hello from /plants
	// Serve: <nil>
}

// Command oapiserver serves the Plant Store API with package oapipeer, for
// scripts/loopback-bench.sh. It takes its tokens from PLANTSTORE_TOKENS, as
// plantstore does, and prints "listening on http://ADDR" once it listens.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/plantstore/plantstore/scripts/peers"
	"github.com/plantstore/plantstore/scripts/peers/oapipeer"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	h := handler(peers.ParseTokens(os.Getenv("PLANTSTORE_TOKENS")))
	fmt.Printf("listening on http://%s\n", ln.Addr())
	log.Fatal(http.Serve(ln, h))
}

func handler(ts peers.Tokens) http.Handler { return oapipeer.New(ts) }

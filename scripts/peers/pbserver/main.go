// Command pbserver serves plants with PocketBase, a single-file store on
// SQLite, for scripts/loopback-bench.sh's durable comparison: a collection
// "plants" with a unique integer pid, a required name and a tag, whose
// create rule asks for PLANTSTORE_TOKENS' first token as a bearer token.
// Creates go to POST /api/collections/plants/records with {"pid":…,"name":…}
// (loopback-post.lua with BENCH_PATH and BENCH_ID_FIELD). Its data is in
// -dir; it prints "listening on http://ADDR" once it serves.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"strings"

	"github.com/pocketbase/pocketbase"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/types"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on; port 0 picks a free one")
	dir := flag.String("dir", "pb_data", "PocketBase's data directory")
	flag.Parse()
	token, _, _ := strings.Cut(os.Getenv("PLANTSTORE_TOKENS"), ",")
	listen, err := concrete(*addr)
	if err != nil {
		log.Fatal(err)
	}
	app := pocketbase.NewWithConfig(pocketbase.Config{DefaultDataDir: *dir, HideStartBanner: true})
	app.OnServe().BindFunc(func(se *core.ServeEvent) error {
		if err := ensurePlants(se.App, token); err != nil {
			return err
		}
		fmt.Printf("listening on http://%s\n", listen)
		return se.Next()
	})
	os.Args = []string{os.Args[0], "serve", "--http", listen}
	if err := app.Start(); err != nil {
		log.Fatal(err)
	}
}

// ensurePlants creates the plants collection unless it exists.
func ensurePlants(app core.App, token string) error {
	if _, err := app.FindCollectionByNameOrId("plants"); err == nil {
		return nil
	}
	c := core.NewBaseCollection("plants")
	c.Fields.Add(
		&core.NumberField{Name: "pid", Required: true, OnlyInt: true},
		&core.TextField{Name: "name", Required: true},
		&core.TextField{Name: "tag"},
	)
	c.AddIndex("idx_plants_pid", true, "pid", "")
	c.CreateRule = types.Pointer(`@request.headers.authorization = "Bearer ` + token + `"`)
	return app.Save(c)
}

// concrete returns addr with a free port in place of port 0: PocketBase
// prints no address it bound.
func concrete(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port != "0" {
		return addr, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

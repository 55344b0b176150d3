package httpapi

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"strings"
)

// openAPIDocument describes exactly what the handler serves. The package's
// tests validate every response they see against it.
//
//go:embed openapi.json
var openAPIDocument []byte

// OpenAPI returns the OpenAPI 3 document of the API, as served at
// GET /openapi.json by a handler without [WithBaseURL].
func OpenAPI() []byte {
	return append([]byte(nil), openAPIDocument...)
}

// WithBaseURL sets the server URL that the OpenAPI document served at
// GET /openapi.json names, so that tools reading it send requests where
// the API is: the prefix the handler is mounted under, such as "/api" for
// http.StripPrefix("/api", h), or an absolute URL such as
// "https://plants.example.com/api" when a proxy serves it elsewhere. A
// trailing slash is dropped. The default, "/", fits a handler at the root.
//
// The URL is given rather than guessed from each request because a
// handler cannot see what a proxy in front of it stripped or rewrote; it
// changes only the document, not what the handler serves.
func WithBaseURL(url string) Option {
	return func(c *config) { c.baseURL = url }
}

// WithPrefix makes the handler serve the API under prefix, such as "/api":
// its routes become /api/plants, /api/openapi.json and so on, and every
// other path, the unprefixed ones included, is answered with the Error
// 404. A host mounts it in its own mux without [http.StripPrefix]:
//
//	mux.Handle("/api/", httpapi.New(plants, httpapi.WithPrefix("/api")))
//
// The router matches the prefixed paths itself, so the request is not
// copied as StripPrefix copies it and its URL. The prefix is also the
// server URL of the OpenAPI document unless [WithBaseURL] gives another.
// The [Route] of a request, in [Served] and [Hooks.Routed] and so in
// the access line's route, is the pattern without the prefix ("/plants");
// the access line's path, and the path in the handler's logs, is the one
// the client sent, prefix included. The pagination Link header is
// relative to the request's path and needs no change. A trailing slash
// of prefix is dropped; "" and "/" leave the handler at the root. New
// panics on a prefix that does not begin with "/" or holds a ':' or '*',
// which the router would read as a parameter.
func WithPrefix(prefix string) Option {
	return func(c *config) { c.prefix = strings.TrimRight(prefix, "/") }
}

// withServerURL returns doc with its top-level servers replaced by the
// single server url, leaving every other byte as it is; for "" or "/" it
// returns doc itself.
func withServerURL(doc []byte, url string) []byte {
	if u := strings.TrimRight(url, "/"); u != "" {
		url = u
	}
	if url == "" || url == "/" {
		return doc
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	if _, err := dec.Token(); err != nil {
		panic("httpapi: the embedded OpenAPI document is not a JSON object: " + err.Error())
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			panic("httpapi: the embedded OpenAPI document does not parse: " + err.Error())
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			panic("httpapi: the embedded OpenAPI document does not parse: " + err.Error())
		}
		if key != "servers" {
			continue
		}
		end := int(dec.InputOffset())
		start := end - len(value)
		servers, err := json.MarshalIndent([]struct {
			URL string `json:"url"`
		}{{url}}, "  ", "  ")
		if err != nil {
			panic(err) // a string always marshals
		}
		out := make([]byte, 0, len(doc)+len(servers))
		out = append(out, doc[:start]...)
		out = append(out, servers...)
		return append(out, doc[end:]...)
	}
	panic("httpapi: the embedded OpenAPI document has no servers")
}

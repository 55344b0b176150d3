// Package clients checks plantstore's OpenAPI document the way users of
// other languages meet it: TestGeneratedClients builds the server
// (cmd/plantstore), starts it, takes the document it serves at
// /openapi.json, generates clients from it with the generators users pick,
// and runs one scenario with each, against the default server, against
// -conventional-status, and through a proxy that adds a property to every
// object of every answer, as a later version of the server may:
//
//   - TypeScript: openapi-typescript and openapi-fetch, type-checked by
//     tsc (directory typescript; versions pinned by its package.json and
//     package-lock.json);
//   - Go: ogen (command ogenclient) and oapi-codegen's types and client
//     (command oapiclient), with the generators' versions pinned by this
//     module's go.mod (its tool lines).
//
// The scenario creates plants (with and without a tag), reads one and one
// that does not exist, creates a duplicate id, sends bodies the server
// rejects and requests without a token or with a wrong one, lists five
// plants two at a time following each page's Link to the last, and deletes
// a plant twice. Each program prints what it saw, one step a line, and
// the test compares that with what the document promises: how each
// generated client surfaces an Error differs by status mode, and
// docs/api.md ("Generating a client") says how.
//
// It is a module of its own so that plantstore's module depends on no
// generator, and .ci/run runs its test in a step of its own:
//
//	cd scripts/clients && go test .
//
// The TypeScript client needs npm and Node.js; without them its subtest
// skips, saying so, unless the variable CI is set, as CI runs set it
// (CI=true). The generated code is not committed: the test generates it
// from the served document into temporary directories and builds the
// commands over it (go build -overlay). go generate makes the same code in
// place, from the document of the work tree, for an editor and for the
// commands' packages to build (go test ./... and go vet ./... need it):
//
//	cd scripts/clients && go generate ./... && go vet ./...
package clients

//go:generate go tool ogen -config .ogen.yml -target ogenclient/ogenapi -package ogenapi -clean ../../httpapi/openapi.json
//go:generate mkdir -p oapiclient/oapiapi
//go:generate go tool oapi-codegen -generate types,client -package oapiapi -o oapiclient/oapiapi/client.gen.go ../../httpapi/openapi.json

// Package peers holds the servers a user of the Plant Store API would pick
// instead of plantstore, for scripts/loopback-bench.sh to run beside it:
// ogen's server (package ogenpeer, without OpenTelemetry) and
// oapi-codegen's strict server on net/http (package oapipeer), both
// generated from plantstore's own OpenAPI document, httpapi/openapi.json,
// with plants kept in memory by a Store, as plantstore's -db memory keeps
// them.
//
// It is a module of its own so that plantstore's module depends on neither
// generator. The generated code is not committed: go generate makes it
// from the document of the work tree, with the generators' versions pinned
// by this module's go.mod (its tool lines):
//
//	cd scripts/peers && go generate ./... && go build ./ogenserver ./oapiserver
//
// scripts/loopback-bench.sh does this when SERVERS names ogen or
// oapi_codegen.
package peers

//go:generate go tool ogen -config .ogen.yml -target ogenpeer/ogenapi -package ogenapi -clean ../../httpapi/openapi.json
//go:generate mkdir -p oapipeer/oapiapi
//go:generate go tool oapi-codegen -generate types,std-http-server,strict-server -package oapiapi -o oapipeer/oapiapi/api.gen.go ../../httpapi/openapi.json

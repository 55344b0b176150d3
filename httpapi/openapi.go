package httpapi

import _ "embed"

// openAPIDocument describes exactly what the handler serves. The package's
// tests validate every response they see against it.
//
//go:embed openapi.json
var openAPIDocument []byte

// OpenAPI returns the OpenAPI 3 document of the API, as served at
// GET /openapi.json.
func OpenAPI() []byte {
	return append([]byte(nil), openAPIDocument...)
}

// Package wire holds what the server (package httpapi) and the client
// (package client) of the Plant Store API must agree on beyond the shapes
// of the OpenAPI document: the codes of the Error answers, the messages a
// client tells apart, and the syntax of a bearer token. Both import it, so
// that neither can change one side alone.
package wire

import "strings"

// The codes of the Error answers: each is the conventional HTTP status of
// its failure.
const (
	CodeInvalid          = 400 // a malformed or invalid request
	CodeUnauthorized     = 401 // missing, malformed or unknown credentials
	CodeForbidden        = 403 // known credentials that may not use the resource
	CodeNotFound         = 404 // no such plant, or no such resource
	CodeMethodNotAllowed = 405
	CodeConflict         = 409 // the id is taken
	CodeTooLarge         = 413 // the body is over the limit
	CodeUnsupportedMedia = 415 // not application/json, or encoded
	CodeHeadersTooLarge  = 431
	CodeInternal         = 500
	CodeUnavailable      = 503 // nothing of the request was kept
	CodeOutcomeUnknown   = 504 // the change may or may not have been kept
)

// Codes returns every code an Error may hold, ascending.
func Codes() []int {
	return []int{CodeInvalid, CodeUnauthorized, CodeForbidden, CodeNotFound, CodeMethodNotAllowed,
		CodeConflict, CodeTooLarge, CodeUnsupportedMedia, CodeHeadersTooLarge, CodeInternal,
		CodeUnavailable, CodeOutcomeUnknown}
}

// The messages of the Errors a client tells apart from others of the same
// code.
const (
	// NoSuchResource is error 404's message for a path the server does
	// not serve: a wrong base URL, not a missing plant.
	NoSuchResource = "no such resource"
	// PlantMissing is error 404's message for a plant's path whose id no
	// plant has.
	PlantMissing = "no plant has this id"
)

// invalidPrefix and invalidSep frame the message of an invalid field.
const invalidPrefix, invalidSep = "invalid ", ": "

// Fields returns the fields of a request that the server validates, and
// that the message of [Invalid] names: a NewPlant's id, name and tag (id
// also in a plant's path), and the query parameters limit and after of a
// list.
func Fields() []string {
	return []string{"id", "name", "tag", "limit", "after"}
}

// Invalid returns the message of error 400 for a field of the request
// (one of [Fields]) that is missing or breaks a rule:
// "invalid <field>: <reason>".
func Invalid(field, reason string) string {
	return invalidPrefix + field + invalidSep + reason
}

// ParseInvalid returns the field and the reason of a message that
// [Invalid] made, and false for any other message. The Error shape holds
// only a code and a message, so the field can be learned only from the
// message: this is the one place that reads it.
func ParseInvalid(msg string) (field, reason string, ok bool) {
	rest, ok := strings.CutPrefix(msg, invalidPrefix)
	if !ok {
		return "", "", false
	}
	field, reason, ok = strings.Cut(rest, invalidSep)
	if !ok || field == "" || strings.ContainsAny(field, " :") {
		return "", "", false
	}
	return field, reason, true
}

// IsB64Token reports whether s matches RFC 6750's b64token, the syntax of
// a bearer token: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" )
// *"=".
func IsB64Token(s string) bool {
	i := 0
	for i < len(s) && isTokenChar(s[i]) {
		i++
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}

func isTokenChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/'
}

package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
)

// An Authenticator decides whether a request may use the API.
type Authenticator interface {
	// Authenticate returns nil when r may use the API. token is the
	// request's bearer token, or "" when r has no Authorization header, so
	// that an Authenticator can accept other credentials found in r: a
	// client certificate in r.TLS, an API-key header. A malformed
	// Authorization header is refused before Authenticate is called.
	//
	// An error rejects the request: one that wraps [ErrForbidden] (a known
	// caller that may not use the API) with error code 403, one that wraps
	// [plantstore.ErrUnavailable] (the authentication backend cannot be
	// reached) with 503, and any other with 401. The error is logged, so
	// it must not contain the token. Authenticate must not read r's body,
	// and must be safe for concurrent use.
	Authenticate(r *http.Request, token string) error
}

// ErrForbidden is the error an [Authenticator] wraps to reject a caller it
// recognises but does not allow; the request is answered with error code
// 403 instead of 401.
var ErrForbidden = errors.New("httpapi: forbidden")

// AuthenticatorFunc adapts a function to an [Authenticator].
type AuthenticatorFunc func(r *http.Request, token string) error

// Authenticate calls f(r, token).
func (f AuthenticatorFunc) Authenticate(r *http.Request, token string) error {
	return f(r, token)
}

// TokenAuthenticatorFunc adapts a function that needs nothing of a request
// but its bearer token and context to an [Authenticator]. A request without
// a token is rejected without calling f, so f never sees "".
//
// It is the signature AuthenticatorFunc had before an Authenticator could
// see the whole request: renaming the type is all that moving to it takes.
type TokenAuthenticatorFunc func(ctx context.Context, token string) error

// Authenticate calls f(r.Context(), token), unless token is "".
func (f TokenAuthenticatorFunc) Authenticate(r *http.Request, token string) error {
	if token == "" {
		return errNoToken
	}
	return f(r.Context(), token)
}

// errNoToken is what a token-only authenticator returns for a request
// without a bearer token.
var errNoToken = errors.New("httpapi: no bearer token")

// errInvalidToken is what a [Tokens] authenticator returns for a token it
// does not hold.
var errInvalidToken = errors.New("httpapi: token not accepted")

// Tokens returns an Authenticator that accepts exactly the given bearer
// tokens, and no request without one. Empty tokens are ignored. It
// compares SHA-256 digests in constant time against every token, so the
// time it takes depends neither on which token matched nor on the tokens'
// lengths.
func Tokens(tokens ...string) Authenticator {
	t := tokenSet{}
	for _, tok := range tokens {
		if tok != "" {
			t = append(t, sha256.Sum256([]byte(tok)))
		}
	}
	return t
}

type tokenSet [][sha256.Size]byte

func (t tokenSet) Authenticate(_ *http.Request, token string) error {
	if token == "" {
		return errNoToken
	}
	sum := sha256.Sum256([]byte(token))
	match := 0
	for i := range t {
		match |= subtle.ConstantTimeCompare(sum[:], t[i][:])
	}
	if match != 1 {
		return errInvalidToken
	}
	return nil
}

// bearerToken extracts the token of an "Authorization: Bearer <token>"
// header (RFC 6750, section 2.1; the scheme is case-insensitive).
// A request without an Authorization header has the token "" and no error.
func bearerToken(h http.Header) (token string, err *apiError) {
	values := h["Authorization"]
	switch {
	case len(values) == 0:
		return "", nil
	case len(values) > 1:
		return "", errMalformedAuth
	}
	v := values[0]
	const scheme = "bearer "
	if len(v) <= len(scheme) || !asciiEqualFold(v[:len(scheme)], scheme) {
		return "", errMalformedAuth
	}
	token = v[len(scheme):]
	token = strings.TrimLeft(token, " ")
	if !isB64Token(token) {
		return "", errMalformedAuth
	}
	return token, nil
}

// isB64Token reports whether s matches RFC 6750's b64token:
// 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
func isB64Token(s string) bool {
	i := 0
	for i < len(s) {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
			c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/' {
			i++
			continue
		}
		break
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

// asciiEqualFold reports whether a and b are equal under ASCII case folding;
// b must be lowercase.
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		c := a[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != b[i] {
			return false
		}
	}
	return true
}

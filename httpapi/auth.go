package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"
)

// An Authenticator decides whether a bearer token may use the API.
type Authenticator interface {
	// Authenticate returns nil when token is valid. Any error rejects the
	// request with error code 401; the error is logged at debug level,
	// so it must not contain the token. It must be safe for concurrent use.
	Authenticate(ctx context.Context, token string) error
}

// AuthenticatorFunc adapts a function to an [Authenticator].
type AuthenticatorFunc func(ctx context.Context, token string) error

// Authenticate calls f(ctx, token).
func (f AuthenticatorFunc) Authenticate(ctx context.Context, token string) error {
	return f(ctx, token)
}

// errInvalidToken is what a [Tokens] authenticator returns for a token it
// does not hold.
var errInvalidToken = errors.New("httpapi: token not accepted")

// Tokens returns an Authenticator that accepts exactly the given tokens.
// Empty tokens are ignored. It compares SHA-256 digests in constant time
// against every token, so the time it takes depends neither on which token
// matched nor on the tokens' lengths.
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

func (t tokenSet) Authenticate(_ context.Context, token string) error {
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
func bearerToken(h http.Header) (token string, err *apiError) {
	values := h["Authorization"]
	switch {
	case len(values) == 0:
		return "", errMissingToken
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

package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/plantstore/plantstore/internal/wire"
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
// without a bearer token. Like errUnknownToken, it is a verdict, which is
// logged; the client is answered with errMissingToken.
var errNoToken = errors.New("httpapi: no bearer token")

// errUnknownToken is what a [Tokens] authenticator returns for a
// well-formed token it does not hold. The client is answered with
// errInvalidToken.
var errUnknownToken = errors.New("httpapi: token not accepted")

// ErrTokenSyntax is what [CheckToken] wraps for a token that no request
// can send, because it is not an RFC 6750 b64token.
var ErrTokenSyntax = errors.New("httpapi: not a valid bearer token")

// tokenRule says which tokens a client can send, for error messages that
// must explain a refusal without showing the token.
const tokenRule = `a bearer token is 1 or more of A-Z a-z 0-9 - . _ ~ + / followed only by "=" padding (RFC 6750 b64token)`

// CheckToken returns nil when token is one a client can send in an
// "Authorization: Bearer" header, and an error wrapping [ErrTokenSyntax]
// when no request can ever carry it: an "=" that is not trailing padding,
// a space, a byte outside ASCII, or nothing at all. The error does not
// contain the token, so it can be logged.
//
// Programs that read tokens from files or the environment check each one
// before passing them to [Tokens] or [WithTokens], which panic on such a
// token.
func CheckToken(token string) error {
	if !wire.IsB64Token(token) {
		return fmt.Errorf("%w: %s", ErrTokenSyntax, tokenRule)
	}
	return nil
}

// SplitTokens returns the tokens of list, comma-separated as an
// environment variable holds them, each trimmed, without the empty items.
// A token that fails [CheckToken] is a *[TokenListError], which does not
// contain it.
func SplitTokens(list string) ([]string, error) {
	var tokens []string
	for i, t := range strings.Split(list, ",") {
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		if err := CheckToken(t); err != nil {
			return nil, &TokenListError{Item: i + 1, Err: err}
		}
		tokens = append(tokens, t)
	}
	return tokens, nil
}

// A TokenListError says where in a list given to [SplitTokens] a token no
// client could send is, and why, without the token.
type TokenListError struct {
	Item int   // counting from 1, by commas
	Err  error // wraps ErrTokenSyntax
}

func (e *TokenListError) Error() string {
	return fmt.Sprintf("item %d (counting from 1, by commas): %v", e.Item, e.Err)
}

func (e *TokenListError) Unwrap() error { return e.Err }

// NewToken returns a new random bearer token, 256 bits from crypto/rand
// in unpadded base64url, which [CheckToken] accepts: for a server started
// with no token configured, which prints the one it made up.
func NewToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (see crypto/rand.Read)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Tokens returns an Authenticator that accepts exactly the given bearer
// tokens, and no request without one. Empty tokens are ignored. It
// compares SHA-256 digests in constant time against every token, so the
// time it takes depends neither on which token matched nor on the tokens'
// lengths.
//
// Tokens panics, as [regexp.MustCompile] does, when a token is not empty
// and fails [CheckToken]: no request could ever present it, so a server
// configured with it would refuse the very clients it was meant for
// without a word. Check tokens that come from outside the program with
// [CheckToken] first. The panic's message does not contain the token.
func Tokens(tokens ...string) Authenticator {
	t := tokenSet{}
	for i, tok := range tokens {
		if tok == "" {
			continue
		}
		if err := CheckToken(tok); err != nil {
			panic(fmt.Sprintf("httpapi: Tokens: token %d of %d: %v", i+1, len(tokens), err))
		}
		t = append(t, sha256.Sum256([]byte(tok)))
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
		return errUnknownToken
	}
	return nil
}

// bearerToken extracts the token of an "Authorization: Bearer <token>"
// header (RFC 6750, section 2.1; the scheme is case-insensitive).
// A request without an Authorization header has the token "" and no error;
// one with another scheme (Basic) gets errOtherScheme, whose challenge
// carries no error code.
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
		if name, _, _ := strings.Cut(v, " "); name != "" && !asciiEqualFold(name, scheme[:len(scheme)-1]) {
			return "", errOtherScheme
		}
		return "", errMalformedAuth
	}
	token = v[len(scheme):]
	token = strings.TrimLeft(token, " ")
	if !wire.IsB64Token(token) {
		return "", errMalformedAuth
	}
	return token, nil
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

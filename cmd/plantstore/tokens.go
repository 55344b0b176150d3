package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/plantstore/plantstore/httpapi"
)

// A badTokenError says where in PLANTSTORE_TOKENS a token no client could
// send is, and why, without the token.
type badTokenError struct {
	Item int   // counting from 1, by commas
	Err  error // wraps httpapi.ErrTokenSyntax
}

func (e *badTokenError) Error() string {
	return fmt.Sprintf("PLANTSTORE_TOKENS, item %d (counting from 1, by commas): %v", e.Item, e.Err)
}

func (e *badTokenError) Unwrap() error { return e.Err }

// envTokens returns the comma-separated tokens of PLANTSTORE_TOKENS, each
// checked with [httpapi.CheckToken].
func envTokens(getenv func(string) string) ([]string, error) {
	var tokens []string
	for i, t := range strings.Split(getenv("PLANTSTORE_TOKENS"), ",") {
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		if err := httpapi.CheckToken(t); err != nil {
			return nil, &badTokenError{Item: i + 1, Err: err}
		}
		tokens = append(tokens, t)
	}
	return tokens, nil
}

// randomToken returns a new 256-bit token in base64url.
func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/plantstore/plantstore/httpapi"
)

// A badTokenError says where in PLANTSTORE_TOKENS envTokens found a token
// that no client could send, and why, without the token. (A token file's
// are httpapi.TokenFileErrors.)
type badTokenError struct {
	Item int   // counting from 1, by commas
	Err  error // wraps httpapi.ErrTokenSyntax
}

func (e *badTokenError) Error() string {
	return fmt.Sprintf("PLANTSTORE_TOKENS, item %d (counting from 1, by commas): %v", e.Item, e.Err)
}

func (e *badTokenError) Unwrap() error { return e.Err }

// envTokens returns the bearer tokens of the PLANTSTORE_TOKENS environment
// variable, comma-separated, accepted beside the token file's. A token no
// client could send (see [httpapi.CheckToken]) is an error naming its
// position and the rule, never the token: tokens are never logged.
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

package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"strings"

	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/internal/secretfile"
)

// A badTokenError says where loadTokens found a token that no client
// could send, and why, without the token.
type badTokenError struct {
	File string // the token file, or "" for PLANTSTORE_TOKENS
	// Line is the token's line in File, or its item in PLANTSTORE_TOKENS,
	// counting from 1.
	Line int
	Err  error // wraps httpapi.ErrTokenSyntax
}

func (e *badTokenError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("PLANTSTORE_TOKENS, item %d (counting from 1, by commas): %v", e.Line, e.Err)
	}
	return fmt.Sprintf("token file %s, line %d: %v", e.File, e.Line, e.Err)
}

func (e *badTokenError) Unwrap() error { return e.Err }

// loadTokens gathers the accepted bearer tokens from the token file and the
// PLANTSTORE_TOKENS environment variable. A token no client could send (see
// [httpapi.CheckToken]) is an error naming where it is, by line or by
// position, and the rule, never the token: tokens are never logged.
func loadTokens(file string, getenv func(string) string, logger *slog.Logger) ([]string, error) {
	var tokens []string
	for i, t := range strings.Split(getenv("PLANTSTORE_TOKENS"), ",") {
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		if err := httpapi.CheckToken(t); err != nil {
			return nil, &badTokenError{Line: i + 1, Err: err}
		}
		tokens = append(tokens, t)
	}
	if file == "" {
		return tokens, nil
	}
	if err := secretfile.WarnIfShared(logger, "token file", file); err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	data, err := secretfile.Read(file)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	n := 0
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := httpapi.CheckToken(line); err != nil {
			return nil, &badTokenError{File: file, Line: i + 1, Err: err}
		}
		tokens = append(tokens, line)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("token file %s holds no token", file)
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

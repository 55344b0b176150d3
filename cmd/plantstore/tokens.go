package main

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"os"
	"strings"
)

// loadTokens gathers the accepted bearer tokens from the token file and the
// PLANTSTORE_TOKENS environment variable. Tokens are never logged.
func loadTokens(file string, getenv func(string) string, logger *slog.Logger) ([]string, error) {
	var tokens []string
	for _, t := range strings.Split(getenv("PLANTSTORE_TOKENS"), ",") {
		if t = strings.TrimSpace(t); t != "" {
			tokens = append(tokens, t)
		}
	}
	if file == "" {
		return tokens, nil
	}
	info, err := os.Stat(file)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		logger.Warn("token file is readable by group or others; chmod 600 it", "file", file, "mode", info.Mode().Perm().String())
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
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

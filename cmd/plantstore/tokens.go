package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/plantstore/plantstore/httpapi"
)

// maxSecretFile bounds what -token-file and -webhook-secret-file may hold,
// so that a path such as /dev/zero or a runaway file stops the binary at
// once instead of filling its memory. A million tokens of a few dozen
// bytes would not fit; a real token file is far smaller.
const maxSecretFile = 1 << 20

// errFileTooLarge is what readSecretFile wraps for a file past
// maxSecretFile.
var errFileTooLarge = errors.New("larger than 1 MiB")

// A secretFileError is a file of secrets that cannot be used.
type secretFileError struct {
	Path string
	Err  error // why: errFileTooLarge
}

func (e *secretFileError) Error() string { return e.Path + ": " + e.Err.Error() }
func (e *secretFileError) Unwrap() error { return e.Err }

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

// readSecretFile returns the contents of a file of secrets, read through
// to its end but no further than maxSecretFile bytes. Files that are not
// regular are read too, so that -token-file /dev/stdin and a shell's
// process substitution (<(vault read …)) work; the bound keeps a device
// that never ends from hanging the start.
func readSecretFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxSecretFile {
		return nil, &secretFileError{Path: name, Err: errFileTooLarge}
	}
	return data, nil
}

// warnIfShared logs a warning, once, when the file of secrets named
// what, a regular file, may be read by its group or by others, naming
// the chmod that fixes it. A pipe or device (-token-file /dev/stdin) is
// left alone: its mode says nothing of who reads what it carries.
func warnIfShared(logger *slog.Logger, what, file string) error {
	info, err := os.Stat(file)
	if err != nil {
		return err
	}
	if info.Mode().IsRegular() && info.Mode().Perm()&0o077 != 0 {
		logger.Warn(what+" is readable by group or others; chmod 600 it", "file", file,
			"mode", info.Mode().Perm().String(), "fix", "chmod 600 "+file)
	}
	return nil
}

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
	if err := warnIfShared(logger, "token file", file); err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	data, err := readSecretFile(file)
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

package httpapi

import (
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/plantstore/plantstore/internal/secretfile"
)

// A TokenFile is an [Authenticator] that accepts the bearer tokens of a
// file, and those given with [WithExtraTokens], as [Tokens] does, and that
// reads the file again when told to ([TokenFile.Reload]), so that tokens
// are added and revoked without a restart: the binary reloads on SIGHUP.
//
// The file holds one token per line; spaces around a token, blank lines
// and lines beginning with # are skipped. It is read to at most 1 MiB, so
// that /dev/zero or a runaway file stops its reader at once; it need not
// be a regular file (a pipe, /dev/stdin, a shell's <(…)), but a pipe holds
// its tokens for one read only, so a reload of one fails and keeps the
// tokens it gave. A pipe is never waited for long: a named pipe (mkfifo)
// that no process is writing to when it is read holds no token, at once,
// and a writer must close the pipe within 5 seconds. A
// regular file that its group or others may read is warned of at each
// load, with the chmod that fixes it. Tokens are never logged, and no
// error holds one.
type TokenFile struct {
	path   string
	extra  []string
	logger *slog.Logger
	mu     sync.Mutex // held by Reload
	set    atomic.Pointer[fileTokens]
}

// fileTokens is what one load of a TokenFile accepts, with how many tokens
// it read and a digest of them all, to tell whether a reload changed them.
type fileTokens struct {
	tokenSet
	n   int
	sum [sha256.Size]byte
}

// A TokenFileOption configures a [TokenFile].
type TokenFileOption func(*TokenFile)

// WithExtraTokens makes the TokenFile accept tokens beside those of its
// file, at every load: tokens the program has from elsewhere, such as an
// environment variable. Empty tokens are ignored. It panics as [Tokens]
// does on a token no request can send; check tokens that come from
// outside the program with [CheckToken] first.
func WithExtraTokens(tokens ...string) TokenFileOption {
	for i, tok := range tokens {
		if err := CheckToken(tok); err != nil && tok != "" {
			panic(fmt.Sprintf("httpapi: WithExtraTokens: token %d of %d: %v", i+1, len(tokens), err))
		}
	}
	return func(t *TokenFile) {
		for _, tok := range tokens {
			if tok != "" {
				t.extra = append(t.extra, tok)
			}
		}
	}
}

// WithTokenFileLogger sets where the TokenFile warns of a file its group
// or others may read. The default is [slog.Default].
func WithTokenFileLogger(l *slog.Logger) TokenFileOption {
	return func(t *TokenFile) { t.logger = l }
}

// OpenTokenFile reads the tokens of the file at path and returns the
// TokenFile that accepts them. It returns an error, and no TokenFile, when
// the file cannot be read, is larger than 1 MiB, holds no token, or holds
// one that no client can send: a *[TokenFileError] naming the file and
// the line, and wrapping [ErrTokenSyntax], never the token.
func OpenTokenFile(path string, opts ...TokenFileOption) (*TokenFile, error) {
	t := &TokenFile{path: path, logger: slog.Default()}
	for _, o := range opts {
		o(t)
	}
	set, err := t.load()
	if err != nil {
		return nil, err
	}
	t.set.Store(set)
	return t, nil
}

// A TokenFileError says where a [TokenFile] found a token that no client
// could send, and why, without the token.
type TokenFileError struct {
	File string
	Line int   // the token's line in File, counting from 1
	Err  error // wraps ErrTokenSyntax
}

func (e *TokenFileError) Error() string {
	return fmt.Sprintf("token file %s, line %d: %v", e.File, e.Line, e.Err)
}

func (e *TokenFileError) Unwrap() error { return e.Err }

// Reload reads the file again and, when it can be used, makes its tokens
// and the extra ones those accepted, in one step: a request sees either
// the old set or the new, whole. changed reports whether the tokens differ
// from those accepted before. When the file cannot be used, Reload returns
// the error [OpenTokenFile] would and the old tokens stay in use. Reloads
// are safe to call concurrently with each other and with requests.
func (t *TokenFile) Reload() (changed bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	set, err := t.load()
	if err != nil {
		return false, err
	}
	old := t.set.Swap(set)
	return old.sum != set.sum, nil
}

// Len returns how many tokens the latest load accepted: the file's, one
// per line that holds one, and the extra ones.
func (t *TokenFile) Len() int { return t.set.Load().n }

// Authenticate accepts the requests whose bearer token is one the latest
// load accepted, comparing digests in constant time as [Tokens] does.
func (t *TokenFile) Authenticate(r *http.Request, token string) error {
	return t.set.Load().Authenticate(r, token)
}

// load reads t's file and returns what it and the extra tokens accept.
func (t *TokenFile) load() (*fileTokens, error) {
	if err := secretfile.WarnIfShared(t.logger, "token file", t.path); err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	data, err := secretfile.Read(t.path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	var tokens []string
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := CheckToken(line); err != nil {
			return nil, &TokenFileError{File: t.path, Line: i + 1, Err: err}
		}
		tokens = append(tokens, line)
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("token file %s holds no token", t.path)
	}
	tokens = append(tokens, t.extra...)
	return &fileTokens{
		tokenSet: Tokens(tokens...).(tokenSet),
		n:        len(tokens),
		sum:      sha256.Sum256([]byte(strings.Join(slices.Sorted(slices.Values(tokens)), "\n"))),
	}, nil
}

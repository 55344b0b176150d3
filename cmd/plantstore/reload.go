package main

import (
	"crypto/sha256"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/server"
	"github.com/plantstore/plantstore/webhook"
)

// secrets holds what the binary reads from files at start and again on
// SIGHUP, besides the TLS certificate, which package server re-reads: the
// accepted tokens and the webhook signing secret. A request reads the
// current tokens with one atomic load; a reload swaps in new ones whole,
// so that what is in flight finishes with the old ones and what comes
// next sees the new.
type secrets struct {
	o      *options
	getenv func(string) string
	logger *slog.Logger

	tokens atomic.Pointer[tokenSet]

	mu sync.Mutex // held over the two fields below
	// webhookSecret is the secret deliveries are signed with, "" without
	// -webhook; webhooks is their Dispatcher once started.
	webhookSecret string
	webhooks      *webhook.Dispatcher
}

// A tokenSet is the accepted tokens, as an [httpapi.Tokens] authenticator
// (constant-time comparison of digests), with how many they are and a
// digest of them all, to tell whether a reload changed them.
type tokenSet struct {
	httpapi.Authenticator
	n   int
	sum [sha256.Size]byte
}

// loadSecrets reads the webhook secret and the tokens the options and
// the environment give. Any that cannot be used is an error: at start,
// unlike at a reload, there is no old value to keep.
func loadSecrets(o *options, getenv func(string) string, logger *slog.Logger) (*secrets, error) {
	s := &secrets{o: o, getenv: getenv, logger: logger}
	var err error
	if s.webhookSecret, err = webhookSecret(o, getenv, logger); err != nil {
		return nil, err
	}
	tokens, err := loadTokens(o.tokenFile, getenv, logger)
	if err != nil {
		return nil, err
	}
	s.setTokens(tokens)
	return s, nil
}

// setTokens makes tokens, checked with [httpapi.CheckToken], the accepted
// ones, and reports whether they differ from those accepted before.
func (s *secrets) setTokens(tokens []string) (changed bool) {
	sorted := slices.Sorted(slices.Values(tokens))
	t := &tokenSet{
		Authenticator: httpapi.Tokens(tokens...),
		n:             len(tokens),
		sum:           sha256.Sum256([]byte(strings.Join(sorted, "\n"))),
	}
	old := s.tokens.Swap(t)
	return old == nil || old.sum != t.sum
}

// hasTokens reports whether any token is accepted.
func (s *secrets) hasTokens() bool { return s.tokens.Load().n > 0 }

// Authenticate makes secrets the [httpapi.Authenticator] of the API: it
// accepts the tokens of the latest load.
func (s *secrets) Authenticate(r *http.Request, token string) error {
	return s.tokens.Load().Authenticate(r, token)
}

// reloaders returns the options that make the server re-read, at each
// reload, -token-file and -webhook-secret-file, when given. Each that
// loads replaces the value in use; each that does not keeps its old
// value. What came from the environment or was generated at start stays
// as it is.
func (s *secrets) reloaders() []server.Option {
	var opts []server.Option
	if s.o.tokenFile != "" {
		opts = append(opts, server.WithReload("tokens", s.reloadTokens, func() []slog.Attr {
			return []slog.Attr{slog.Int("tokens", s.tokens.Load().n)}
		}))
	}
	if s.o.webhookSecret != "" {
		opts = append(opts, server.WithReload("webhook secret", s.reloadWebhookSecret, nil))
	}
	return opts
}

func (s *secrets) reloadTokens() (bool, error) {
	tokens, err := loadTokens(s.o.tokenFile, s.getenv, s.logger)
	if err != nil {
		return false, err
	}
	return s.setTokens(tokens), nil
}

// reloadWebhookSecret re-reads the webhook secret, once deliveries have
// started.
func (s *secrets) reloadWebhookSecret() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.webhooks == nil {
		return false, nil
	}
	secret, err := webhookSecret(s.o, s.getenv, s.logger)
	if err != nil {
		return false, err
	}
	if secret == s.webhookSecret {
		return false, nil
	}
	if err := s.webhooks.SetSecret([]byte(secret)); err != nil {
		return false, err
	}
	s.webhookSecret = secret
	return true, nil
}

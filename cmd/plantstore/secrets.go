package main

import (
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/server"
	"github.com/plantstore/plantstore/webhook"
)

// secrets holds what the binary reads from files at start and again on
// SIGHUP, besides the TLS certificate, which package server re-reads: the
// accepted tokens and the webhook signing secret.
type secrets struct {
	// tokens accepts those of -token-file (tokenFile, when given) and
	// PLANTSTORE_TOKENS, or the one generated at start.
	tokens    httpapi.Authenticator
	tokenFile *httpapi.TokenFile
	// webhookSecret is the secret deliveries start with, "" without
	// -webhook; webhooks is their Dispatcher once started.
	webhookSecret string
	webhooks      atomic.Pointer[webhook.Dispatcher]
}

// loadSecrets reads the webhook secret and the tokens the options and
// the environment give. Any that cannot be used is an error: at start,
// unlike at a reload, there is no old value to keep.
func loadSecrets(o *options, getenv func(string) string, logger *slog.Logger) (*secrets, error) {
	s := &secrets{}
	var err error
	if s.webhookSecret, err = readWebhookSecret(o, getenv, logger); err != nil {
		return nil, err
	}
	tokens, err := httpapi.SplitTokens(getenv("PLANTSTORE_TOKENS"))
	if err != nil {
		return nil, fmt.Errorf("PLANTSTORE_TOKENS, %w", err)
	}
	if o.tokenFile == "" {
		if len(tokens) > 0 {
			s.tokens = httpapi.Tokens(tokens...)
		}
		return s, nil
	}
	s.tokenFile, err = httpapi.OpenTokenFile(o.tokenFile,
		httpapi.WithExtraTokens(tokens...), httpapi.WithTokenFileLogger(logger))
	if err != nil {
		return nil, err
	}
	s.tokens = s.tokenFile
	return s, nil
}

// reloaders returns the options that make each reload re-read
// -token-file and, once deliveries have started, -webhook-secret-file,
// when given; a file that cannot be used leaves its old value in use.
func (s *secrets) reloaders(o *options, logger *slog.Logger) []server.Option {
	var opts []server.Option
	if s.tokenFile != nil {
		opts = append(opts, server.WithReload("tokens", s.tokenFile.Reload, func() []slog.Attr {
			return []slog.Attr{slog.Int("tokens", s.tokenFile.Len())}
		}))
	}
	if o.webhookSecretFile != "" {
		opts = append(opts, server.WithReload("webhook secret", func() (bool, error) {
			if d := s.webhooks.Load(); d != nil {
				return d.ReloadSecretFile(o.webhookSecretFile, logger)
			}
			return false, nil
		}, nil))
	}
	return opts
}

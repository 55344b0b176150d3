package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/plantstore/plantstore/httpapi"
	"github.com/plantstore/plantstore/internal/secretfile"
	"github.com/plantstore/plantstore/webhook"
)

// secrets holds what the binary reads from files at start and again on
// SIGHUP: the TLS certificate, the accepted tokens and the webhook signing
// secret. A TLS handshake and a request each read the current value with
// one atomic load; reload swaps in a new value whole, so that what is in
// flight finishes with the old one and what comes next sees the new.
type secrets struct {
	o      *options
	getenv func(string) string
	logger *slog.Logger

	cert atomic.Pointer[tls.Certificate] // nil without -tls-cert
	// tokens accepts the tokens of -token-file and PLANTSTORE_TOKENS, or
	// the one generated at start; tokenFile is it when -token-file is
	// given, and nil otherwise.
	tokens    httpapi.Authenticator
	tokenFile *httpapi.TokenFile

	mu sync.Mutex // held by reload, and over the two fields below
	// webhookSecret is the secret deliveries are signed with, "" without
	// -webhook; webhooks is their Dispatcher once started.
	webhookSecret string
	webhooks      *webhook.Dispatcher
}

// loadSecrets reads the webhook secret, the tokens and the TLS
// certificate the options and the environment give. Any that cannot be
// used is an error: at start, unlike at a reload, there is no old value
// to keep.
func loadSecrets(o *options, getenv func(string) string, logger *slog.Logger) (*secrets, error) {
	s := &secrets{o: o, getenv: getenv, logger: logger}
	var err error
	if s.webhookSecret, err = webhookSecret(o, getenv, logger); err != nil {
		return nil, err
	}
	tokens, err := envTokens(getenv)
	if err != nil {
		return nil, err
	}
	if o.tokenFile == "" {
		s.setTokens(tokens)
	} else {
		s.tokenFile, err = httpapi.OpenTokenFile(o.tokenFile,
			httpapi.WithExtraTokens(tokens...), httpapi.WithTokenFileLogger(logger))
		if err != nil {
			return nil, err
		}
		s.tokens = s.tokenFile
	}
	cert, err := loadCertificate(o, logger)
	if err != nil {
		return nil, err
	}
	s.cert.Store(cert)
	return s, nil
}

// loadCertificate returns the certificate and key -tls-cert and -tls-key
// name, or nil without them. Each file is read as a file of secrets is,
// to at most 1 MiB.
func loadCertificate(o *options, logger *slog.Logger) (*tls.Certificate, error) {
	if o.tlsCert == "" {
		return nil, nil
	}
	if err := secretfile.WarnIfShared(logger, "TLS key file", o.tlsKey); err != nil {
		return nil, fmt.Errorf("TLS key: %w", err)
	}
	certPEM, err := secretfile.Read(o.tlsCert)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate: %w", err)
	}
	keyPEM, err := secretfile.Read(o.tlsKey)
	if err != nil {
		return nil, fmt.Errorf("TLS key: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate %s and key %s: %w", o.tlsCert, o.tlsKey, err)
	}
	return &cert, nil
}

// setTokens makes tokens, checked with [httpapi.CheckToken], the accepted
// ones, without -token-file: nothing reloads them. None is accepted when
// there are none.
func (s *secrets) setTokens(tokens []string) {
	if len(tokens) > 0 {
		s.tokens = httpapi.Tokens(tokens...)
	}
}

// hasTokens reports whether any token is accepted.
func (s *secrets) hasTokens() bool { return s.tokens != nil }

// tlsConfig returns the TLS configuration of the API's listener, nil
// without -tls-cert: TLS 1.2 or later, HTTP/2 offered, and the
// certificate of the latest load.
func (s *secrets) tlsConfig() *tls.Config {
	if s.cert.Load() == nil {
		return nil
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return s.cert.Load(), nil
		},
	}
}

// watch reloads s at each signal on c, until ctx ends or the returned
// function is called; that function returns once a reload under way has
// ended, so that none logs after the log is closed.
func (s *secrets) watch(ctx context.Context, c <-chan os.Signal) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-c:
				s.reload()
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// reload re-reads the files of secrets the binary was given: -tls-cert
// and -tls-key, -token-file, -webhook-secret-file. Each that loads
// replaces the value in use; each that does not is logged at error level,
// with why, and its old value stays. Then one info line says what
// changed, never the secrets themselves. What came from the environment
// or was generated at start stays as it is.
func (s *secrets) reload() {
	s.mu.Lock()
	defer s.mu.Unlock()
	var changed, failed []string
	for _, part := range []struct {
		name   string
		reread bool
		load   func() (bool, error)
	}{
		{"certificate", s.o.tlsCert != "", s.reloadCertificate},
		{"tokens", s.tokenFile != nil, s.tokenFile.Reload},
		{"webhook secret", s.o.webhookSecret != "" && s.webhooks != nil, s.reloadWebhookSecret},
	} {
		if !part.reread {
			continue
		}
		ok, err := part.load()
		switch {
		case err != nil:
			failed = append(failed, part.name)
			s.logger.Error("reload: kept the old "+part.name, "err", err)
		case ok:
			changed = append(changed, part.name)
		}
	}
	attrs := []any{"changed", listOrNone(changed), "kept_after_error", listOrNone(failed)}
	if slices.Contains(changed, "certificate") {
		leaf := s.cert.Load().Leaf
		attrs = append(attrs, "certificate_serial", leaf.SerialNumber.Text(16), "certificate_expires", leaf.NotAfter)
	}
	if slices.Contains(changed, "tokens") {
		attrs = append(attrs, "tokens", s.tokenFile.Len())
	}
	s.logger.Info("configuration reloaded", attrs...)
}

// listOrNone returns the items of l separated by commas, or "none".
func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ",")
}

func (s *secrets) reloadCertificate() (bool, error) {
	cert, err := loadCertificate(s.o, s.logger)
	if err != nil {
		return false, err
	}
	old := s.cert.Swap(cert)
	return !slices.Equal(old.Certificate[0], cert.Certificate[0]), nil
}

func (s *secrets) reloadWebhookSecret() (bool, error) {
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

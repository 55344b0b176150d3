package server

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"

	"github.com/plantstore/plantstore/internal/secretfile"
)

// A certificate is the certificate of WithTLS: a handshake reads the
// current one with one atomic load, and a reload swaps in a new one whole,
// so that connections already open keep the old and the next handshake
// gets the new.
type certificate struct {
	certFile, keyFile string
	logger            *slog.Logger
	current           atomic.Pointer[tls.Certificate]
}

// loadCertificate reads the certificate chain and key in certFile and
// keyFile, each as a file of secrets is read, to at most 1 MiB, with a
// warning when others may read the key. Its errors name the file, in the
// words the plantstore binary has always logged them with ("TLS
// certificate F and key K: tls: private key does not match public key").
func loadCertificate(certFile, keyFile string, logger *slog.Logger) (*certificate, error) {
	c := &certificate{certFile: certFile, keyFile: keyFile, logger: logger}
	cert, err := c.read()
	if err != nil {
		return nil, err
	}
	c.current.Store(cert)
	return c, nil
}

func (c *certificate) read() (*tls.Certificate, error) {
	if err := secretfile.WarnIfShared(c.logger, "TLS key file", c.keyFile); err != nil {
		return nil, fmt.Errorf("TLS key: %w", err)
	}
	certPEM, err := secretfile.Read(c.certFile)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate: %w", err)
	}
	keyPEM, err := secretfile.Read(c.keyFile)
	if err != nil {
		return nil, fmt.Errorf("TLS key: %w", err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate %s and key %s: %w", c.certFile, c.keyFile, err)
	}
	return &cert, nil
}

// reload reads the files again and, when they can be used, serves what
// they hold from the next handshake on; it reports whether the leaf
// certificate changed.
func (c *certificate) reload() (bool, error) {
	cert, err := c.read()
	if err != nil {
		return false, err
	}
	old := c.current.Swap(cert)
	return !slices.Equal(old.Certificate[0], cert.Certificate[0]), nil
}

// attrs returns what the reload line says of a new certificate.
func (c *certificate) attrs() []slog.Attr {
	leaf := c.current.Load().Leaf
	return []slog.Attr{
		slog.String("certificate_serial", leaf.SerialNumber.Text(16)),
		slog.Time("certificate_expires", leaf.NotAfter),
	}
}

// config returns the TLS configuration of the main listener: TLS 1.2 or
// later, HTTP/2 offered, and the current certificate.
func (c *certificate) config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2", "http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return c.current.Load(), nil
		},
	}
}

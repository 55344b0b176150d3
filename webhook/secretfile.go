package webhook

import (
	"bytes"
	"errors"
	"log/slog"

	"github.com/plantstore/plantstore/internal/secretfile"
)

// A SecretFileError is a file of a webhook signing secret that cannot be
// used, as [ReadSecretFile] reports it.
type SecretFileError struct {
	Path string
	// Err is why: the file's own error (an *fs.PathError), one for a file
	// larger than 1 MiB, or one wrapping [ErrSecret] for a secret that
	// [CheckSecret] refuses.
	Err error
}

// Error names the file: for a secret refused, before the reason; for a
// file that cannot be read, in the reason itself, as the os package's
// errors do.
func (e *SecretFileError) Error() string {
	if errors.Is(e.Err, ErrSecret) {
		return "webhook secret file " + e.Path + ": " + e.Err.Error()
	}
	return "webhook secret: " + e.Err.Error()
}

func (e *SecretFileError) Unwrap() error { return e.Err }

// ReadSecretFile returns the signing secret held by the file at path,
// trimmed of surrounding white space (an editor's or a shell's trailing
// newline is not part of the key), once [CheckSecret] has accepted it, for
// [New], [Start] or [Dispatcher.SetSecret]. The file is read through to
// its end, but no further than 1 MiB, so that /dev/stdin and a shell's
// process substitution work and a runaway file does not fill the memory.
// A regular file that its group or others may read is used, with a
// warning to logger (nil: [slog.Default]) naming the chmod that fixes it.
//
// Errors: a [*SecretFileError] for a file that cannot be read, that is
// larger than 1 MiB, or whose secret CheckSecret refuses (then wrapping
// [ErrSecret]); none holds the secret.
func ReadSecretFile(path string, logger *slog.Logger) ([]byte, error) {
	if logger == nil {
		logger = slog.Default()
	}
	if err := secretfile.WarnIfShared(logger, "webhook secret file", path); err != nil {
		return nil, &SecretFileError{Path: path, Err: err}
	}
	data, err := secretfile.Read(path)
	if err != nil {
		return nil, &SecretFileError{Path: path, Err: err}
	}
	secret := bytes.TrimSpace(data)
	if err := CheckSecret(secret); err != nil {
		return nil, &SecretFileError{Path: path, Err: err}
	}
	return secret, nil
}

// ReloadSecretFile reads the signing secret from the file at path, as
// [ReadSecretFile] does, and swaps it in as [Dispatcher.SetSecret] does
// when its key differs from the one in use: the reload of a host's
// -webhook-secret-file on SIGHUP (give it to server.WithReload), as the
// binary does. changed says whether the key changed.
//
// Errors: those of [ReadSecretFile]; d keeps its secret then.
func (d *Dispatcher) ReloadSecretFile(path string, logger *slog.Logger) (changed bool, err error) {
	secret, err := ReadSecretFile(path, logger)
	if err != nil {
		return false, err
	}
	key, err := signingKey(secret)
	if err != nil {
		return false, err
	}
	if bytes.Equal(key, *d.key.Load()) {
		return false, nil
	}
	d.key.Store(&key)
	return true, nil
}

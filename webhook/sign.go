package webhook

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The headers of a delivery, as the Standard Webhooks convention names them.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// DefaultTolerance is how far the webhook-timestamp of a delivery may be
// from the receiver's clock, either way, when [Verify] is given no
// tolerance. It bounds how long a captured delivery can be replayed.
const DefaultTolerance = 5 * time.Minute

// secretPrefix marks a secret written as base64, as Standard Webhooks
// tools generate them.
const secretPrefix = "whsec_"

var (
	// ErrSecret reports a secret that is empty, that starts with
	// "whsec_" but is not followed by valid base64, or, for [New] and
	// [CheckSecret], whose key is shorter than [MinKeyBytes].
	ErrSecret = errors.New("webhook: invalid secret")

	// ErrMissingHeader reports a delivery without one of the webhook-id,
	// webhook-timestamp or webhook-signature headers.
	ErrMissingHeader = errors.New("webhook: missing header")

	// ErrTimestamp reports a webhook-timestamp that is not a number of
	// seconds or is further from the receiver's clock than the tolerance.
	ErrTimestamp = errors.New("webhook: timestamp invalid or outside tolerance")

	// ErrSignature reports that no signature in webhook-signature matches
	// the delivery.
	ErrSignature = errors.New("webhook: no matching signature")
)

// signingKey returns the HMAC key a secret stands for: the decoded bytes of
// a "whsec_<base64>" secret, or the secret itself.
func signingKey(secret []byte) ([]byte, error) {
	if rest, ok := bytes.CutPrefix(secret, []byte(secretPrefix)); ok {
		s := string(rest)
		k, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			k, err = base64.RawStdEncoding.DecodeString(s)
		}
		if err != nil || len(k) == 0 {
			return nil, fmt.Errorf("webhook: %s secret is not followed by base64: %w", secretPrefix, ErrSecret)
		}
		return k, nil
	}
	if len(secret) == 0 {
		return nil, fmt.Errorf("webhook: empty secret: %w", ErrSecret)
	}
	return secret, nil
}

// MinKeyBytes is the shortest signing key [New] and [CheckSecret] accept:
// 192 bits, the shortest key Standard Webhooks tools generate, so that a
// signature cannot be forged by guessing the key.
const MinKeyBytes = 24

// CheckSecret returns nil when secret is fit to sign deliveries: raw key
// bytes, or "whsec_" followed by the key in base64, of at least
// [MinKeyBytes] bytes of key once decoded. Make one with
//
//	echo "whsec_$(head -c 32 /dev/urandom | base64)"
//
// The error does not contain the secret.
//
// Errors: [ErrSecret] when secret is empty, malformed, or too short.
func CheckSecret(secret []byte) error {
	key, err := signingKey(secret)
	if err != nil {
		return err
	}
	if len(key) < MinKeyBytes {
		return fmt.Errorf("webhook: secret key is %d bytes, want at least %d random bytes (make one with: echo \"whsec_$(head -c 32 /dev/urandom | base64)\"): %w",
			len(key), MinKeyBytes, ErrSecret)
	}
	return nil
}

// mac returns HMAC-SHA256(key, id + "." + timestamp + "." + body).
func mac(h hash.Hash, id, timestamp string, body []byte) []byte {
	h.Reset()
	h.Write([]byte(id))
	h.Write([]byte{'.'})
	h.Write([]byte(timestamp))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

func signature(key []byte, id, timestamp string, body []byte) string {
	sum := mac(hmac.New(sha256.New, key), id, timestamp, body)
	return "v1," + base64.StdEncoding.EncodeToString(sum)
}

// Sign returns the webhook-signature header value for a delivery of body
// with the given webhook-id and webhook-timestamp: "v1," followed by the
// base64 of HMAC-SHA256 over id + "." + timestamp + "." + body. secret is
// either raw key bytes or "whsec_" followed by the key in base64.
//
// Sign and [Verify] take keys of any length, so as to work with the
// secrets of other senders; [New] refuses a key shorter than
// [MinKeyBytes].
//
// Errors: [ErrSecret] when secret is empty or a malformed "whsec_" secret.
func Sign(secret []byte, id string, timestamp time.Time, body []byte) (string, error) {
	key, err := signingKey(secret)
	if err != nil {
		return "", err
	}
	return signature(key, id, strconv.FormatInt(timestamp.Unix(), 10), body), nil
}

// Verify reports whether h and body are a delivery signed with secret, sent
// no further than tolerance from now (DefaultTolerance when tolerance is
// zero or negative). Any one of the space-separated "v1," signatures in
// webhook-signature may match; signatures of other versions are ignored.
// Signatures are compared in constant time.
//
// Verify does not detect a delivery received twice: receivers remember the
// webhook-id of the deliveries they handled for longer than tolerance.
//
// Errors: [ErrSecret] for an unusable secret; [ErrMissingHeader] when a
// header is absent; [ErrTimestamp] when webhook-timestamp is malformed, too
// old or too far ahead; [ErrSignature] when no signature matches.
func Verify(secret []byte, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	key, err := signingKey(secret)
	if err != nil {
		return err
	}
	id, ts, sigs := header(h, HeaderID), header(h, HeaderTimestamp), header(h, HeaderSignature)
	for _, kv := range [][2]string{{HeaderID, id}, {HeaderTimestamp, ts}, {HeaderSignature, sigs}} {
		if kv[1] == "" {
			return fmt.Errorf("webhook: no %s: %w", kv[0], ErrMissingHeader)
		}
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("webhook: malformed %s: %w", HeaderTimestamp, ErrTimestamp)
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	if skew := now.Sub(time.Unix(secs, 0)); skew > tolerance || skew < -tolerance {
		return fmt.Errorf("webhook: %s %d is more than %v from now: %w", HeaderTimestamp, secs, tolerance, ErrTimestamp)
	}
	want := mac(hmac.New(sha256.New, key), id, ts, body)
	for _, sig := range strings.Fields(sigs) {
		b64, ok := strings.CutPrefix(sig, "v1,")
		if !ok || len(b64) > base64.StdEncoding.EncodedLen(sha256.Size) {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(b64)
		if err == nil && hmac.Equal(want, got) {
			return nil
		}
	}
	return ErrSignature
}

// header returns the value of a header whether h was filled with canonical
// keys, as net/http does, or with the lower-case names written by hand.
func header(h http.Header, name string) string {
	if v := h.Get(name); v != "" {
		return v
	}
	if vs := h[name]; len(vs) > 0 {
		return vs[0]
	}
	return ""
}

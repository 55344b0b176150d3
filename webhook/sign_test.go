package webhook_test

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/webhook"
)

// The example of the Standard Webhooks specification, so that deliveries
// verify with any library that follows it.
const (
	specSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specTimestamp = 1614265330
	specBody      = `{"test": 2432232314}`
	specSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

// TestSign signs the specification's example with its secret in both
// forms, and refuses secrets that give no key.
func TestSign(t *testing.T) {
	t.Parallel()
	key, _ := base64.StdEncoding.DecodeString(specSecret[len("whsec_"):])
	tests := []struct {
		name    string
		secret  []byte
		wantErr error
	}{
		{name: "whsec form", secret: []byte(specSecret)},
		{name: "raw key bytes", secret: key},
		{name: "empty", wantErr: webhook.ErrSecret},
		{name: "whsec without key", secret: []byte("whsec_"), wantErr: webhook.ErrSecret},
		{name: "whsec with bad base64", secret: []byte("whsec_not*base64"), wantErr: webhook.ErrSecret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := webhook.Sign(tt.secret, specID, time.Unix(specTimestamp, 0), []byte(specBody))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Sign() = %q, %v; want error %v", got, err, tt.wantErr)
			}
			if diff := cmp.Diff(specSignature, got); err == nil && diff != "" {
				t.Errorf("Sign() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	now := time.Unix(specTimestamp, 0)
	other := "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
	headers := func(id, ts, sig string) http.Header {
		h := http.Header{}
		for k, v := range map[string]string{webhook.HeaderID: id, webhook.HeaderTimestamp: ts, webhook.HeaderSignature: sig} {
			if v != "" {
				h.Set(k, v)
			}
		}
		return h
	}
	ts := strconv.Itoa(specTimestamp)
	tests := []struct {
		name      string
		secret    string
		h         http.Header
		body      string
		now       time.Time
		tolerance time.Duration
		wantErr   error
		reason    string
	}{
		{name: "valid", secret: specSecret, h: headers(specID, ts, specSignature), body: specBody, now: now},
		{name: "one of several", secret: specSecret, h: headers(specID, ts, other+" v1a,xyz "+specSignature), body: specBody, now: now,
			reason: "a sender rotating its secret signs with both keys"},
		{name: "lower-case keys", secret: specSecret, h: http.Header{"webhook-id": {specID}, "webhook-timestamp": {ts}, "webhook-signature": {specSignature}},
			body: specBody, now: now, reason: "a header map filled by hand"},
		{name: "within tolerance", secret: specSecret, h: headers(specID, ts, specSignature), body: specBody, now: now.Add(4 * time.Minute)},
		{name: "stale", secret: specSecret, h: headers(specID, ts, specSignature), body: specBody, now: now.Add(6 * time.Minute), wantErr: webhook.ErrTimestamp,
			reason: "the default tolerance is 5 minutes"},
		{name: "future", secret: specSecret, h: headers(specID, ts, specSignature), body: specBody, now: now.Add(-6 * time.Minute), wantErr: webhook.ErrTimestamp},
		{name: "custom tolerance", secret: specSecret, h: headers(specID, ts, specSignature), body: specBody, now: now.Add(2 * time.Minute), tolerance: time.Minute,
			wantErr: webhook.ErrTimestamp},
		{name: "malformed timestamp", secret: specSecret, h: headers(specID, "16142653x", specSignature), body: specBody, now: now, wantErr: webhook.ErrTimestamp},
		{name: "tampered body", secret: specSecret, h: headers(specID, ts, specSignature), body: `{"test": 2432232315}`, now: now, wantErr: webhook.ErrSignature},
		{name: "other id", secret: specSecret, h: headers("msg_other", ts, specSignature), body: specBody, now: now, wantErr: webhook.ErrSignature,
			reason: "the id is signed, so a delivery cannot be replayed under a new id"},
		{name: "wrong secret", secret: "whsec_" + base64.StdEncoding.EncodeToString([]byte("another key")), h: headers(specID, ts, specSignature),
			body: specBody, now: now, wantErr: webhook.ErrSignature},
		{name: "other version only", secret: specSecret, h: headers(specID, ts, "v2,"+specSignature[3:]), body: specBody, now: now, wantErr: webhook.ErrSignature},
		{name: "bad base64", secret: specSecret, h: headers(specID, ts, "v1,!!!"), body: specBody, now: now, wantErr: webhook.ErrSignature},
		{name: "truncated signature", secret: specSecret, h: headers(specID, ts, specSignature[:20]), body: specBody, now: now, wantErr: webhook.ErrSignature},
		{name: "no id", secret: specSecret, h: headers("", ts, specSignature), body: specBody, now: now, wantErr: webhook.ErrMissingHeader},
		{name: "no timestamp", secret: specSecret, h: headers(specID, "", specSignature), body: specBody, now: now, wantErr: webhook.ErrMissingHeader},
		{name: "no signature", secret: specSecret, h: headers(specID, ts, ""), body: specBody, now: now, wantErr: webhook.ErrMissingHeader},
		{name: "empty secret", secret: "", h: headers(specID, ts, specSignature), body: specBody, now: now, wantErr: webhook.ErrSecret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := webhook.Verify([]byte(tt.secret), tt.h, []byte(tt.body), tt.now, tt.tolerance)
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("Verify() = %v, want %v (%s)", err, tt.wantErr, tt.reason)
			}
		})
	}
}

func TestPayload(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		plant  plantstore.Plant
		want   string
		reason string
	}{
		{"no tag", plantstore.Plant{ID: 1, Name: "Monstera"}, `{"id":1,"name":"Monstera"}`, "an absent tag is left out"},
		{"empty tag", plantstore.Plant{ID: 2, Name: "Fern", HasTag: true}, `{"id":2,"name":"Fern","tag":""}`, "an empty tag is not an absent one"},
		{"tag", plantstore.Plant{ID: 3, Name: "Aloe", Tag: "succulent", HasTag: true}, `{"id":3,"name":"Aloe","tag":"succulent"}`, ""},
		{"negative id", plantstore.Plant{ID: -9223372036854775808, Name: "x"}, `{"id":-9223372036854775808,"name":"x"}`, "int64 kept exact, not as a float"},
		{"UTF-8 kept", plantstore.Plant{ID: 4, Name: "Φυτό 🌱 植物", Tag: "é", HasTag: true}, `{"id":4,"name":"Φυτό 🌱 植物","tag":"é"}`, ""},
		{"escapes", plantstore.Plant{ID: 5, Name: "a\"b\\c\nd\te\x01", Tag: "<&>", HasTag: true}, `{"id":5,"name":"a\"b\\c\nd\te\u0001","tag":"<&>"}`,
			"only what JSON requires is escaped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(webhook.Payload(tt.plant))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Payload(%+v) mismatch (-want +got):\n%s\n%s", tt.plant, diff, tt.reason)
			}
		})
	}
}

func TestCheckSecret(t *testing.T) {
	t.Parallel()
	b64 := func(n int) string { return "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, n)) }
	tests := []struct {
		name    string
		secret  string
		wantErr error
		reason  string
	}{
		{name: "specification's example", secret: specSecret, reason: "24 bytes of key"},
		{name: "32 bytes in whsec form", secret: b64(32)},
		{name: "24 raw bytes", secret: "abcdefghijklmnopqrstuvwx"},
		{name: "5 raw bytes", secret: "s3cre", wantErr: webhook.ErrSecret},
		{name: "23 bytes in whsec form", secret: b64(23), wantErr: webhook.ErrSecret},
		{name: "whsec form counts decoded bytes", secret: "whsec_" + base64.StdEncoding.EncodeToString([]byte("eighteen bytes key")),
			wantErr: webhook.ErrSecret, reason: "its base64 is 24 characters, but only 18 bytes of key"},
		{name: "empty", secret: "", wantErr: webhook.ErrSecret},
		{name: "bad base64", secret: "whsec_***", wantErr: webhook.ErrSecret},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := webhook.CheckSecret([]byte(tt.secret))
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("CheckSecret(%q) = %v, want %v (%s)", tt.secret, err, tt.wantErr, tt.reason)
			}
		})
	}
}

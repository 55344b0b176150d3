package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/secretfile"
	"github.com/plantstore/plantstore/promstats"
	"github.com/plantstore/plantstore/webhook"
)

// errNoWebhookSecret is webhookSecret's error when -webhook has
// subscribers and nothing gives the secret to sign for them.
var errNoWebhookSecret = errors.New("-webhook needs a signing secret: -webhook-secret-file or env PLANTSTORE_WEBHOOK_SECRET")

// A weakSecretError is a webhook signing secret that webhook.CheckSecret
// refuses, with where it came from.
type weakSecretError struct {
	File string // -webhook-secret-file, or "" for PLANTSTORE_WEBHOOK_SECRET
	Err  error  // wraps webhook.ErrSecret
}

func (e *weakSecretError) Error() string {
	if e.File == "" {
		return "PLANTSTORE_WEBHOOK_SECRET: " + e.Err.Error()
	}
	return "webhook secret file " + e.File + ": " + e.Err.Error()
}

func (e *weakSecretError) Unwrap() error { return e.Err }

// webhookSecret returns the signing secret for -webhook subscribers, from
// -webhook-secret-file or PLANTSTORE_WEBHOOK_SECRET, either trimmed of
// surrounding white space, or "" when there are no subscribers. A secret
// file that group or others may read is used, with a warning. It is read
// and checked with [webhook.CheckSecret] before anything is opened, so
// that a missing or weak secret stops the binary before it creates a
// database.
func webhookSecret(o *options, getenv func(string) string, logger *slog.Logger) (string, error) {
	if len(o.webhooks) == 0 {
		return "", nil
	}
	// Both sources are trimmed alike: an editor's or a shell's trailing
	// newline is not part of the key.
	secret, file := strings.TrimSpace(getenv("PLANTSTORE_WEBHOOK_SECRET")), ""
	if o.webhookSecret != "" {
		if err := secretfile.WarnIfShared(logger, "webhook secret file", o.webhookSecret); err != nil {
			return "", fmt.Errorf("webhook secret: %w", err)
		}
		data, err := secretfile.Read(o.webhookSecret)
		if err != nil {
			return "", fmt.Errorf("webhook secret: %w", err)
		}
		secret, file = strings.TrimSpace(string(data)), o.webhookSecret
	}
	if secret == "" {
		return "", errNoWebhookSecret
	}
	if err := webhook.CheckSecret([]byte(secret)); err != nil {
		return "", &weakSecretError{File: file, Err: err}
	}
	return secret, nil
}

// startWebhooks starts delivering plant-added webhooks, signed with the
// secret of sec, which a reload may change, when -webhook names
// subscribers. Durable storage records each event in
// the plant's own transaction and the state of its deliveries, which every
// process on the same database shares by lease, at most
// -webhook-max-pending events of them when it is set; memory storage
// keeps pending deliveries in memory, at most -webhook-max-pending events
// (10,000 unless set) and -webhook-max-pending-bytes bytes of them. It returns the options the
// PlantStore needs and a function that stops delivery. reg is the
// binary's registry, for the delivery metrics; wopts add to the
// Dispatcher's options.
func startWebhooks(ctx context.Context, o *options, sec *secrets, storage plantstore.Storage, logger *slog.Logger, reg prometheus.Registerer, wopts ...webhook.Option) (psOpts []plantstore.Option, stop func(), err error) {
	if len(o.webhooks) == 0 {
		return nil, func() {}, nil
	}
	source, durable := storage.(plantstore.Outbox)
	if !durable {
		mo := webhook.NewMemoryOutbox(
			webhook.WithMaxPending(o.webhookMaxPending),
			webhook.WithMaxPendingBytes(o.webhookMaxPendingBytes),
			webhook.WithDropLogger(logger))
		psOpts = append(psOpts, plantstore.OnCreate(mo.Add))
		source = mo
	}
	sec.mu.Lock()
	defer sec.mu.Unlock()
	d, err := webhook.New(source, o.webhooks, []byte(sec.webhookSecret), append([]webhook.Option{
		webhook.WithLease(o.webhookLease),
		webhook.WithOwner(o.instance),
		webhook.WithLogger(logger)}, wopts...)...)
	if err != nil {
		return nil, nil, err
	}
	sec.webhooks = d
	if err := promstats.Webhooks(reg, d); err != nil {
		return nil, nil, err
	}
	psOpts = append(psOpts, plantstore.OnCreate(func(plantstore.Plant) { d.Notify() }))
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := d.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			logger.Error("webhook delivery stopped", "err", err)
		}
	}()
	logger.Info("delivering plant-added webhooks", "subscribers", len(o.webhooks), "durable", durable)
	return psOpts, func() {
		cancel()
		<-done
	}, nil
}

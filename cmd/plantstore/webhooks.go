package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/promstats"
	"github.com/plantstore/plantstore/webhook"
)

// errNoWebhookSecret is readWebhookSecret's error when -webhook has
// subscribers and nothing gives the secret to sign for them.
var errNoWebhookSecret = errors.New("-webhook needs a signing secret: -webhook-secret-file or env PLANTSTORE_WEBHOOK_SECRET")

// readWebhookSecret returns the signing secret of -webhook-secret-file or
// else PLANTSTORE_WEBHOOK_SECRET, trimmed and checked, or "" without
// -webhook. A missing or weak one stops the binary before anything opens.
func readWebhookSecret(o *options, getenv func(string) string, logger *slog.Logger) (string, error) {
	if len(o.webhooks) == 0 {
		return "", nil
	}
	if o.webhookSecretFile != "" {
		secret, err := webhook.ReadSecretFile(o.webhookSecretFile, logger)
		return string(secret), err
	}
	secret := strings.TrimSpace(getenv("PLANTSTORE_WEBHOOK_SECRET"))
	if secret == "" {
		return "", errNoWebhookSecret
	}
	if err := webhook.CheckSecret([]byte(secret)); err != nil {
		return "", fmt.Errorf("PLANTSTORE_WEBHOOK_SECRET: %w", err)
	}
	return secret, nil
}

// startWebhooks starts delivering to -webhook's subscribers with
// [webhook.Start], which chooses and bounds the outbox, and returns the
// options the PlantStore needs and the function that stops delivery.
func startWebhooks(ctx context.Context, o *options, sec *secrets, storage plantstore.Storage, logger *slog.Logger, reg prometheus.Registerer, wopts ...webhook.Option) (psOpts []plantstore.Option, stop func(), err error) {
	if len(o.webhooks) == 0 {
		return nil, func() {}, nil
	}
	d, psOpts, err := webhook.Start(ctx, storage, o.webhooks, []byte(sec.webhookSecret), append([]webhook.Option{
		webhook.WithLease(o.webhookLease),
		webhook.WithInstance(o.instance),
		webhook.WithRunLock(o.runLock),
		webhook.WithLogger(logger),
		webhook.WithMemoryOutbox(webhook.WithMaxPending(o.webhookMaxPending), webhook.WithMaxPendingBytes(o.webhookMaxPendingBytes)),
	}, wopts...)...)
	if err != nil {
		return nil, nil, err
	}
	if err := promstats.Webhooks(reg, d); err != nil {
		d.Stop()
		return nil, nil, err
	}
	sec.webhooks.Store(d)
	return psOpts, d.Stop, nil
}

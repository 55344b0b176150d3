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

// readWebhookSecret returns the signing secret for -webhook subscribers, from
// -webhook-secret-file (read by [webhook.ReadSecretFile]) or
// PLANTSTORE_WEBHOOK_SECRET, either trimmed of surrounding white space,
// or "" when there are no subscribers. It is read and checked with
// [webhook.CheckSecret] before anything is opened, so that a missing or
// weak secret stops the binary before it creates a database.
func readWebhookSecret(o *options, getenv func(string) string, logger *slog.Logger) (string, error) {
	if len(o.webhooks) == 0 {
		return "", nil
	}
	if o.webhookSecretFile != "" {
		secret, err := webhook.ReadSecretFile(o.webhookSecretFile, logger)
		return string(secret), err
	}
	// Trimmed as the file is: a shell's trailing newline is not part of
	// the key.
	secret := strings.TrimSpace(getenv("PLANTSTORE_WEBHOOK_SECRET"))
	if secret == "" {
		return "", errNoWebhookSecret
	}
	if err := webhook.CheckSecret([]byte(secret)); err != nil {
		return "", fmt.Errorf("PLANTSTORE_WEBHOOK_SECRET: %w", err)
	}
	return secret, nil
}

// startWebhooks starts delivering plant-added webhooks with
// [webhook.Start], signed with the secret of sec, which a reload may
// change, when -webhook names subscribers: through the outbox of durable
// storage, which openPlantStore bounded to -webhook-max-pending events
// when set, or in memory, at most -webhook-max-pending events (10,000
// unless set) and -webhook-max-pending-bytes bytes. It returns the
// options the PlantStore needs and a function that stops delivery. reg
// is the binary's registry, for the delivery metrics; wopts add to the
// Dispatcher's options.
func startWebhooks(ctx context.Context, o *options, sec *secrets, storage plantstore.Storage, logger *slog.Logger, reg prometheus.Registerer, wopts ...webhook.Option) (psOpts []plantstore.Option, stop func(), err error) {
	if len(o.webhooks) == 0 {
		return nil, func() {}, nil
	}
	d, psOpts, err := webhook.Start(ctx, storage, o.webhooks, []byte(sec.webhookSecret), append([]webhook.Option{
		webhook.WithLease(o.webhookLease),
		webhook.WithOwner(o.instance),
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

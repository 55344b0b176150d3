package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/webhook"
)

// startWebhooks starts delivering plant-added webhooks when -webhook names
// subscribers. Durable storage records each event in the plant's own
// transaction; memory storage keeps pending deliveries in memory. It adds
// to psOpts what the PlantStore needs, and returns a function that stops
// delivery.
func startWebhooks(ctx context.Context, o options, getenv func(string) string, storage plantstore.Storage, psOpts *[]plantstore.Option, logger *slog.Logger) (func(), error) {
	if len(o.webhooks) == 0 {
		return func() {}, nil
	}
	secret := getenv("PLANTSTORE_WEBHOOK_SECRET")
	if o.webhookSecret != "" {
		data, err := os.ReadFile(o.webhookSecret)
		if err != nil {
			return nil, fmt.Errorf("webhook secret: %w", err)
		}
		secret = strings.TrimSpace(string(data))
	}
	if secret == "" {
		return nil, errors.New("-webhook needs a signing secret: -webhook-secret-file or env PLANTSTORE_WEBHOOK_SECRET")
	}
	source, durable := storage.(plantstore.Outbox)
	if !durable {
		mo := webhook.NewMemoryOutbox()
		*psOpts = append(*psOpts, plantstore.OnCreate(mo.Add))
		source = mo
	}
	d, err := webhook.New(source, webhook.Config{
		Subscribers: o.webhooks,
		Secret:      []byte(secret),
		Logger:      logger,
	})
	if err != nil {
		return nil, err
	}
	*psOpts = append(*psOpts, plantstore.OnCreate(func(plantstore.Plant) { d.Notify() }))
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := d.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
			logger.Error("webhook delivery stopped", "err", err)
		}
	}()
	logger.Info("delivering plant-added webhooks", "subscribers", len(o.webhooks), "durable", durable)
	return func() {
		cancel()
		<-done
	}, nil
}

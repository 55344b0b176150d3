package webhook_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/memstore"
	"github.com/plantstore/plantstore/webhook"
)

func BenchmarkMemoryOutboxAdd(b *testing.B) {
	b.ReportAllocs()
	mo := webhook.NewMemoryOutbox()
	p := plantstore.Plant{ID: 1, Name: "Monstera", Tag: "aroid", HasTag: true}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			mo.Add(p)
		}
	})
}

func BenchmarkPayload(b *testing.B) {
	b.ReportAllocs()
	p := plantstore.Plant{ID: 1, Name: "Monstera deliciosa", Tag: "aroid", HasTag: true}
	for b.Loop() {
		webhook.Payload(p)
	}
}

func BenchmarkVerify(b *testing.B) {
	b.ReportAllocs()
	body := webhook.Payload(plantstore.Plant{ID: 1, Name: "Monstera deliciosa", Tag: "aroid", HasTag: true})
	now := time.Now()
	sig, err := webhook.Sign(testSecret, "msg_1", now, body)
	if err != nil {
		b.Fatal(err)
	}
	h := http.Header{}
	h.Set(webhook.HeaderID, "msg_1")
	h.Set(webhook.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	h.Set(webhook.HeaderSignature, sig)
	for b.Loop() {
		if err := webhook.Verify(testSecret, h, body, now, 0); err != nil {
			b.Fatal(err)
		}
	}
}

var discardLogger = slog.New(slog.DiscardHandler)

// BenchmarkCreate measures PlantStore.Create in memory without webhooks and
// with a webhook whose only subscriber never answers: the webhook costs
// Create an Add and a Notify, never a wait.
func BenchmarkCreate(b *testing.B) {
	b.Run("webhook=none", func(b *testing.B) {
		b.ReportAllocs()
		benchmarkCreate(b, plantstore.New(memstore.New()))
	})
	b.Run("webhook=dead-subscriber", func(b *testing.B) {
		b.ReportAllocs()
		release := make(chan struct{})
		dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
		defer dead.Close()
		defer close(release)
		mo := webhook.NewMemoryOutbox()
		d, err := webhook.New(mo, []string{dead.URL}, testSecret,
			webhook.WithAttemptTimeout(time.Second), webhook.WithLogger(discardLogger))
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- d.Run(ctx) }()
		defer func() { cancel(); <-done }()
		benchmarkCreate(b, newPlantStore(mo, d))
	})
}

func benchmarkCreate(b *testing.B, ps *plantstore.PlantStore) {
	var id atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := ps.Create(context.Background(), plantstore.NewPlant{ID: id.Add(1), Name: "Monstera"}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

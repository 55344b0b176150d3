// Package promstats exports to Prometheus what packages httpapi, sqlstore
// and webhook report of their work, through their hooks and stats, with
// the client_golang library. It is the one package of plantstore that
// links it: a host that mounts httpapi without it links no metrics
// library at all.
//
//	reg := prometheus.NewRegistry()
//	httpHooks, err := promstats.HTTP(reg)
//	storeHooks, err := promstats.Storage(reg)
//	store, err := sqlstore.Open(ctx, db, sqlstore.SQLite, sqlstore.WithHooks(storeHooks))
//	handler := httpapi.New(plantstore.New(store), httpapi.WithHooks(httpHooks), …)
//	err = promstats.Webhooks(reg, dispatcher)
//	err = promstats.Process(reg) // plantstore_build_info, go_*, process_*
//	err = promstats.Server(reg, srv) // reloads and TLS handshakes of a *server.Server
//	err = promstats.LogWriter(reg, logs) // log lines a *server.LogWriter dropped
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// Nothing is registered anywhere but with the Registerer given. Hooks made
// with one Registerer share its collectors: the counts of several handlers
// or Stores add up. To tell them apart, give each a Registerer wrapped with
// [prometheus.WrapRegistererWith] and a label of its own. A function fails
// when the Registerer refuses a collector for a reason other than its
// being registered already.
package promstats

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// register registers c with reg and returns it, or the equal collector reg
// already has.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	if err != nil {
		return c, fmt.Errorf("promstats: register metrics: %w", err)
	}
	return c, nil
}

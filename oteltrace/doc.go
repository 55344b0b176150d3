// Package oteltrace traces with OpenTelemetry what packages httpapi,
// sqlstore and webhook report through their hooks. It links only the
// OpenTelemetry API and otelhttp, the API's instrumentation of net/http,
// and is the one package of plantstore that does: a host that mounts
// httpapi without it links no tracing library at all. The host chooses
// the SDK, the exporter and the sampler, and gives their TracerProvider
// here.
//
//	store, err := sqlstore.OpenSQLite(ctx, "sqlite", "plants.db", sqlstore.WithHooks(oteltrace.Storage(tp)))
//	api := httpapi.New(plantstore.New(store), httpapi.WithHooks(oteltrace.HTTP()), …)
//	handler := oteltrace.Handler(api, tp)
//	d, psOpts, err := webhook.Start(ctx, store, subscribers, secret, webhook.WithHooks(oteltrace.Webhooks(tp)))
//
// The spans:
//
//   - the request's server span is otelhttp's, which [Handler] starts,
//     except for the routes machines poll (/healthz, /readyz, /metrics);
//     [HTTP] names it after the route ("POST /plants", "GET
//     /plants/{id}"), never after the path, and sets http.route and
//     url.path to the route, so that no plant id from a path reaches a
//     span;
//   - "storage.create", "storage.read", "storage.list", "storage.delete":
//     a Store's operation, a child of the request's span ([Storage]);
//   - "storage.commit_batch": a group-commit transaction, which stores
//     the Creates of several requests at once. It is a child of the first
//     Create it stores and links to the others, and each of those links
//     back to it, so that every request's trace leads to its commit;
//   - "webhook.attempt": one POST of an event to a subscriber
//     ([Webhooks]), a client span, sent with its traceparent. An attempt
//     is made later than the request, maybe by another process, from the
//     outbox, which keeps no trace context: each attempt is the root of a
//     trace of its own, found from the request by the plant id and
//     webhook id it carries.
//
// Nothing here reads a header's value other than the ones it writes:
// neither the Authorization header nor a token reaches a span.
package oteltrace

// instrumentation is the name and version of the tracers this package
// asks for.
const (
	instrumentation = "github.com/plantstore/plantstore/oteltrace"
	version         = "0.1.0"
)

// Package httpapi serves a [plantstore.PlantStore] over HTTP as the Plant
// Store API: POST /plants creates a plant, GET /plants lists them, GET
// /plants/{id} reads one, DELETE /plants/{id} removes one, all behind
// bearer authentication; GET /openapi.json describes it all, and GET
// /healthz and GET /readyz need no token. HEAD is served wherever GET is,
// with the same authentication, and OPTIONS on every path of the API
// answers 204 with Allow; [WithCORS] lets browsers' scripts in. With
// [WithDocs], GET /docs serves a human reference of the document, without a
// token (package apidocs has the page).
//
// Every failure is answered with an Error body, {"error": code, "message":
// text}, where code is the conventional HTTP status of the condition; the
// response status itself is the contract's 400 unless
// [WithConventionalStatus] is given.
//
// GET /healthz answers 200 whenever the process serves HTTP: it never
// touches the storage. GET /readyz answers 200 when the storage can take
// writes now (see [plantstore.PlantStore.Ready]): it pings the storage, or,
// while the latest create or delete failed for want of the storage (error
// 503 or 504), probes a write through [plantstore.WriteProber]. It answers
// 503 when that fails or does not end within [WithReadyTimeout]; one check
// answers every GET /readyz for [WithReadyInterval], or until a write's
// outcome changes, so that a flood of them costs the storage one check per
// interval.
//
// Storage failures come in bursts: the handler logs the first of each kind
// (storage unavailable, outcome unknown, authentication unavailable, not
// ready) at once, and then, while they recur, one summary line every 5
// seconds with their count. The access log ([WithAccessLog]) still has one
// line per request.
//
// Every response carries the request's id in X-Request-Id: the client's own
// when it sent a usable one, or else a generated one (see [RequestID]). The
// handler's log lines name it as request_id.
package httpapi

package httpapi

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/logthrottle"
	"github.com/plantstore/plantstore/internal/wire"
)

type handler struct {
	config
	ps *plantstore.PlantStore
	// routes is the router, behind the header limit and the CORS policy
	// when there are any.
	routes http.Handler
	// tooLarge is the error for a body over maxBody, made once.
	tooLarge *apiError
	// document is the OpenAPI document served, its servers set by
	// WithBaseURL.
	document       []byte
	documentLength []string
	ready          *readiness
	// storageLog is the logger of failures that come in bursts while the
	// storage is down: one line per kind every logSummaryInterval.
	storageLog *slog.Logger
}

// New returns an http.Handler serving ps as the Plant Store API. Mount it
// at the root of a server, or under a prefix given to [WithPrefix] (or,
// at a little more cost a request, with [http.StripPrefix]).
//
// The handler fails closed: unless [WithAuthenticator], [WithTokens] or
// [InsecureWithoutAuthentication] is given, it rejects every request that
// needs a token.
func New(ps *plantstore.PlantStore, opts ...Option) http.Handler {
	h := &handler{ps: ps, config: config{maxBody: DefaultMaxBodyBytes, maxPage: DefaultMaxPageBytes,
		readyTimeout: DefaultReadyTimeout, readyInterval: DefaultReadyInterval}}
	for _, o := range opts {
		o(&h.config)
	}
	if h.logger == nil {
		h.logger = slog.Default()
	}
	h.storageLog = slog.New(idHandler{logthrottle.New(h.logger.Handler(), logSummaryInterval)})
	h.logger = slog.New(idHandler{h.logger.Handler()})
	h.ready = &readiness{ps: ps, timeout: h.readyTimeout, interval: h.readyInterval}
	h.tooLarge = errBodyTooLarge(h.maxBody)
	if h.prefix != "" && (h.prefix[0] != '/' || strings.ContainsAny(h.prefix, ":*")) {
		panic("httpapi: WithPrefix(" + strconv.Quote(h.prefix) + "): a prefix begins with / and holds no : or *")
	}
	if h.baseURL == "" {
		h.baseURL = h.prefix
	}
	h.document = withServerURL(openAPIDocument, h.baseURL)
	h.documentLength = []string{strconv.Itoa(len(h.document))}
	if h.auth == nil && !h.noAuth {
		h.logger.Warn("httpapi: no authenticator configured; every request that needs a token is rejected")
	}

	r := httprouter.New()
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	r.HandleOPTIONS = true
	r.GlobalOPTIONS = http.HandlerFunc(h.options)
	r.HandleMethodNotAllowed = true
	r.NotFound = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.writeError(w, r, errNotFoundPath)
	})
	r.MethodNotAllowed = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.writeError(w, r, errMethod)
	})
	r.PanicHandler = h.recovered

	for _, rt := range api {
		handle := func(w http.ResponseWriter, req *http.Request, p httprouter.Params) { rt.handle(h, w, req, p) }
		if rt.token && !(rt.public != nil && rt.public(&h.config)) {
			handle = h.authenticated(handle)
		}
		r.Handle(rt.method, h.prefix+rt.pattern, handle)
		if rt.method == http.MethodGet {
			// HEAD is served wherever GET is, by the same handle: net/http
			// drops the body.
			r.Handle(http.MethodHead, h.prefix+rt.pattern, handle)
		}
	}
	h.routes = r
	if h.maxHeader > 0 {
		h.routes = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if headerBytes(req) > h.maxHeader {
				h.writeError(w, req, h.headerTooLarge)
				return
			}
			r.ServeHTTP(w, req)
		})
	}
	if h.cors != nil {
		h.routes = h.cors.handler(h.routes)
	}
	return h
}

// api is the handler's table of routes: the method and path pattern (in
// httprouter's syntax) of each, its handle, whether it needs a bearer
// token, unless public says otherwise for the handler's configuration,
// and whether machines poll it (see [Route.Polled]). GET routes serve HEAD
// too. The Routes that [Hooks] report are its patterns.
var api = [...]struct {
	method, pattern string
	handle          func(*handler, http.ResponseWriter, *http.Request, httprouter.Params)
	token           bool
	public          func(*config) bool
	polled          bool
}{
	{http.MethodPost, "/plants", (*handler).create, true, nil, false},
	{http.MethodGet, "/plants", (*handler).list, true, nil, false},
	{http.MethodGet, "/plants/:id", (*handler).plant, true, nil, false},
	{http.MethodDelete, "/plants/:id", (*handler).delete, true, nil, false},
	{http.MethodGet, "/openapi.json", (*handler).openAPI, false, nil, false},
	{http.MethodGet, "/healthz", (*handler).healthz, false, nil, true},
	{http.MethodGet, "/readyz", (*handler).readyz, false, nil, true},
	{http.MethodGet, "/metrics", (*handler).metrics, true, func(c *config) bool { return c.publicMetrics || c.metricsHandler == nil }, true},
	{http.MethodGet, "/docs", (*handler).docs, false, nil, false},
	{http.MethodGet, "/docs/:name", (*handler).docs, false, nil, false},
}

// metrics serves GET /metrics with the handler of [WithMetricsHandler],
// or answers 404 without one.
func (h *handler) metrics(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	if h.metricsHandler == nil {
		h.writeError(w, r, errNotFoundPath)
		return
	}
	h.metricsHandler.ServeHTTP(w, r)
}

// docs serves GET /docs and /docs/NAME with the handler of [WithDocs], or
// answers 404 without one. A 404 of the docs handler (a name it does not
// serve) is answered with the Error instead, as every path the handler
// does not serve is, and counted so.
func (h *handler) docs(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	if h.docsHandler == nil {
		h.writeError(w, r, errNotFoundPath)
		return
	}
	d := &docsWriter{ResponseWriter: w, h: h, r: r}
	if h.prefix != "" {
		// The docs handler serves /docs and /docs/NAME: give it the path
		// without the prefix, as StripPrefix would.
		u := *r.URL
		u.Path = strings.TrimPrefix(u.Path, h.prefix)
		r = r.WithContext(r.Context())
		r.URL = &u
	}
	h.docsHandler.ServeHTTP(d, r)
}

// A docsWriter passes the docs handler's answer on, but for a 404, which
// it answers with the handler's Error and whose body it drops.
type docsWriter struct {
	http.ResponseWriter
	h              *handler
	r              *http.Request
	wrote, dropped bool
}

func (d *docsWriter) WriteHeader(status int) {
	if d.wrote {
		return
	}
	d.wrote = true
	if status != http.StatusNotFound {
		d.ResponseWriter.WriteHeader(status)
		return
	}
	d.dropped = true
	hdr := d.ResponseWriter.Header()
	delete(hdr, "X-Content-Type-Options")
	delete(hdr, "Content-Length")
	d.h.writeError(d.ResponseWriter, d.r, errNotFoundPath)
}

func (d *docsWriter) Write(p []byte) (int, error) {
	if !d.wrote {
		d.WriteHeader(http.StatusOK)
	}
	if d.dropped {
		return len(p), nil
	}
	return d.ResponseWriter.Write(p)
}

// Unwrap gives http.ResponseController the writer underneath.
func (d *docsWriter) Unwrap() http.ResponseWriter { return d.ResponseWriter }

// ServeHTTP gives r its request id, then routes it, through the access log
// and the hooks when there are any.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r = withRequestID(w, r)
	if r.URL.RawPath != "" {
		r = escapedRoute(r)
	}
	if h.hooks.Routed != nil {
		h.hooks.Routed(r.Context(), h.routeOf(r.URL.Path), r.Method)
	}
	if h.accessLog != nil || h.hooks.Served != nil {
		h.serveLogged(w, r)
		return
	}
	h.routes.ServeHTTP(w, r)
}

// recovered answers a request whose handler panicked, and logs the panic
// with its stack.
func (h *handler) recovered(w http.ResponseWriter, r *http.Request, v any) {
	if v == http.ErrAbortHandler {
		panic(v)
	}
	h.logger.LogAttrs(r.Context(), slog.LevelError, "httpapi: panic serving request",
		slog.String("method", logSafe(r.Method)), slog.String("path", logSafe(r.URL.Path)),
		slog.Any("panic", v), slog.String("stack", string(debug.Stack())))
	h.writeError(w, r, errInternal)
}

// authenticated wraps next so that it runs only for requests the
// authenticator accepts. The body is not read before that.
func (h *handler) authenticated(next httprouter.Handle) httprouter.Handle {
	if h.noAuth {
		return next
	}
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
		token, aerr := bearerToken(r.Header)
		if aerr != nil {
			h.writeError(w, r, aerr)
			return
		}
		if h.auth == nil {
			aerr = errNoAuthenticator
			if token == "" {
				aerr = errMissingToken
			}
			h.writeError(w, r, aerr)
			return
		}
		if err := h.auth.Authenticate(r, token); err != nil {
			h.writeError(w, r, h.rejection(r, err, token == ""))
			return
		}
		next(w, r, p)
	}
}

func (h *handler) create(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	if !isJSONContentType(r.Header["Content-Type"]) {
		h.writeError(w, r, errContentType)
		return
	}
	if ce := r.Header["Content-Encoding"]; len(ce) > 0 && !(len(ce) == 1 && asciiEqualFold(ce[0], "identity")) {
		h.writeError(w, r, errContentEncoding)
		return
	}
	if r.ContentLength > h.maxBody {
		h.writeError(w, r, h.tooLarge)
		return
	}
	buf := bufPool.Get().(*buffer)
	defer putBuffer(buf)
	body, err := h.readBody(buf, r.Body)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	np, err := decodeNewPlant(body)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	p, err := h.ps.Create(r.Context(), np)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	buf.b = appendPlant(buf.b[:0], p, false)
	writeJSON(w, http.StatusOK, buf.b)
}

// list answers GET /plants with a page of at most the limit's plants and
// at most the handler's page bytes (see [WithMaxPageBytes]), with a Link
// to the next page unless the page reached the last plant. It asks the
// storage for listChunk plants at a time, fewer once the plants' size is
// known, so that what the storage returns is bounded too; a page always
// holds a plant when there is one, however large, so that paging goes on.
func (h *handler) list(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	opts, err := listOptions(r)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	budget := h.maxPage
	b := make([]byte, 1, min(64*opts.Limit+2, budget+2))
	b[0] = '['
	n, more := 0, true
	var last int64
	chunk := plantstore.ListOptions{After: opts.After, HasAfter: opts.HasAfter}
fill:
	for n < opts.Limit {
		chunk.Limit = min(opts.Limit-n, listChunk)
		if n > 0 {
			// Ask for what the rest of the budget holds at the average
			// size so far, plus one to learn whether the page is full.
			perPlant := max((len(b)-1)/n, 1)
			chunk.Limit = min(chunk.Limit, max(budget-len(b), 0)/perPlant+1)
		}
		plants, err := h.ps.List(r.Context(), chunk)
		if err != nil {
			h.writeError(w, r, err)
			return
		}
		for _, p := range plants {
			mark := len(b)
			if n > 0 {
				b = append(b, ',')
			}
			b = appendPlant(b, p, true)
			if n > 0 && len(b)+1 > budget {
				b = b[:mark]
				break fill
			}
			n++
			last = p.ID
		}
		if len(plants) < chunk.Limit {
			more = false
			break
		}
		chunk.After, chunk.HasAfter = last, true
	}
	if more {
		// A query-only reference keeps the request's path, so the link
		// stays right when the handler is mounted under a prefix.
		w.Header()["Link"] = []string{"<?limit=" + strconv.Itoa(opts.Limit) +
			"&after=" + strconv.FormatInt(last, 10) + `>; rel="next"`}
	}
	b = append(b, ']')
	writeJSON(w, http.StatusOK, b)
}

// listOptions reads GET /plants's query: limit, an integer between 1 and
// MaxListLimit (DefaultListLimit when absent), and after, an int64 id.
// Each may be given once. A query that does not parse (a bad escape, a
// semicolon separator) is refused rather than read in part.
func listOptions(r *http.Request) (plantstore.ListOptions, error) {
	opts := plantstore.ListOptions{Limit: plantstore.DefaultListLimit}
	if r.URL.RawQuery == "" {
		return opts, nil
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return opts, errMalformedQuery
	}
	if v, ok := q["limit"]; ok {
		if len(v) > 1 {
			return opts, errRepeated("limit")
		}
		n, err := strconv.Atoi(v[0])
		if err != nil || n < 1 || n > plantstore.MaxListLimit {
			return opts, &apiError{code: wire.CodeInvalid,
				msg: wire.Invalid("limit", "must be an integer from 1 to "+strconv.Itoa(plantstore.MaxListLimit))}
		}
		opts.Limit = n
	}
	if v, ok := q["after"]; ok {
		if len(v) > 1 {
			return opts, errRepeated("after")
		}
		n, ok := canonicalInt(v[0])
		if !ok {
			return opts, &apiError{code: wire.CodeInvalid, msg: wire.Invalid("after", "must be a 64-bit signed integer in canonical decimal form")}
		}
		opts.After, opts.HasAfter = n, true
	}
	return opts, nil
}

// errRepeated is the error for a query parameter given more than once.
func errRepeated(name string) error {
	return &apiError{code: wire.CodeInvalid, msg: wire.Invalid(name, "given more than once")}
}

// pathID reads the id of /plants/{id}. Only the canonical decimal form of
// an int64 is accepted ("0", or digits without a leading zero after an
// optional "-"), so that one plant has one path: "+1", "01" and "1.0" are
// not ids.
func pathID(p httprouter.Params) (int64, error) {
	id, ok := canonicalInt(p.ByName("id"))
	if !ok {
		return 0, errBadID
	}
	return id, nil
}

// canonicalInt parses s as an int64 written in canonical decimal form: 0,
// or an optional minus sign and digits that do not begin with 0. Ids in
// paths and cursors take this form only, so that one id has one spelling
// ("+1", "01" and "-0" are none).
func canonicalInt(s string) (int64, bool) {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || (digits[0] == '0' && len(s) > 1) || digits[0] < '0' || digits[0] > '9' {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

func (h *handler) plant(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
	id, err := pathID(p)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	plant, err := h.ps.Plant(r.Context(), id)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	buf := bufPool.Get().(*buffer)
	defer putBuffer(buf)
	buf.b = appendPlant(buf.b[:0], plant, true)
	writeJSON(w, http.StatusOK, buf.b)
}

func (h *handler) delete(w http.ResponseWriter, r *http.Request, p httprouter.Params) {
	id, err := pathID(p)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if err := h.ps.Delete(r.Context(), id); err != nil {
		h.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *handler) healthz(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	writeJSON(w, http.StatusOK, statusOK)
}

func (h *handler) openAPI(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
	hdr := w.Header()
	hdr["Cache-Control"] = noCacheValue
	// net/http works out the length of small bodies only; a HEAD request
	// gets it too this way.
	hdr["Content-Length"] = h.documentLength
	writeJSON(w, http.StatusOK, h.document)
}

// readBody reads the whole body into buf, refusing one over h.maxBody
// bytes without reading past one byte more.
//
// [bytes.Buffer.ReadFrom] grows the buffer only once the bytes already
// received fill it, so that memory follows what the client has sent, not
// what its Content-Length claims: a client that announces a large body
// and trickles it in holds no more than the pooled buffer, and one that
// sends n bytes holds about 2n at most.
func (h *handler) readBody(buf *buffer, body io.Reader) ([]byte, error) {
	bb := bytes.NewBuffer(buf.b[:0])
	buf.limit = io.LimitedReader{R: body, N: h.maxBody + 1}
	_, err := bb.ReadFrom(&buf.limit)
	buf.limit.R = nil
	buf.b = bb.Bytes()
	if int64(len(buf.b)) > h.maxBody {
		return nil, h.tooLarge
	}
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, h.tooLarge
		}
		return nil, errReadBody
	}
	return buf.b, nil
}

// A buffer is a reusable byte slice. Buffers that grew past maxPooled are
// not kept. limit is readBody's reader of the body: pooled with the slice
// rather than made per request by io.LimitReader, which escapes to the heap
// through bytes.Buffer.ReadFrom.
type buffer struct {
	b     []byte
	limit io.LimitedReader
}

const maxPooled = 64 << 10

var bufPool = sync.Pool{New: func() any { return &buffer{b: make([]byte, 0, 1024)} }}

func putBuffer(b *buffer) {
	if cap(b.b) <= maxPooled {
		bufPool.Put(b)
	}
}

// Header values and bodies shared by every response that sends them.
var (
	jsonContentType = []string{"application/json"}
	closeValue      = []string{"close"}
	noCacheValue    = []string{"no-cache"}
	statusOK        = []byte(`{"status":"ok"}`)
	statusReady     = []byte(`{"status":"ready"}`)
)

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(status)
	w.Write(body)
}

// isJSONContentType reports whether a request's Content-Type is
// application/json, in any case and with any parameters.
func isJSONContentType(v []string) bool {
	if len(v) != 1 {
		return false
	}
	s, _, _ := strings.Cut(v[0], ";")
	s = strings.Trim(s, " \t")
	return asciiEqualFold(s, "application/json")
}

// accessRecorder notes what a response said, for the access log.
type accessRecorder struct {
	http.ResponseWriter
	status int
	code   int
}

func (a *accessRecorder) WriteHeader(status int) {
	if a.status == 0 {
		a.status = status
	}
	a.ResponseWriter.WriteHeader(status)
}

func (a *accessRecorder) Write(b []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	return a.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (a *accessRecorder) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// recorderPool keeps the accessRecorders of requests that are done.
var recorderPool = sync.Pool{New: func() any { return new(accessRecorder) }}

// serveLogged serves r through a recorder of what it was answered, for
// the access line and the Served hook.
func (h *handler) serveLogged(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := recorderPool.Get().(*accessRecorder)
	*rec = accessRecorder{ResponseWriter: w}
	defer func() {
		h.served(r, rec, start)
		*rec = accessRecorder{}
		recorderPool.Put(rec)
	}()
	h.routes.ServeHTTP(rec, r)
}

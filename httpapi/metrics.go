package httpapi

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// WithMetrics makes the handler count its requests and time them, in
// collectors registered with reg:
//
//   - plantstore_http_requests_total{route, method, error}, a counter;
//   - plantstore_http_request_duration_seconds{route, method}, a histogram.
//
// route is the pattern a request's path matched ("/plants",
// "/plants/{id}", "/openapi.json", "/healthz", "/readyz"), or "other" for
// any path that matches none, so that no path a client makes up becomes a
// series. method is the request's method, or "other" for a method HTTP does
// not define. error is the code of the Error answered, or "" for a
// success. Handlers given the same reg share the collectors: their counts
// add up.
//
// Nothing is registered anywhere else: exporting reg (for example with
// promhttp.HandlerFor) is the caller's choice. [New] panics, as
// [prometheus.Registerer.MustRegister] does, when reg refuses the
// collectors for a reason other than their being registered already.
func WithMetrics(reg prometheus.Registerer) Option {
	return func(c *config) { c.registerer = reg }
}

// The routes the handler serves, as metric labels. routeOther stands for
// every path that is none of them.
const (
	routeOther = iota
	routePlants
	routePlant
	routeOpenAPI
	routeHealthz
	routeReadyz
	numRoutes
)

var routeLabels = [numRoutes]string{"other", "/plants", "/plants/{id}", "/openapi.json", "/healthz", "/readyz"}

// routeOf returns the route that path matches, as the router matches it:
// "/plants/{id}" is one non-empty path segment after "/plants/".
func routeOf(path string) int {
	switch path {
	case "/plants":
		return routePlants
	case "/openapi.json":
		return routeOpenAPI
	case "/healthz":
		return routeHealthz
	case "/readyz":
		return routeReadyz
	}
	if id, ok := strings.CutPrefix(path, "/plants/"); ok && id != "" && strings.IndexByte(id, '/') < 0 {
		return routePlant
	}
	return routeOther
}

// methodLabels are the methods counted by name; any other is "other",
// the last index.
var methodLabels = [...]string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE", "other"}

const numMethods = len(methodLabels)

func methodOf(m string) int {
	switch m {
	case "GET":
		return 0
	case "HEAD":
		return 1
	case "POST":
		return 2
	case "PUT":
		return 3
	case "PATCH":
		return 4
	case "DELETE":
		return 5
	case "OPTIONS":
		return 6
	case "CONNECT":
		return 7
	case "TRACE":
		return 8
	}
	return numMethods - 1
}

// codeLabels are the Error codes the handler answers with, and "" for a
// success, at index 0.
var codeLabels = [...]string{"", "400", "401", "404", "405", "409", "413", "415", "500", "503", "504", "403", "431"}

const numCodes = len(codeLabels)

// codeOf returns the index of an Error code in codeLabels, or -1 for a
// code not there.
func codeOf(code int) int {
	switch code {
	case 0:
		return 0
	case http.StatusBadRequest:
		return 1
	case http.StatusUnauthorized:
		return 2
	case http.StatusNotFound:
		return 3
	case http.StatusMethodNotAllowed:
		return 4
	case http.StatusConflict:
		return 5
	case http.StatusRequestEntityTooLarge:
		return 6
	case http.StatusUnsupportedMediaType:
		return 7
	case http.StatusInternalServerError:
		return 8
	case http.StatusServiceUnavailable:
		return 9
	case http.StatusGatewayTimeout:
		return 10
	case http.StatusForbidden:
		return 11
	case http.StatusRequestHeaderFieldsTooLarge:
		return 12
	}
	return -1
}

// durationBuckets are the request duration histogram's upper bounds, in
// seconds: from 25 µs, a request on memory storage, to 10 s, beyond which
// a client has long given up.
var durationBuckets = []float64{
	0.000025, 0.00005, 0.0001, 0.00025, 0.0005,
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

// httpMetrics counts and times the requests of one handler.
//
// Looking a child up in a vector by its label values hashes them and takes
// a lock, so each child is looked up once and kept here by index. Children
// of the routes the handler serves are made with the handler; the others
// when first used, so that combinations that never happen are not
// exported as zeros.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec

	counters  [numRoutes][numMethods][numCodes]atomic.Pointer[prometheus.Counter]
	observers [numRoutes][numMethods]atomic.Pointer[prometheus.Observer]
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "plantstore_http_requests_total",
			Help: "HTTP requests answered, by route pattern, method and the answered Error's code (\"\" for a success).",
		}, []string{"route", "method", "error"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "plantstore_http_request_duration_seconds",
			Help:    "Time from a request's arrival at the handler to the end of its answer, by route pattern and method.",
			Buckets: durationBuckets,
		}, []string{"route", "method"}),
	}
	m.requests = register(reg, m.requests)
	m.duration = register(reg, m.duration)
	for _, rm := range [...]struct{ route, method int }{
		{routePlants, methodOf("POST")},
		{routePlants, methodOf("GET")},
		{routePlant, methodOf("GET")},
		{routePlant, methodOf("DELETE")},
		{routeOpenAPI, methodOf("GET")},
		{routeHealthz, methodOf("GET")},
		{routeReadyz, methodOf("GET")},
	} {
		m.counter(rm.route, rm.method, 0)
		m.observer(rm.route, rm.method)
	}
	return m
}

// register registers c with reg and returns it, or the equal collector reg
// already has.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	err := reg.Register(c)
	if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	if err != nil {
		panic("httpapi: register metrics: " + err.Error())
	}
	return c
}

// counter returns the request counter for the given indexes. code is an
// index in codeLabels.
func (m *httpMetrics) counter(route, method, code int) prometheus.Counter {
	p := &m.counters[route][method][code]
	if c := p.Load(); c != nil {
		return *c
	}
	c := m.requests.WithLabelValues(routeLabels[route], methodLabels[method], codeLabels[code])
	p.Store(&c)
	return c
}

func (m *httpMetrics) observer(route, method int) prometheus.Observer {
	p := &m.observers[route][method]
	if o := p.Load(); o != nil {
		return *o
	}
	o := m.duration.WithLabelValues(routeLabels[route], methodLabels[method])
	p.Store(&o)
	return o
}

// observe counts and times a request that started at start and ended at
// end, answered with the Error code, or 0 for a success. A zero end is read
// from the clock here: with an access log, the end it read serves both,
// for a clock read costs about as much as the rest of observe.
func (m *httpMetrics) observe(r *http.Request, code int, start, end time.Time) {
	if m == nil {
		return
	}
	if end.IsZero() {
		end = time.Now()
	}
	route, method := routeOf(r.URL.Path), methodOf(r.Method)
	if i := codeOf(code); i >= 0 {
		m.counter(route, method, i).Inc()
	} else {
		m.requests.WithLabelValues(routeLabels[route], methodLabels[method], strconv.Itoa(code)).Inc()
	}
	m.observer(route, method).Observe(end.Sub(start).Seconds())
}

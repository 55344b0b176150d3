package promstats

import (
	"strconv"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plantstore/plantstore/httpapi"
)

// HTTP returns the [httpapi.Hooks] that count and time the requests of a
// handler in collectors registered with reg:
//
//   - plantstore_http_requests_total{route, method, error}, a counter;
//   - plantstore_http_request_duration_seconds{route, method}, a histogram.
//
// route is the pattern the request's path matched ([httpapi.Route]: "/plants",
// "/plants/{id}", …, or "other" for any path that matches none, so that no
// path a client makes up becomes a series). method is the request's method,
// or "other" for one HTTP does not define. error is the code of the Error
// answered, or "" for a success. The success series of each route and
// method the handler serves are there from the start, at zero.
func HTTP(reg prometheus.Registerer) (httpapi.Hooks, error) {
	requests, err := register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "plantstore_http_requests_total",
		Help: "HTTP requests answered, by route pattern, method and the answered Error's code (\"\" for a success).",
	}, []string{"route", "method", "error"}))
	if err != nil {
		return httpapi.Hooks{}, err
	}
	duration, err := register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "plantstore_http_request_duration_seconds",
		Help:    "Time from a request's arrival at the handler to the end of its answer, by route pattern and method.",
		Buckets: httpBuckets,
	}, []string{"route", "method"}))
	if err != nil {
		return httpapi.Hooks{}, err
	}
	m := &httpMetrics{requests: requests, duration: duration}
	codes := httpapi.ErrorCodes()
	m.codeLabels = make([]string, 1, len(codes)+1) // "" for a success
	for _, c := range codes {
		m.codeIndex[c] = uint8(len(m.codeLabels))
		m.codeLabels = append(m.codeLabels, strconv.Itoa(c))
	}
	routes := httpapi.Routes()
	m.counters = make([][numMethods][]atomic.Pointer[prometheus.Counter], len(routes))
	m.observers = make([][numMethods]atomic.Pointer[prometheus.Observer], len(routes))
	for _, r := range routes {
		for i := range numMethods {
			m.counters[r][i] = make([]atomic.Pointer[prometheus.Counter], len(m.codeLabels))
		}
		for _, method := range r.Methods() {
			m.counter(r, methodIndex(method), 0)
			m.observer(r, methodIndex(method))
		}
	}
	return httpapi.Hooks{Served: m.served}, nil
}

// httpBuckets are the request duration histogram's upper bounds, in
// seconds: from 25 µs, a request on memory storage, to 10 s, beyond which
// a client has long given up.
var httpBuckets = []float64{
	0.000025, 0.00005, 0.0001, 0.00025, 0.0005,
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
	0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

// methodLabels are the methods HTTP defines, counted by name; any other is
// "other", the last.
var methodLabels = [...]string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE", "other"}

const numMethods = len(methodLabels)

func methodIndex(m string) int {
	for i, l := range methodLabels[:numMethods-1] {
		if m == l {
			return i
		}
	}
	return numMethods - 1
}

// httpMetrics counts and times the requests of the handlers given its
// hooks.
//
// Looking a child up in a vector by its label values hashes them and takes
// a lock, so each child is looked up once and kept by index: route, method
// and the code's index in codeLabels. The children of a success on the
// handler's routes are made at once; the others when first used, so that
// combinations that never happen are not exported as zeros.
type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec

	codeLabels []string
	codeIndex  [600]uint8 // an Error code's index in codeLabels; 0 for none

	counters  [][numMethods][]atomic.Pointer[prometheus.Counter]
	observers [][numMethods]atomic.Pointer[prometheus.Observer]
}

func (m *httpMetrics) counter(r httpapi.Route, method, code int) prometheus.Counter {
	p := &m.counters[r][method][code]
	if c := p.Load(); c != nil {
		return *c
	}
	c := m.requests.WithLabelValues(r.String(), methodLabels[method], m.codeLabels[code])
	p.Store(&c)
	return c
}

func (m *httpMetrics) observer(r httpapi.Route, method int) prometheus.Observer {
	p := &m.observers[r][method]
	if o := p.Load(); o != nil {
		return *o
	}
	o := m.duration.WithLabelValues(r.String(), methodLabels[method])
	p.Store(&o)
	return o
}

func (m *httpMetrics) served(s httpapi.Served) {
	method := methodIndex(s.Method)
	if int(s.Route) >= len(m.counters) {
		s.Route = httpapi.RouteOther
	}
	if s.Code == 0 {
		m.counter(s.Route, method, 0).Inc()
	} else if s.Code > 0 && s.Code < len(m.codeIndex) && m.codeIndex[s.Code] != 0 {
		m.counter(s.Route, method, int(m.codeIndex[s.Code])).Inc()
	} else {
		m.requests.WithLabelValues(s.Route.String(), methodLabels[method], strconv.Itoa(s.Code)).Inc()
	}
	m.observer(s.Route, method).Observe(s.Duration.Seconds())
}

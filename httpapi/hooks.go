package httpapi

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Hooks are told what the handler does, so that a caller can count and
// time it (package promstats does, for Prometheus) or trace it (package
// oteltrace does, for OpenTelemetry). The handler calls the funcs that are
// not nil, on the request's goroutine; they must be safe for concurrent
// use, and quick, for the answer waits for them. With no Hooks the handler
// does none of this work, and reads no clock for it.
type Hooks struct {
	// Served is called once a request has been answered.
	Served func(Served)
	// Routed is called as a request reaches the handler, before it is
	// served, with the request's context, the Route its path matches and
	// its method: a tracer names the request's span after the route, so
	// that no span is named after a path a client made up.
	Routed func(ctx context.Context, route Route, method string)
}

// WithHooks makes the handler call h. Several WithHooks add up, as
// [net/http/httptrace.WithClientTrace] does: each of a request's events
// is told to every set, in the order the sets were given, so that metrics
// (package promstats) and tracing (package oteltrace) are each given as
// they come, and neither drops the other. A field only one set fills is
// called as it is, at no cost over that set alone.
func WithHooks(h Hooks) Option {
	return func(c *config) { c.hooks = c.hooks.join(h) }
}

// join returns hooks that call h's, then next's.
func (h Hooks) join(next Hooks) Hooks {
	served, routed := h.Served, h.Routed
	switch {
	case served == nil:
		served = next.Served
	case next.Served != nil:
		first, second := served, next.Served
		served = func(s Served) {
			first(s)
			second(s)
		}
	}
	switch {
	case routed == nil:
		routed = next.Routed
	case next.Routed != nil:
		first, second := routed, next.Routed
		routed = func(ctx context.Context, route Route, method string) {
			first(ctx, route, method)
			second(ctx, route, method)
		}
	}
	return Hooks{Served: served, Routed: routed}
}

// Served describes a request the handler answered, for [Hooks]: what an
// access log line or a metric needs.
type Served struct {
	// Route is the route pattern the request's path matched, whatever its
	// method, or RouteOther.
	Route Route
	// Method is the request's method, and Path its path, as sent.
	Method, Path string
	// Status is the HTTP status of the answer.
	Status int
	// Code is the code of the Error answered, the conventional HTTP
	// status of the failure, or 0 for a success.
	Code int
	// RequestID is the request's id; see [RequestID].
	RequestID string
	// Start is when the request reached the handler, and Duration the
	// time from then to the end of its answer.
	Start    time.Time
	Duration time.Duration
	// Context is the request's context, for what a hook reads of it,
	// such as the request's span.
	Context context.Context
}

// A Route is one of the route patterns the handler serves, or RouteOther,
// which stands for every path that matches none of them, so that no path
// a client makes up counts apart. Its String is the pattern as the OpenAPI
// document writes it ("/plants/{id}"), or "other".
type Route uint8

// RouteOther is the Route of a path that matches none of the handler's.
const RouteOther Route = 0

func (r Route) String() string {
	if int(r) < len(routeLabels) {
		return routeLabels[r]
	}
	return routeLabels[RouteOther]
}

// Methods returns the methods the handler serves on r, in the order of
// its table, HEAD left out: it is served wherever GET is.
func (r Route) Methods() []string {
	var ms []string
	for i, rt := range api {
		if apiRoutes[i] == r {
			ms = append(ms, rt.method)
		}
	}
	return ms
}

// Polled reports whether r is a route that machines ask for every few
// seconds: the probes of load balancers and orchestrators (/healthz,
// /readyz) and the scrapes of a metrics collector (/metrics). A span or an
// info-level log line of each would drown those of the API's own
// requests, so tracing leaves them out and access logs write their
// successes at debug level.
func (r Route) Polled() bool {
	for i, rt := range api {
		if apiRoutes[i] == r && rt.polled {
			return true
		}
	}
	return false
}

// Routes returns every Route a [Served] may hold, RouteOther first, then
// the handler's route patterns in the order of its table.
func Routes() []Route {
	rs := make([]Route, len(routeLabels))
	for i := range rs {
		rs[i] = Route(i)
	}
	return rs
}

// routeLabels and routePatterns are the handler's distinct path patterns,
// from its table, api: the label as the OpenAPI document writes it, and
// each pattern's segments, a ":" one matching any one non-empty segment,
// as httprouter matches it. Index 0 is RouteOther. apiRoutes holds the
// Route of each entry of api.
var routeLabels, routePatterns, apiRoutes = func() (labels []string, patterns [][]string, routes [len(api)]Route) {
	labels = []string{"other"}
	patterns = [][]string{nil}
	for i, rt := range api {
		label := rt.pattern
		segs := strings.Split(strings.TrimPrefix(rt.pattern, "/"), "/")
		for j, s := range segs {
			if name, ok := strings.CutPrefix(s, ":"); ok {
				segs[j] = ":"
				label = strings.Replace(label, s, "{"+name+"}", 1)
			}
		}
		k := slices.Index(labels, label)
		if k < 0 {
			k = len(labels)
			labels = append(labels, label)
			patterns = append(patterns, segs)
		}
		routes[i] = Route(k)
	}
	return labels, patterns, routes
}()

// RouteOf returns the Route that path, relative to the handler, matches:
// what [Served] and [Hooks.Routed] report for a request of that path.
func RouteOf(path string) Route { return routeOf(path) }

// routeOf returns the Route path, which begins with the handler's prefix,
// matches.
func (h *handler) routeOf(path string) Route {
	if h.prefix != "" {
		rest, ok := strings.CutPrefix(path, h.prefix)
		if !ok {
			return RouteOther
		}
		path = rest
	}
	return routeOf(path)
}

// routeOf returns the Route path matches.
func routeOf(path string) Route {
	for i := 1; i < len(routePatterns); i++ {
		if p := routePatterns[i]; len(p) == 1 && p[0] != ":" {
			// A pattern of one literal segment is its label: compare
			// whole strings, as most requests' routes are such.
			if path == routeLabels[i] {
				return Route(i)
			}
		} else if matches(p, path) {
			return Route(i)
		}
	}
	return RouteOther
}

// matches reports whether path matches the segments of a pattern as
// httprouter matches them: a ":" segment matches any one non-empty
// segment, any other only itself.
func matches(pattern []string, path string) bool {
	rest, ok := strings.CutPrefix(path, "/")
	if !ok {
		return false
	}
	for i, seg := range pattern {
		s, after, more := strings.Cut(rest, "/")
		if more != (i < len(pattern)-1) || seg == ":" && s == "" || seg != ":" && s != seg {
			return false
		}
		rest = after
	}
	return true
}

// served writes the access line of r, which started at start and was
// answered by rec, and calls the Served hook, with one reading of the
// clock for its end.
func (h *handler) served(r *http.Request, rec *accessRecorder, start time.Time) {
	s := Served{
		Route:     h.routeOf(r.URL.Path),
		Method:    r.Method,
		Path:      r.URL.Path,
		Status:    rec.status,
		Code:      rec.code,
		RequestID: RequestID(r.Context()),
		Start:     start,
		Duration:  time.Since(start),
		Context:   r.Context(),
	}
	if h.accessLog != nil {
		h.accessLog.write(&s)
	}
	if h.hooks.Served != nil {
		h.hooks.Served(s)
	}
}

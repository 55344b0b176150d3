package httpapi

import "net/http"

// This file holds the bounds the handler keeps on what one request may
// make it spend or reach: the plants a list asks the storage for, the
// header bytes, and the routing of escaped paths.

// listChunk is the most plants the list handler asks the storage for at
// once: with plants as large as a body may be, a chunk of them is what
// one request holds in memory beyond its page.
const listChunk = 64

// escapedRoute returns r with its path in the escaped form the client
// sent, for a path whose %-escapes decoding changes (net/url then sets
// RawPath). The router matches the path it is given, and the decoded one
// would let /plants%2F1 reach plant 1, and /plants/%31 name it under a
// second spelling; matched as sent, the first is no route (404) and the
// second no id (400). No route of the API has a segment that needs an
// escape, so no request that should be served is turned away.
func escapedRoute(r *http.Request) *http.Request {
	u := *r.URL
	u.Path, u.RawPath = u.RawPath, ""
	r = r.WithContext(r.Context())
	r.URL = &u
	return r
}

// headerBytes returns how many bytes r's request line and headers took,
// counted as HTTP/1.1 sends them; net/http has taken Host and
// Transfer-Encoding out of the header map, and they are counted back.
func headerBytes(r *http.Request) int {
	n := len(r.Method) + 1 + len(r.RequestURI) + 1 + len(r.Proto) + 2 + 2
	if r.Host != "" {
		n += len("Host: ") + len(r.Host) + 2
	}
	for _, te := range r.TransferEncoding {
		n += len("Transfer-Encoding: ") + len(te) + 2
	}
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + 2 + len(v) + 2
		}
	}
	return n
}

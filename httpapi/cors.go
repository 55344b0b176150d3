package httpapi

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// WithCORS lets scripts on web pages of the given origins call the API
// from a browser (Cross-Origin Resource Sharing, in the Fetch standard).
// An origin is matched exactly as the browser sends it in the Origin
// header: scheme, host and any port, such as "https://app.example.com" or
// "http://localhost:3000"; "*" allows any origin. Several calls add up.
//
// A preflight (OPTIONS with Origin and Access-Control-Request-Method) from
// an allowed origin is answered 204 with Access-Control-Allow-Origin, the
// path's methods in Access-Control-Allow-Methods, the request headers
// Authorization, Content-Type and X-Request-Id in
// Access-Control-Allow-Headers, and Access-Control-Max-Age. Every other
// answer to an allowed origin carries Access-Control-Allow-Origin and
// exposes the Link, X-Request-Id and WWW-Authenticate headers to the
// script. A request from any other origin gets no CORS header, so the
// browser keeps its answer from the script.
//
// CORS opens no door past authentication: a preflight needs no token
// because it does nothing, and the actual request still needs one.
// Cookies are never used, so Access-Control-Allow-Credentials is not sent.
//
// WithCORS panics, as [Tokens] does on a token no request can send, when
// an origin is not "" and fails [CheckOrigin]: no browser would ever send
// it, so a server configured with it would refuse the very pages it was
// meant for without a word. Check origins that come from outside the
// program with CheckOrigin first. Empty origins are ignored.
func WithCORS(origins ...string) Option {
	for _, o := range origins {
		if err := CheckOrigin(o); err != nil && o != "" {
			panic(fmt.Sprintf("httpapi: WithCORS: origin %q: %v", o, err))
		}
	}
	return func(c *config) {
		if c.cors == nil {
			c.cors = &corsPolicy{origins: map[string]bool{}}
		}
		for _, o := range origins {
			if o == "*" {
				c.cors.any = true
			} else if o != "" {
				c.cors.origins[o] = true
			}
		}
	}
}

// ErrNotAnOrigin is [CheckOrigin]'s error for a value that is no origin
// at all.
var ErrNotAnOrigin = errors.New(`want "*" or an origin such as https://app.example.com or http://localhost:3000`)

// An OriginFormError is [CheckOrigin]'s error for an origin written in a
// form that browsers never send, such as with a path, a default port or
// capitals.
type OriginFormError struct {
	Want string // the origin as browsers send it
}

func (e *OriginFormError) Error() string {
	return fmt.Sprintf("browsers send this origin as %q; give that", e.Want)
}

// CheckOrigin returns nil when s is an origin [WithCORS] can match: "*",
// or an origin exactly as a browser sends it in the Origin header
// (lowercase scheme and host, the port only when it is not the scheme's
// default, no path). Anything else would never match: it returns an
// *[OriginFormError] naming the form to give when s names an origin in
// another form, and an error wrapping [ErrNotAnOrigin] when it names none:
// not http or https, a user part, a wildcard (https://*.example.com: give
// each origin, or "*"), a host that is neither a DNS name nor an IP
// address (https://.), or a port outside 1 to 65535. Its errors read
// as the reason after the value, and are meant to stop a program at
// start, where an origin ignored would be a mystery.
func CheckOrigin(s string) error {
	if s == "*" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return ErrNotAnOrigin
	}
	if err := checkOriginHost(u); err != nil {
		return err
	}
	host := strings.ToLower(u.Host)
	if port := u.Port(); port == "80" && u.Scheme == "http" || port == "443" && u.Scheme == "https" {
		host = strings.ToLower(u.Hostname())
	}
	if origin := u.Scheme + "://" + host; s != origin {
		return &OriginFormError{Want: origin}
	}
	return nil
}

// checkOriginHost returns an error wrapping ErrNotAnOrigin when u's host
// is not one a browser can send: a DNS name of letters, digits, - and _
// in labels of 1 to 63 characters, an IPv4 address, or an IPv6 address in
// brackets, and a port from 1 to 65535 if any.
func checkOriginHost(u *url.URL) error {
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("port %s: a port is 1 to 65535; %w", p, ErrNotAnOrigin)
		}
	}
	host := u.Hostname()
	if strings.Contains(host, "*") {
		return fmt.Errorf("an origin has no wildcards: list each origin, or give \"*\" for any; %w", ErrNotAnOrigin)
	}
	if strings.HasPrefix(u.Host, "[") {
		if ip := net.ParseIP(host); ip == nil || ip.To4() != nil && !strings.Contains(host, ":") {
			return fmt.Errorf("host %q is not an IPv6 address; %w", host, ErrNotAnOrigin)
		}
		return nil
	}
	if len(host) > 253 {
		return fmt.Errorf("host name longer than 253 characters; %w", ErrNotAnOrigin)
	}
	for label := range strings.SplitSeq(host, ".") {
		if !validLabel(label) {
			return fmt.Errorf("host %q is not a DNS name or an IP address; %w", host, ErrNotAnOrigin)
		}
	}
	return nil
}

// validLabel reports whether l is one label of a DNS name, as browsers
// send it: 1 to 63 letters, digits, - and _, not beginning or ending
// with -.
func validLabel(l string) bool {
	if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
		return false
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// corsMaxAge is how long, in seconds, a browser may reuse a preflight's
// answer: an hour, under the two hours Chromium allows at most.
const corsMaxAge = 3600

// CORS header values shared by every response that sends them.
var (
	anyOrigin        = []string{"*"}
	originVary       = []string{"Origin"}
	corsAllowHeaders = []string{"Authorization, Content-Type, X-Request-Id"}
	corsExpose       = []string{"Link, X-Request-Id, WWW-Authenticate"}
	corsMaxAgeValue  = []string{strconv.Itoa(corsMaxAge)}
)

// A corsPolicy is the set of origins [WithCORS] allows.
type corsPolicy struct {
	any     bool
	origins map[string]bool
}

// allowOrigin returns the Access-Control-Allow-Origin value for r, or nil
// when r comes from no allowed origin.
func (c *corsPolicy) allowOrigin(r *http.Request) []string {
	origin := r.Header["Origin"]
	if len(origin) != 1 {
		return nil
	}
	if c.any {
		return anyOrigin
	}
	if c.origins[origin[0]] {
		return origin
	}
	return nil
}

// handler wraps next so that its answers to allowed origins carry
// Access-Control-Allow-Origin, and, but for preflights, the headers
// scripts may read.
func (c *corsPolicy) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hdr := w.Header()
		// The answer depends on the Origin header, even with "*": a
		// request without one gets no Access-Control-Allow-Origin. A cache
		// must not hand one origin's answer, or one without, to another.
		if v, ok := hdr["Vary"]; ok {
			hdr["Vary"] = append(v, originVary[0])
		} else {
			hdr["Vary"] = originVary
		}
		if allow := c.allowOrigin(r); allow != nil {
			hdr["Access-Control-Allow-Origin"] = allow
			if !isPreflight(r) {
				hdr["Access-Control-Expose-Headers"] = corsExpose
			}
		}
		next.ServeHTTP(w, r)
	})
}

// preflight adds to hdr, which already holds the path's Allow, the headers
// of an answer to a preflight from an allowed origin.
func (c *corsPolicy) preflight(hdr http.Header, r *http.Request) {
	if c.allowOrigin(r) == nil {
		return
	}
	hdr["Access-Control-Allow-Methods"] = hdr["Allow"]
	hdr["Access-Control-Allow-Headers"] = corsAllowHeaders
	hdr["Access-Control-Max-Age"] = corsMaxAgeValue
}

// isPreflight reports whether r is a CORS preflight request.
func isPreflight(r *http.Request) bool {
	return r.Method == http.MethodOptions && len(r.Header["Origin"]) > 0 &&
		len(r.Header["Access-Control-Request-Method"]) > 0
}

package main

import (
	"fmt"
	"net/url"
	"strings"
)

// redactDSN hides the secrets of a database URL before it is logged: the
// password of its user part, and the value of every query parameter that
// secretParam names. A URL may list several hosts
// (postgres://h1:5432,h2:5433/db), as libpq's and pgx's do. What is not a
// URL is returned as it is: no other -db form holds a password. The other
// parameters keep their order and their spelling.
func redactDSN(db string) string {
	u, err := parseDBURL(db)
	if err != nil || u.Scheme == "" {
		if strings.Contains(db, "://") {
			return "(a database URL that does not parse)"
		}
		return db
	}
	if u.RawQuery != "" {
		params := strings.Split(u.RawQuery, "&")
		for i, p := range params {
			name, _, hasValue := strings.Cut(p, "=")
			if n, err := url.QueryUnescape(name); err == nil {
				name = n
			}
			if hasValue && secretParam(name) {
				params[i] = p[:strings.IndexByte(p, '=')] + "=xxxxx"
			}
		}
		u.RawQuery = strings.Join(params, "&")
	}
	return u.Redacted()
}

// secretParam reports whether a database URL's query parameter may hold a
// secret: its name, in any case, contains "pass", "secret", "token" or
// "key". That covers libpq's and pgx's password, sslpassword and passfile,
// and names such as api_key or auth_token that a driver or proxy may add.
// It also hides sslkey and passfile, which hold paths rather than
// secrets: a rule by name that errs on the side of hiding is easier to
// trust than a list of exceptions.
func secretParam(name string) bool {
	name = strings.ToLower(name)
	for _, s := range []string{"pass", "secret", "token", "key"} {
		if strings.Contains(name, s) {
			return true
		}
	}
	return false
}

// parseDBURL parses a URL whose host part may be a comma-separated list of
// host[:port], which net/url refuses: it parses the URL with one stand-in
// host, checks each host on its own, and puts the list back.
func parseDBURL(s string) (*url.URL, error) {
	_, rest, ok := strings.Cut(s, "://")
	if !ok {
		return url.Parse(s)
	}
	authority := rest
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority = rest[:i]
	}
	hosts := authority[strings.LastIndex(authority, "@")+1:]
	if !strings.Contains(hosts, ",") {
		return url.Parse(s)
	}
	for h := range strings.SplitSeq(hosts, ",") {
		if _, err := url.Parse("postgres://" + h); err != nil || h == "" {
			return nil, fmt.Errorf("host %q in a database URL: %v", h, err)
		}
	}
	start := len(s) - len(rest) + len(authority) - len(hosts)
	u, err := url.Parse(s[:start] + "multi.host.invalid" + s[start+len(hosts):])
	if err != nil {
		return nil, err
	}
	u.Host = hosts
	return u, nil
}

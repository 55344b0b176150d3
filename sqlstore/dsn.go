package sqlstore

import (
	"fmt"
	"net/url"
	"strings"
)

// RedactDSN hides the secrets of a database URL so that it can be logged
// or shown: the password of its user part, and the value of every query
// parameter whose name, in any case, contains "pass", "secret", "token" or
// "key". That covers libpq's and pgx's password, sslpassword and
// passfile, and names such as api_key or auth_token that a driver or proxy
// may add; it also hides sslkey and passfile, which hold paths rather
// than secrets: a rule by name that errs on the side of hiding is easier
// to trust than a list of exceptions. The other parameters keep their
// order and their spelling.
//
// A URL may list several hosts (postgres://h1:5432,h2:5433/db), as
// libpq's and pgx's do. A string with "://" that does not parse as a URL
// is replaced whole, since where its password is cannot be told; any
// other string, such as a SQLite file's path, is returned as it is.
func RedactDSN(dsn string) string {
	u, err := parseDBURL(dsn)
	if err != nil || u.Scheme == "" {
		if strings.Contains(dsn, "://") {
			return "(a database URL that does not parse)"
		}
		return dsn
	}
	if u.RawQuery != "" {
		params := strings.Split(u.RawQuery, "&")
		for i, p := range params {
			name, _, hasValue := strings.Cut(p, "=")
			if hasValue && secretParam(unescapeParam(name)) {
				params[i] = p[:strings.IndexByte(p, '=')] + "=xxxxx"
			}
		}
		u.RawQuery = strings.Join(params, "&")
	}
	return u.Redacted()
}

// unescapeParam returns a query parameter's name or value as it reads
// once unescaped, or as it is when it does not unescape.
func unescapeParam(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

// secretParam reports whether a database URL's query parameter may hold a
// secret: see [RedactDSN].
func secretParam(name string) bool {
	name = strings.ToLower(name)
	for _, s := range []string{"pass", "secret", "token", "key"} {
		if strings.Contains(name, s) {
			return true
		}
	}
	return false
}

// dsnSecrets returns what RedactDSN hides in dsn, each as written and as
// it reads unescaped, so that an error that quotes the URL can be
// scrubbed of them.
func dsnSecrets(dsn string) []string {
	u, err := parseDBURL(dsn)
	if err != nil {
		return nil
	}
	var secrets []string
	if pw, ok := u.User.Password(); ok {
		secrets = append(secrets, pw, url.UserPassword("", pw).String()[1:])
	}
	for p := range strings.SplitSeq(u.RawQuery, "&") {
		name, value, _ := strings.Cut(p, "=")
		if value != "" && secretParam(unescapeParam(name)) {
			secrets = append(secrets, value, unescapeParam(value))
		}
	}
	return secrets
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

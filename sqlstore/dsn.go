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
// libpq's and pgx's do. libpq's keyword/value form (host=h password=p)
// keeps its keywords and hides the values of the same names. A string that
// may hold a password but whose form cannot be told apart is never
// returned, in whole or in part: it is replaced by a description of its
// shape, such as "(a database URL that does not parse)" or "(a postgres:
// value without // after the scheme)". That covers a URL without "//"
// (postgres:u:p@h/db, postgres:/u:p@h/db, postgres:://u:p@h), one
// without its scheme's colon (postgres//u:p@h/db: anything without a
// scheme that holds a colon before an @), and keyword/value strings whose
// quotes do not close. A SQLite file's path, or a sqlite: or file: URL,
// is returned as it is but for its secret query parameters.
func RedactDSN(dsn string) string {
	scheme, rest, ok := splitScheme(dsn)
	switch {
	case !ok && looksLikeKeywords(dsn):
		return redactKeywords(dsn)
	case !ok:
		if at := strings.LastIndexByte(dsn, '@'); at >= 0 && strings.Contains(dsn[:at], ":") {
			return "(a value with user:password@ but no scheme: not a database URL)"
		}
		return dsn
	case !strings.HasPrefix(rest, "//"):
		if s := strings.ToLower(scheme); s == "sqlite" || s == "file" {
			return redactURL(dsn)
		}
		return "(a " + scheme + ": value without // after the scheme)"
	}
	return redactURL(dsn)
}

// redactURL returns the URL dsn with its password and secret query
// parameters hidden, or, when it does not parse, a description of its
// shape (a path that does not parse as a URL is returned as it is).
func redactURL(dsn string) string {
	u, err := parseDBURL(dsn)
	if err != nil {
		if strings.Contains(dsn, "://") {
			return "(a database URL that does not parse)"
		}
		return dsn
	}
	if u.RawQuery == "" && u.User == nil {
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

// splitScheme returns the scheme of s and what follows its colon, when s
// begins with one (RFC 3986: a letter, then letters, digits, +, - and .).
// A single letter is a Windows drive, not a scheme.
func splitScheme(s string) (scheme, rest string, ok bool) {
	i := strings.IndexByte(s, ':')
	if i < 2 {
		return "", s, false
	}
	for j := 0; j < i; j++ {
		c := s[j]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case j > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return "", s, false
		}
	}
	return s[:i], s[i+1:], true
}

// looksLikeKeywords reports whether s begins as libpq's keyword/value
// form does: a keyword of letters, digits and _, then = (spaces may
// surround it).
func looksLikeKeywords(s string) bool {
	s = strings.TrimLeft(s, " \t\n")
	i := strings.IndexFunc(s, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_')
	})
	if i <= 0 {
		return false
	}
	return strings.HasPrefix(strings.TrimLeft(s[i:], " \t"), "=")
}

// A keyword is one keyword=value pair of libpq's keyword/value form, as
// offsets into the string: the value is s[start:end], quotes included.
type keyword struct {
	name       string
	start, end int
}

// parseKeywords splits libpq's keyword/value form (keyword = value,
// separated by spaces; a value in single quotes may hold spaces, and \
// escapes the next character), or reports false when s is not in it.
// pgconn.ParseConfig parses the same, but sqlstore links no driver, and
// redacting must work for whichever the host registered.
func parseKeywords(s string) ([]keyword, bool) {
	var kws []keyword
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
	i := 0
	for {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i == len(s) {
			return kws, len(kws) > 0
		}
		k := i
		for i < len(s) && s[i] != '=' && !isSpace(s[i]) {
			i++
		}
		name := s[k:i]
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if name == "" || i == len(s) || s[i] != '=' {
			return nil, false
		}
		i++
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		start := i
		quoted := i < len(s) && s[i] == '\''
		if quoted {
			i++
		}
		for ; i < len(s); i++ {
			c := s[i]
			if c == '\\' {
				i++
				continue
			}
			if quoted && c == '\'' || !quoted && isSpace(c) {
				break
			}
		}
		if quoted {
			if i >= len(s) {
				return nil, false // the quote does not close
			}
			i++
		}
		if i > len(s) {
			return nil, false // a \ at the very end
		}
		kws = append(kws, keyword{name, start, i})
	}
}

// redactKeywords returns libpq's keyword/value string s with the value
// of every secret keyword (see [RedactDSN]) replaced by xxxxx, or a
// description of its shape when it does not parse.
func redactKeywords(s string) string {
	kws, ok := parseKeywords(s)
	if !ok {
		return "(a keyword=value connection string that does not parse)"
	}
	var b strings.Builder
	last := 0
	for _, kw := range kws {
		if secretParam(kw.name) && kw.end > kw.start {
			b.WriteString(s[last:kw.start])
			b.WriteString("xxxxx")
			last = kw.end
		}
	}
	b.WriteString(s[last:])
	return b.String()
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
	var secrets []string
	if _, _, ok := splitScheme(dsn); !ok {
		kws, _ := parseKeywords(dsn)
		for _, kw := range kws {
			if v := dsn[kw.start:kw.end]; v != "" && secretParam(kw.name) {
				secrets = append(secrets, v, strings.Trim(v, "'"))
			}
		}
		return secrets
	}
	u, err := parseDBURL(dsn)
	if err != nil {
		return nil
	}
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

package client

import "strings"

// nextLink returns the target, as written, of the first link whose
// relation types include "next" in a response's Link header values
// (RFC 8288, section 3). It gives up, returning false, at the first
// syntax it cannot read.
func nextLink(values []string) (string, bool) {
	for _, v := range values {
		for {
			v = trimOWS(v)
			if v == "" {
				break
			}
			if v[0] == ',' {
				v = v[1:]
				continue
			}
			if v[0] != '<' {
				return "", false
			}
			end := strings.IndexByte(v, '>')
			if end < 0 {
				return "", false
			}
			target := v[1:end]
			v = v[end+1:]
			next, relSeen := false, false
			for {
				v = trimOWS(v)
				if v == "" || v[0] == ',' {
					break
				}
				if v[0] != ';' {
					return "", false
				}
				v = trimOWS(v[1:])
				i := 0
				for i < len(v) && isTokenChar(v[i]) {
					i++
				}
				name := v[:i]
				v = trimOWS(v[i:])
				value := ""
				if v != "" && v[0] == '=' {
					var ok bool
					value, v, ok = paramValue(trimOWS(v[1:]))
					if !ok {
						return "", false
					}
				}
				// Only a link's first rel parameter counts (section 3.3).
				if strings.EqualFold(name, "rel") && !relSeen {
					relSeen = true
					for _, r := range strings.Fields(value) {
						if strings.EqualFold(r, "next") {
							next = true
						}
					}
				}
			}
			if next {
				return target, true
			}
		}
	}
	return "", false
}

// paramValue reads a parameter's value, a token or a quoted string, from
// the start of s, and returns it and the rest of s.
func paramValue(s string) (value, rest string, ok bool) {
	if s == "" || s[0] != '"' {
		i := 0
		for i < len(s) && isTokenChar(s[i]) {
			i++
		}
		return s[:i], s[i:], true
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return b.String(), s[i+1:], true
		case c == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
		default:
			b.WriteByte(c)
		}
	}
	return "", "", false // unterminated
}

func trimOWS(s string) string { return strings.TrimLeft(s, " \t") }

// isTokenChar reports whether c may appear in an HTTP token (RFC 9110,
// section 5.6.2).
func isTokenChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

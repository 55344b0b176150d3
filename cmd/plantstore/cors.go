package main

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// checkOrigin checks a -cors-origin value: "*", or an origin exactly as a
// browser sends it in the Origin header (lowercase scheme and host, the
// port only when it is not the scheme's default, no path). Anything else
// would never match, so it is refused at startup rather than ignored; when
// the value names an origin in another form, the error gives the form to
// use.
func checkOrigin(s string) error {
	if s == "*" {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return errors.New(`want "*" or an origin such as https://app.example.com or http://localhost:3000`)
	}
	host := strings.ToLower(u.Host)
	if port := u.Port(); port == "80" && u.Scheme == "http" || port == "443" && u.Scheme == "https" {
		host = strings.ToLower(u.Hostname())
	}
	if origin := u.Scheme + "://" + host; s != origin {
		return fmt.Errorf("browsers send this origin as %q; give that", origin)
	}
	return nil
}

package main

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// errNotAnOrigin is checkOrigin's error for a value that is no origin.
var errNotAnOrigin = errors.New(`want "*" or an origin such as https://app.example.com or http://localhost:3000`)

// An originFormError is checkOrigin's error for an origin written in a
// form that browsers never send.
type originFormError struct {
	Want string // the origin as browsers send it
}

func (e *originFormError) Error() string {
	return fmt.Sprintf("browsers send this origin as %q; give that", e.Want)
}

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
		return errNotAnOrigin
	}
	host := strings.ToLower(u.Host)
	if port := u.Port(); port == "80" && u.Scheme == "http" || port == "443" && u.Scheme == "https" {
		host = strings.ToLower(u.Hostname())
	}
	if origin := u.Scheme + "://" + host; s != origin {
		return &originFormError{Want: origin}
	}
	return nil
}

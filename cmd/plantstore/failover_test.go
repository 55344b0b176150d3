package main

import (
	"net"
	"net/url"
	"strings"
	"testing"
)

// deadAddr returns a loopback host:port nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestMultiHostDSN runs the server on a PostgreSQL URL listing two hosts,
// the first of which refuses connections: it serves from the second, and
// logs both hosts but not the password.
func TestMultiHostDSN(t *testing.T) {
	dsn := postgresDSN(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	hosts := deadAddr(t) + "," + u.Host
	multi := strings.Replace(dsn, "://"+u.User.String()+"@"+u.Host, "://"+u.User.Username()+":s3cret@"+hosts, 1) +
		"&target_session_attrs=read-write"
	if !strings.Contains(multi, hosts) {
		t.Fatalf("could not put two hosts into %s", dsn)
	}
	if kind, where, err := parseDB(multi); kind != postgresStorage || where != multi || err != nil {
		t.Fatalf("parseDB(%q) = %v, %q, %v; want PostgreSQL", multi, kind, where, err)
	}
	url, _, stderr, stop := startRun(t, []string{"-addr", "127.0.0.1:0", "-db", multi}, map[string]string{"PLANTSTORE_TOKENS": "t"})
	if status, body := post(t, url, "t", `{"id":1,"name":"two hosts"}`); status != 200 {
		t.Errorf("create = %d %s, want 200", status, body)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	logs := stderr.String()
	if !strings.Contains(logs, ":xxxxx@"+hosts+"/") {
		t.Errorf("the log does not name both hosts with the password hidden:\n%s", logs)
	}
	if strings.Contains(logs, "s3cret") {
		t.Errorf("the log holds the password:\n%s", logs)
	}
}

// Package faultproxy is a TCP proxy for tests that can cut every
// connection it forwards and refuse new ones, as a database host that goes
// away would, and then come back; or stall them, as a frozen host or a
// broken network would, holding every byte until it resumes; or do either
// right after a given request, as a process stopped mid-transaction would
// leave it.
package faultproxy

import (
	"bytes"
	"net"
	"sync"
	"testing"
	"time"
)

// A Proxy forwards TCP connections from a loopback address to a target.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
	// trigger, when set, is a byte string that makes the proxy Cut, or
	// Stall when not triggerCuts, right after forwarding the client's
	// chunk that holds it; triggerDone is closed then.
	trigger     []byte
	triggerCuts bool
	triggerDone chan struct{}
	// resumed is closed while the proxy forwards bytes; Stall replaces it
	// with an open channel that Resume closes.
	resumed chan struct{}
	wg      sync.WaitGroup
}

// New starts a Proxy to target on 127.0.0.1 and stops it in t.Cleanup.
func New(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}, resumed: make(chan struct{})}
	close(p.resumed)
	p.wg.Go(p.serve)
	t.Cleanup(func() {
		ln.Close()
		p.Cut()
		p.Resume()
		p.wg.Wait()
	})
	return p
}

// Addr returns the host:port clients connect to.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Go(func() { p.forward(c) })
	}
}

// track records c as open, or closes it and reports false when the proxy
// is down.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) forward(client net.Conn) {
	if !p.track(client) {
		return
	}
	defer p.untrack(client)
	server, err := net.DialTimeout("tcp", p.target, 2*time.Second)
	if err != nil {
		client.Close()
		return
	}
	if !p.track(server) {
		client.Close()
		return
	}
	defer p.untrack(server)
	var wg sync.WaitGroup
	wg.Go(func() {
		p.pipe(server, client, true)
		server.Close()
		client.Close()
	})
	wg.Go(func() {
		p.pipe(client, server, false)
		client.Close()
		server.Close()
	})
	wg.Wait()
}

// pipe forwards src to dst, holding each chunk while the proxy stalls.
// From the client, a chunk holding the armed trigger fires it: the check
// is made before the chunk is sent, and every answer is held from then
// until the connections are cut or stalled, so that neither an answer to
// it nor a chunk sent before the trigger was armed can get ahead of it.
func (p *Proxy) pipe(dst, src net.Conn, fromClient bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.waitResumed()
			var fired chan struct{}
			var cut bool
			if fromClient {
				fired, cut = p.take(buf[:n])
			}
			if fired != nil {
				p.Stall()
			}
			_, werr := dst.Write(buf[:n])
			if fired != nil {
				if cut {
					p.Cut()
					p.Resume()
				}
				close(fired)
				if cut {
					return
				}
			}
			if werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// take disarms the trigger and returns its channel, and whether it cuts
// rather than stalls, when chunk holds it.
func (p *Proxy) take(chunk []byte) (fired chan struct{}, cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.trigger == nil || !bytes.Contains(chunk, p.trigger) {
		return nil, false
	}
	fired, cut = p.triggerDone, p.triggerCuts
	p.trigger, p.triggerDone = nil, nil
	return fired, cut
}

func (p *Proxy) waitResumed() {
	p.mu.Lock()
	resumed := p.resumed
	p.mu.Unlock()
	<-resumed
}

// Stall makes the proxy hold every byte it reads, in both directions,
// until Resume: connections stay open and nothing arrives, as with a
// frozen database host. Bytes a client sent before it gave up still reach
// the server after Resume, as a network would deliver them late.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.resumed:
		p.resumed = make(chan struct{})
	default:
	}
}

// Resume forwards what Stall held, and everything after it.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.resumed:
	default:
		close(p.resumed)
	}
}

// CutAfter arms the proxy to Cut once a client sends a chunk that holds
// trigger, right after forwarding that chunk to the server: the server gets
// the request, the client never gets the answer. The returned channel is
// closed when that has happened.
func (p *Proxy) CutAfter(trigger []byte) <-chan struct{} {
	return p.arm(trigger, true)
}

// StallAfter arms the proxy to Stall once a client sends a chunk that
// holds trigger, right after forwarding that chunk to the server: the
// server runs the request, and whatever transaction it is part of stays
// open, as when the client process is stopped. The returned channel is
// closed when that has happened.
func (p *Proxy) StallAfter(trigger []byte) <-chan struct{} {
	return p.arm(trigger, false)
}

func (p *Proxy) arm(trigger []byte, cut bool) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trigger = bytes.Clone(trigger)
	p.triggerCuts = cut
	p.triggerDone = make(chan struct{})
	return p.triggerDone
}

// untrack forgets a connection forward is done with.
func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// Cut closes every forwarded connection and refuses new ones until
// Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		c.Close()
	}
}

// Restore makes the proxy forward new connections again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

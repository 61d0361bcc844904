package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/Shopify/toxiproxy/v2/toxics"
)

// The two streams of a connection, in toxiproxy's words.
const (
	toServer = "upstream"   // requests, from the client to the server
	toClient = "downstream" // replies, from the server to the client
)

// Latency delays the data in each direction by d, give or take a random
// jitter of up to jitter, so that a request and its reply take at least
// 2*(d-jitter) longer; a client's timeouts then have to allow for it. Both
// are rounded up to whole milliseconds. While the delay is in place, data
// is delayed but never reordered or dropped. It reports an error unless
// 0 <= jitter <= d.
//
// The returned function removes the delay, as [Proxy.Clear] does with
// every fault; calling it again does nothing.
func (p *Proxy) Latency(d, jitter time.Duration) (remove func()) {
	p.helper()
	if d < 0 || jitter < 0 || jitter > d {
		p.fail("faults: Latency(%v, %v): want 0 <= jitter <= d", d, jitter)
		return func() {}
	}
	latency := &toxics.LatencyToxic{Latency: millis(d), Jitter: millis(jitter)}
	return p.add("latency", latency, toServer, toClient)
}

// Blackhole makes the proxy drop all data in both directions while keeping
// every connection open, as a network partition does: commands hang until
// the client's own read timeout, and new connections are accepted but never
// answered. Unlike [Proxy.Cut], nothing tells the client that the
// connection is gone.
//
// The returned function removes the blackhole, as [Proxy.Clear] does with
// every fault; calling it again does nothing.
func (p *Proxy) Blackhole() (remove func()) {
	p.helper()
	return p.add("timeout", &toxics.TimeoutToxic{Timeout: 0}, toServer, toClient)
}

// BlackholeReplies drops every reply but lets requests through: Redis runs
// each command, and the client times out without knowing that it ran. This
// is the ambiguous failure a lock must handle: a lock that was granted to a
// client that saw only a timeout. Only a connection that is already open
// gets so far: on a new one the client's handshake times out, and go-redis
// sends no command.
//
// The returned function removes the fault, as [Proxy.Clear] does with every
// fault; calling it again does nothing.
func (p *Proxy) BlackholeReplies() (remove func()) {
	p.helper()
	return p.add("timeout", &toxics.TimeoutToxic{Timeout: 0}, toClient)
}

// ResetPeer makes the proxy close a connection as soon as the client sends
// anything on it, before the data reaches the server, so the command does
// not run. New connections are accepted, and closed in the same way on
// their first request. A connection opened while the fault is in place is
// reset (TCP RST: a read gets "connection reset by peer"); one that was
// already open is closed normally (a read gets EOF), because toxiproxy sets
// SO_LINGER only when a connection opens. go-redis reports both as EOF.
//
// The returned function removes the fault, as [Proxy.Clear] does with every
// fault; calling it again does nothing.
func (p *Proxy) ResetPeer() (remove func()) {
	p.helper()
	return p.add("reset_peer", &toxics.ResetToxic{Timeout: 0}, toServer)
}

// Clear removes every fault added by Latency, Blackhole, BlackholeReplies
// and ResetPeer. It does not restore a cut proxy.
//
// Removing faults closes every connection through the proxy, as a Cut
// immediately followed by a Restore would, and drops the data they held
// back: clients reconnect, go-redis on its next command, and start afresh.
// toxiproxy cannot take a fault off open connections safely (see the
// package documentation), and after a blackhole the Redis protocol on them
// is out of step anyway.
func (p *Proxy) Clear() {
	p.helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.quiesce(func() { p.proxy.Toxics.ResetToxics(context.Background()) })
}

// add adds a toxic of typ with attributes attrs on each of streams, and
// returns a function that removes them. toxiproxy takes a toxic only as
// JSON, as its HTTP API does, but it is added in-process.
func (p *Proxy) add(typ string, attrs toxics.Toxic, streams ...string) (remove func()) {
	p.helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.toxics++
	var names []string
	for _, stream := range streams {
		toxic := toxics.ToxicWrapper{
			Toxic:    attrs,
			Name:     fmt.Sprintf("%s-%d-%s", typ, p.toxics, stream),
			Type:     typ,
			Stream:   stream,
			Toxicity: 1, // every connection
		}
		if err := p.addToxic(&toxic); err != nil {
			p.removeToxics(names)
			p.fail("faults: add a %s toxic to proxy %s: %v", typ, p.addr, err)
			return func() {}
		}
		names = append(names, toxic.Name)
	}
	return sync.OnceFunc(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.removeToxics(names)
	})
}

// addToxic adds toxic to the proxy, which starts it on every open
// connection in toxic.Stream. The caller holds p.mu.
func (p *Proxy) addToxic(toxic *toxics.ToxicWrapper) error {
	data, err := json.Marshal(toxic)
	if err != nil {
		return err
	}
	p.do(func() { _, err = p.proxy.Toxics.AddToxicJson(bytes.NewReader(data)) })
	return err
}

// removeToxics removes the toxics named names, which Clear may have removed
// already. The caller holds p.mu.
func (p *Proxy) removeToxics(names []string) {
	if len(names) == 0 {
		return
	}
	p.quiesce(func() {
		for _, name := range names {
			_ = p.proxy.Toxics.RemoveToxic(context.Background(), name) // not found after Clear
		}
	})
}

// millis returns d in whole milliseconds, rounded up, as toxiproxy takes it.
func millis(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

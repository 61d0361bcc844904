package faults

import (
	"testing"

	"github.com/dlock-go/dlock/redistest"
)

// Node is a redis-server behind a proxy of its own, one of the independent
// nodes of a quorum. Clients connect to the proxy, node.Proxy.Client(), so
// that a test can break the network to one node (Proxy) as well as crash,
// pause or restart the node itself (Server).
type Node struct {
	Server *redistest.Server
	Proxy  *Proxy
}

// Nodes starts n independent redis-servers, as redistest.NewServers does
// with opts, and puts each behind its own proxy, as [New] does. Everything
// is stopped by the test's cleanup: the clients first, then the proxies,
// then the servers. It must be called from the test's goroutine.
func Nodes(t testing.TB, n int, opts ...redistest.Option) []Node {
	t.Helper()
	servers := redistest.NewServers(t, n, opts...)
	nodes := make([]Node, len(servers))
	for i, srv := range servers {
		nodes[i] = Node{Server: srv, Proxy: New(t, srv.Addr())}
	}
	return nodes
}

package redistest

import "strings"

// ClusterBusPort returns the port of the server's cluster bus, which other
// nodes need in CLUSTER MEET 127.0.0.1 PORT BUSPORT, or 0 if the server is
// not a cluster node or its [WithArgs] set --cluster-port themselves.
//
// A server started with --cluster-enabled yes gets a free bus port of its
// own (--cluster-port), kept across restarts, rather than Redis's default
// of its port plus 10000, which may be taken, and is above 65535 for a port
// above 55535: about a fifth of the ports Linux hands out by default.
// ClusterBusPort is safe for concurrent use.
func (s *Server) ClusterBusPort() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.busPort
}

// freePorts returns a free port for the server and, if it is a cluster
// node that needs one, a different free port for its cluster bus.
func (s *Server) freePorts() (port, busPort int, err error) {
	port, err = freePort()
	if err != nil || !needsBusPort(s.args) {
		return port, 0, err
	}
	for {
		busPort, err = freePort()
		if err != nil || busPort != port {
			return port, busPort, err
		}
	}
}

// needsBusPort reports whether args make the server a cluster node without
// choosing its cluster bus port. Later arguments override earlier ones, as
// in redis-server.
func needsBusPort(args []string) bool {
	enabled, portSet := false, false
	for i, arg := range args {
		switch strings.ToLower(arg) {
		case "--cluster-enabled":
			enabled = i+1 < len(args) && strings.EqualFold(args[i+1], "yes")
		case "--cluster-port":
			portSet = true
		}
	}
	return enabled && !portSet
}

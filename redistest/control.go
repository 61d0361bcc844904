package redistest

// current returns the server's process, or nil after Kill.
func (s *Server) current() *process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

// Running reports whether the server's process is alive. A paused server is
// running; a server that exited by itself (after SHUTDOWN, say) is not.
// Running is safe for concurrent use.
func (s *Server) Running() bool {
	p := s.current()
	return p != nil && !p.exited()
}

// Kill kills the server with SIGKILL, as a crash would, and waits for the
// process to exit. Its data is lost, and clients get connection errors until
// [Server.Start]. Killing a server that is not running does nothing. A paused
// server can be killed.
func (s *Server) Kill() {
	p := s.current()
	if p == nil {
		return
	}
	p.kill()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == p {
		s.proc = nil
	}
}

// Pause stops the server with SIGSTOP and waits until the process is stopped.
// It keeps its port and its connections, and the kernel still accepts new
// connections for it, but nothing is answered until [Server.Resume]: commands
// hang until their client times out. It fails the test if the server is not
// running.
func (s *Server) Pause() {
	s.t.Helper()
	p := s.current()
	if p == nil || p.exited() {
		s.t.Fatalf("redistest: Pause: server %s is not running", s.Addr())
		return
	}
	if err := stopProcess(p.cmd.Process); err != nil {
		s.t.Fatalf("redistest: Pause: server %s: %v", s.Addr(), err)
		return
	}
	if err := waitStopped(p); err != nil {
		s.t.Fatalf("redistest: Pause: server %s: %v", s.Addr(), err)
	}
}

// Resume continues a paused server with SIGCONT; it then answers the commands
// that were waiting. Resuming a running server that is not paused does
// nothing. It fails the test if the server is not running.
func (s *Server) Resume() {
	s.t.Helper()
	p := s.current()
	if p == nil || p.exited() {
		s.t.Fatalf("redistest: Resume: server %s is not running", s.Addr())
		return
	}
	if err := continueProcess(p.cmd.Process); err != nil {
		s.t.Fatalf("redistest: Resume: server %s: %v", s.Addr(), err)
	}
}

// Start starts the server again on the same port, after [Server.Kill] or after
// it exited by itself, and waits until it answers PING. The new server has an
// empty dataset. Start retries for up to two seconds while the port is still
// in use, and fails the test if the server is running or does not start.
func (s *Server) Start() {
	s.t.Helper()
	if s.Running() {
		s.t.Fatalf("redistest: Start: server %s is already running", s.Addr())
		return
	}
	if err := s.startOnPortRetrying(s.Port()); err != nil {
		s.t.Fatalf("%v", err)
	}
}

// Restart kills the server and starts it again on the same port, as
// [Server.Kill] and [Server.Start] do. The dataset is lost.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	s.Start()
}

package redistest

import (
	"fmt"
	"os"
)

// Shared wraps the tests of a package, m (its *testing.M), so that they
// share one redis-server: the Run of what it returns starts the server,
// sets *addr to its address, runs the tests, and stops the server. Hand it
// to what runs the tests and then looks at what they left behind, such as
// goleak's VerifyTestMain, so that the server is gone by then:
//
//	var redisAddr string
//
//	func TestMain(m *testing.M) {
//		goleak.VerifyTestMain(redistest.Shared(m, &redisAddr))
//	}
//
// If the server cannot start, Run says why on standard error and returns 1
// without running any test.
func Shared(m interface{ Run() int }, addr *string) interface{ Run() int } {
	return sharedRun{m: m, addr: addr}
}

type sharedRun struct {
	m    interface{ Run() int }
	addr *string
}

func (s sharedRun) Run() int {
	srv, stop, err := Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	*s.addr = srv.Addr()
	return s.m.Run()
}

// Package testenv is the environment every test of dlock runs in: a
// TestMain that checks for leaked goroutines and may share one
// redis-server among the package's tests, keys unique to a test, clients
// of the shared server, contexts bounded in time, and the one wait for a
// condition that other goroutines or Redis bring about.
//
// A package's main_test.go reads:
//
//	var redisAddr string
//
//	func TestMain(m *testing.M) {
//		testenv.Main(m, testenv.SharedServer(&redisAddr), testenv.IgnoreRedial())
//	}
//
// testenv imports no part of dlock but redistest, so that the tests inside
// dlock's own packages (package dlock, internal/...) can use it too. Its
// sub-package lockenv adds what needs the root package: a dlock Client
// closed with the test.
package testenv

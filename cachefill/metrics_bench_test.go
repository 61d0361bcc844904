package cachefill_test

import "testing"

// BenchmarkGetHitUnobserved is a Get that finds its entry, on a Client
// without an Observer: what the metrics cost a program that does not use
// them (allocs/op, compared before and after they were added).
func BenchmarkGetHitUnobserved(b *testing.B) {
	benchGetHit(b, newBenchCache(b), "k", []byte("v"))
}

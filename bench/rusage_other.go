//go:build !unix

package bench

import "time"

// processCPU returns 0: getrusage is a Unix call.
func processCPU() time.Duration { return 0 }

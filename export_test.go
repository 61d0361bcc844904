package dlock

import "github.com/dlock-go/dlock/internal/engine"

// FairLease for the external tests, which check the bounds it sets.
const FairLease = engine.FairLease

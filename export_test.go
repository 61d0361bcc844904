package dlock

// fairLease for the external tests, which check the bounds it sets.
const FairLease = fairLease

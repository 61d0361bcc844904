// Package acltest holds the tests of dlock and its packages under Redis
// ACL users, and nothing else: that every script touches only the keys its
// call declares (so that it runs on a server that checks them, and under
// an ACL user allowed exactly its keys), that a user allowed the
// application's keys alone gets an error naming the rule it lacks, and
// that the ACL docs/compat.md documents is enough for every feature, over
// TLS too.
package acltest

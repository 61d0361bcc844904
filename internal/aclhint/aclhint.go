// Package aclhint names the rule a Redis user's ACL lacks when Redis
// refuses a call for it: Redis's own reply (NOPERM, or a script's command
// refused) does not say which. The engine and the packages that run
// scripts of their own (stock, cachefill) wrap the errors of their calls
// with it; docs/compat.md has the whole ACL a deployment needs.
package aclhint

import (
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Error is a Redis reply refusing a call because the ACL of the Redis user
// it runs as lacks a permission, with the rule that is missing, as far as
// the reply tells it.
type Error struct {
	// Missing names the rule the user lacks, in ACL SETUSER's words
	// ("~dlock:*", "&dlock:*", "+evalsha"), or what to look for where
	// the reply does not tell which
	Missing string
	Err     error // Redis's reply
}

// Error is Redis's reply followed by the rule that is missing.
func (e *Error) Error() string {
	return e.Err.Error() + " (the Redis user's ACL lacks " + e.Missing + "; see dlock's docs/compat.md)"
}

// Unwrap returns Redis's reply.
func (e *Error) Unwrap() error { return e.Err }

// Rules are what a call needs, to name in the hint: the key patterns of
// its keys, and the channel patterns of its messages ("" if it sends
// none).
type Rules struct {
	Keys, Channels string
}

// Wrap returns err as an *Error when it is Redis refusing a call for the
// user's ACL, naming the rule of needs that the reply points to; else err
// itself.
func Wrap(err error, needs Rules) error {
	msg, inScript, ok := refusal(err)
	if !ok {
		return err
	}
	var missing string
	switch {
	case strings.Contains(msg, "keys"):
		missing = needs.Keys
	case strings.Contains(msg, "channel") && needs.Channels != "":
		missing = needs.Channels
	case inScript:
		missing = "a command that dlock's scripts run"
	default:
		missing = "a command dlock sends"
		// NOPERM this user has no permissions to run the 'evalsha' command
		if _, rest, ok := strings.Cut(msg, "run the '"); ok {
			if name, _, ok := strings.Cut(rest, "'"); ok {
				missing = "+" + name
			}
		}
	}
	return &Error{Missing: missing, Err: err}
}

// IsRefusal reports whether err is Redis refusing a call for the user's
// ACL, before Wrap named the rule: a caller whose Rules cost something to
// build asks first.
func IsRefusal(err error) bool {
	_, _, ok := refusal(err)
	return ok
}

// refusal returns the reply of Redis refusing a call for the user's ACL,
// and whether a script's command was the one refused.
func refusal(err error) (msg string, inScript, ok bool) {
	var reply redis.Error
	if err == nil || !errors.As(err, &reply) {
		return "", false, false
	}
	msg = reply.Error()
	inScript = strings.Contains(msg, "The user executing the script can't")
	return msg, inScript, inScript || strings.HasPrefix(msg, "NOPERM")
}

// Refused reports whether err is a call that the Redis user's ACL refused
// (see Wrap): refused before it ran, every copy of it alike.
func Refused(err error) bool {
	var refused *Error
	return errors.As(err, &refused)
}

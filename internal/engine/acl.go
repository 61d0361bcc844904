package engine

import (
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// What a call refused by the Redis user's ACL says besides Redis's own
// reply, which does not name the rule that is missing. docs/compat.md has
// the whole ACL a deployment needs.

// aclError is a Redis reply refusing a call because the ACL of the Redis
// user it runs as lacks a permission (NOPERM, or a script's command
// refused), with the rule that is missing, as far as the reply tells it.
type aclError struct {
	// Missing names the rule the user lacks, in ACL SETUSER's words
	// ("~dlock:*", "&dlock:*", "+evalsha"), or what to look for where
	// the reply does not tell which
	Missing string
	Err     error // Redis's reply
}

// Error is Redis's reply followed by the rule that is missing.
func (e *aclError) Error() string {
	return e.Err.Error() + " (the Redis user's ACL lacks " + e.Missing + "; see dlock's docs/compat.md)"
}

// Unwrap returns Redis's reply.
func (e *aclError) Unwrap() error { return e.Err }

// withACLHint returns err as an aclError when it is Redis refusing a call
// on the lock named key (or, with no key, a call on no lock) for the ACL
// user's rights; else err itself.
func withACLHint(key string, err error) error {
	var reply redis.Error
	if !errors.As(err, &reply) {
		return err
	}
	msg := reply.Error()
	inScript := strings.Contains(msg, "The user executing the script can't")
	if !inScript && !strings.HasPrefix(msg, "NOPERM") {
		return err
	}
	var missing string
	switch {
	case strings.Contains(msg, "keys"):
		missing = keysRule(key)
	case strings.Contains(msg, "channel"):
		missing = "&dlock:* for the channels of its locks"
		if key != "" {
			missing = "&dlock:* for the channels of lock " + QuoteKey(key)
		}
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
	return &aclError{Missing: missing, Err: err}
}

// refusedByACL reports whether err is a call that the Redis user's ACL
// refused: refused before it ran, every copy of it alike.
func refusedByACL(err error) bool {
	var refused *aclError
	return errors.As(err, &refused)
}

// keysRule names the key patterns that the calls on the lock named key
// need: the lock's own, and ~dlock:* for its side keys.
func keysRule(key string) string {
	switch {
	case key == "":
		return "~dlock:* for the side keys of its locks, or a pattern for the lock keys themselves"
	case strings.HasPrefix(key, "dlock:"):
		return "~dlock:* for the keys of lock " + QuoteKey(key)
	}
	return "~dlock:* for the side keys of lock " + QuoteKey(key) + ", or a pattern for " + QuoteKey(key) + " itself"
}

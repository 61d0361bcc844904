package engine

import (
	"strings"

	"github.com/dlock-go/dlock/internal/aclhint"
)

// What a call refused by the Redis user's ACL says besides Redis's own
// reply, which does not name the rule that is missing. docs/compat.md has
// the whole ACL a deployment needs.

// withACLHint returns err as an aclhint.Error when it is Redis refusing a
// call on the lock named key (or, with no key, a call on no lock) for the
// ACL user's rights; else err itself.
func withACLHint(key string, err error) error {
	if !aclhint.IsRefusal(err) {
		return err // the usual error: no hint to build
	}
	channels := "&dlock:* for the channels of its locks"
	if key != "" {
		channels = "&dlock:* for the channels of lock " + QuoteKey(key)
	}
	return aclhint.Wrap(err, aclhint.Rules{Keys: keysRule(key), Channels: channels})
}

// refusedByACL reports whether err is a call that the Redis user's ACL
// refused: refused before it ran, every copy of it alike.
func refusedByACL(err error) bool { return aclhint.Refused(err) }

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

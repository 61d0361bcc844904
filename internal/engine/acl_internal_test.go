package engine

import (
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/aclhint"
)

// redisReply is a Redis error reply, as go-redis returns one.
type redisReply string

func (e redisReply) Error() string { return string(e) }
func (redisReply) RedisError()     {}

var _ redis.Error = redisReply("")

// The replies of Redis 7.0 that refuse a call for the ACL, and the rule a
// refused call names.
func TestACLHint(t *testing.T) {
	for _, c := range []struct {
		key, reply, missing string
	}{
		{"app:x", "NOPERM this user has no permissions to access one of the keys used as arguments", `~dlock:* for the side keys of lock "app:x", or a pattern for "app:x" itself`},
		{"dlock:job:a", "NOPERM this user has no permissions to access one of the keys used as arguments", `~dlock:* for the keys of lock "dlock:job:a"`},
		{"app:x", "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments script: 8418d9b3, on @user_script:1.", `~dlock:* for the side keys of lock "app:x", or a pattern for "app:x" itself`},
		{"app:x", "ERR The user executing the script can't publish to the channel mentioned in the command script: cc9e1569, on @user_script:1.", `&dlock:* for the channels of lock "app:x"`},
		{"", "NOPERM this user has no permissions to access one of the channels used as arguments", "&dlock:* for the channels of its locks"},
		{"app:x", "NOPERM this user has no permissions to run the 'evalsha' command", "+evalsha"},
		{"", "NOPERM this user has no permissions to run the 'scan' command", "+scan"},
		{"app:x", "ERR The user executing the script can't run this command or subcommand script: ddb9f7d0, on @user_script:1.", "a command that dlock's scripts run"},
	} {
		err := withACLHint(c.key, fmt.Errorf("wrapped: %w", redisReply(c.reply)))
		var refused *aclhint.Error
		if !errors.As(err, &refused) || refused.Missing != c.missing {
			t.Errorf("withACLHint(%q, %q) = %v, want it to name %q", c.key, c.reply, err, c.missing)
			continue
		}
		if !errors.Is(err, redisReply(c.reply)) || !refusedByACL(err) {
			t.Errorf("withACLHint(%q, %q) = %v: not the reply it wraps, or not refused", c.key, c.reply, err)
		}
	}
	for _, err := range []error{nil, errors.New("NOPERM but no Redis reply"), redisReply("WRONGTYPE Operation against a key holding the wrong kind of value"), redisReply("ERR Error running script: @user_script:1: user_script:1: oops")} {
		if got := withACLHint("app:x", err); !errors.Is(got, err) || refusedByACL(got) {
			t.Errorf("withACLHint(%v) = %v, want it unchanged", err, got)
		}
	}
}

package dlock

import (
	"fmt"
	"strings"
)

// MaxValueLen is the longest value WithValue takes, in bytes.
const MaxValueLen = 1024

// WithValue makes the lock carry v, a short value for whoever looks at it:
// Lock.Value returns it to the holder, and LockInfo.Value (from Inspect and
// Scan) to everyone else, such as the name or address of the holder. The
// value lives in the lock's key, next to the holder's random token (which
// is then the 128 random bits, a dot, and v with "%" and ":" escaped), so it
// is set, renewed and removed with the lock, on a single deployment as on a
// Redlock quorum, and it costs no round trip. It is sent with every refresh
// and release: keep it short. The default is no value; v may be at most
// MaxValueLen bytes, or Obtain returns ErrInvalidOption.
func WithValue(v string) ObtainOption {
	return func(c *obtainConfig) {
		if len(v) > MaxValueLen {
			c.err = fmt.Errorf("%w: WithValue of %d bytes, over MaxValueLen (%d)", ErrInvalidOption, len(v), MaxValueLen)
			return
		}
		c.valueSuffix = ""
		if v != "" {
			c.valueSuffix = valueSeparator + valueEscaper.Replace(v)
		}
	}
}

// Value returns the value the lock carries (see WithValue), or "" if none.
func (l *Lock) Value() string { return valueOf(l.token) }

// Value returns the value the holder's lock carries (see WithValue), or ""
// if it carries none or was not taken by dlock.
func (i LockInfo) Value() string { return i.value }

// A token with a value is newToken's 22 characters (never a dot, nor a
// colon: the scripts and the release messages use colons to separate a
// token from what follows it), the holder's name if any (see
// holderSuffix), the separator, and the escaped value.
const (
	randomTokenLen = 22
	valueSeparator = "."
)

var (
	valueEscaper   = strings.NewReplacer("%", "%25", ":", "%3A")
	valueUnescaper = strings.NewReplacer("%25", "%", "%3A", ":")
)

// newToken returns a fresh token for an acquire with these options: random,
// followed by the holder's name and the value if there are.
func (c obtainConfig) newToken() string { return newTokenWith(c.holderSuffix, c.valueSuffix) }

func valueOf(token string) string {
	_, value := splitToken(token)
	return value
}

package dlock

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// MaxHolderNameLen is the longest name WithHolderName takes, in bytes.
const MaxHolderNameLen = 256

// WithHolderName names the holders of the Client's locks, semaphore
// permits and RW lock holds, for whoever looks at them: Inspect and Scan
// return it (LockInfo.HolderName), and dlock status and dlock list show
// it, as in "held by host-b pid 4121 (report) for 3m12s". The name lives
// in each holding's token in Redis, next to the random part, so it costs
// no round trip; it is sent with every refresh and release: keep it short.
//
// The default is the host name, the process id and the program's name, as
// in "host-b pid 4121 (report)". An empty name stores none. A name
// longer than MaxHolderNameLen is an error wrapping ErrInvalidOption.
func WithHolderName(name string) Option {
	return func(c *clientConfig) {
		if len(name) > MaxHolderNameLen {
			c.err = fmt.Errorf("%w: WithHolderName of %d bytes, over MaxHolderNameLen (%d)", ErrInvalidOption, len(name), MaxHolderNameLen)
			return
		}
		c.holderName = name
	}
}

// defaultHolderName returns the holder name of a Client made without
// WithHolderName.
func defaultHolderName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown-host"
	}
	name := host + " pid " + strconv.Itoa(os.Getpid())
	if len(os.Args) > 0 && os.Args[0] != "" {
		name += " (" + filepath.Base(os.Args[0]) + ")"
	}
	return name[:min(len(name), MaxHolderNameLen)]
}

// A token with a holder name is the random part, holderSeparator, and the
// escaped name; a value (WithValue) follows that. The name's escaping keeps
// every '.' out of it, so the value's separator stays unique.
const holderSeparator = "~"

var (
	holderEscaper   = strings.NewReplacer("%", "%25", ":", "%3A", ".", "%2E")
	holderUnescaper = strings.NewReplacer("%25", "%", "%3A", ":", "%2E", ".")
)

// holderSuffix returns what follows the random part of a token for a
// holder named name.
func holderSuffix(name string) string {
	if name == "" {
		return ""
	}
	return holderSeparator + holderEscaper.Replace(name)
}

// splitToken returns the holder name and the value a token carries, "" for
// those it does not.
func splitToken(token string) (holder, value string) {
	if len(token) <= randomTokenLen {
		return "", ""
	}
	rest := token[randomTokenLen:]
	if strings.HasPrefix(rest, holderSeparator) {
		name, after, _ := strings.Cut(rest[len(holderSeparator):], valueSeparator)
		holder = holderUnescaper.Replace(name)
		if after == "" {
			return holder, ""
		}
		rest = valueSeparator + after
	}
	if strings.HasPrefix(rest, valueSeparator) {
		value = valueUnescaper.Replace(rest[len(valueSeparator):])
	}
	return holder, value
}

// sinceFence returns when a holding whose fence is fence was obtained, by
// the server's clock: a fence is at least the server's time in
// microseconds at the acquire (see acquire.lua), and only a burst of
// millions of acquires a second puts it ahead. Zero when unknown.
func sinceFence(fence int64) time.Time {
	if fence <= 0 {
		return time.Time{}
	}
	return time.UnixMicro(fence)
}

package engine

import (
	"errors"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// Every call has one effect. go-redis sends a command again, on another
// connection, when its reply does not come within ReadTimeout (MaxRetries
// times, 3 by default), and every copy runs once Redis answers. So every
// script that changes state finds what an earlier copy of the same call
// did and answers as that copy would (see release.lua's marker), and a
// call whose outcome is unknown says so (ErrOutcomeUnknown).

// resendWindow returns how long rdb may go on sending copies of one
// command: every send may wait WriteTimeout to write, ReadTimeout for the
// reply and MaxRetryBackoff before the next, and rdb sends MaxRetries+1
// times at most (a Cluster client that many times per redirect). With
// go-redis's defaults (5 s, 5 s, 1 s, 3 retries) that is 44 s. A release
// marker lives that long (at least minMarkerTTL), so the last copy of a
// release finds the first one's. A client without timeouts resends only
// after a connection broke, right away; the floor covers that.
func resendWindow(rdb redis.UniversalClient) time.Duration {
	var sends int
	var write, read, backoff time.Duration
	switch c := rdb.(type) {
	case *redis.Client:
		o := c.Options()
		sends = max(o.MaxRetries, 0) + 1
		write, read, backoff = o.WriteTimeout, o.ReadTimeout, o.MaxRetryBackoff
	case *redis.ClusterClient:
		o := c.Options()
		sends = (max(o.MaxRedirects, 0) + 1) * (max(o.MaxRetries, 0) + 1)
		write, read, backoff = o.WriteTimeout, o.ReadTimeout, o.MaxRetryBackoff
	case *redis.Ring:
		o := c.Options()
		sends = max(o.MaxRetries, 0) + 1
		write, read, backoff = o.WriteTimeout, o.ReadTimeout, o.MaxRetryBackoff
	default:
		return defaultMarkerTTL
	}
	return max(time.Duration(sends)*(max(write, 0)+max(read, 0)+max(backoff, 0)), minMarkerTTL)
}

const (
	// minMarkerTTL is the least a release marker lives.
	minMarkerTTL = time.Second
	// defaultMarkerTTL is how long a release marker lives for a Redis
	// client whose options are not known: the window of go-redis's
	// defaults (see resendWindow).
	defaultMarkerTTL = 44 * time.Second
)

// markerTTLOf returns the boxed milliseconds of the release markers of an
// Engine on the Redis clients rdbs: the longest window of them.
func markerTTLOf(rdbs ...redis.UniversalClient) any {
	var longest time.Duration
	for _, rdb := range rdbs {
		longest = max(longest, resendWindow(rdb))
	}
	return max(longest, minMarkerTTL).Milliseconds()
}

// outcomeUnknown returns err, the failure of a command, marked as one whose
// outcome is unknown (ErrOutcomeUnknown) if the command may have reached
// Redis and run: a timeout or a broken connection after it was sent. A
// failure to connect, an error reply, and a closed client are known
// outcomes: nothing ran.
func outcomeUnknown(err error) error {
	if err == nil {
		return nil
	}
	var redisErr redis.Error
	var netErr *net.OpError
	switch {
	case errors.As(err, &redisErr), // an error reply: the script did not run
		errors.As(err, &netErr) && netErr.Op == "dial",
		errors.Is(err, redis.ErrClosed),
		errors.Is(err, redis.ErrPoolTimeout),
		errors.Is(err, redis.ErrPoolExhausted),
		errors.Is(err, ErrOutcomeUnknown):
		return err
	}
	return &unknownOutcomeError{err: err}
}

// unknownOutcomeError is the failure of a command that may have run:
// errors.Is finds ErrOutcomeUnknown in it, and the failure itself.
type unknownOutcomeError struct{ err error }

func (e *unknownOutcomeError) Error() string {
	return e.err.Error() + " (" + ErrOutcomeUnknown.Error() + ")"
}

func (e *unknownOutcomeError) Unwrap() error { return e.err }

// Is reports whether target is ErrOutcomeUnknown.
func (e *unknownOutcomeError) Is(target error) bool { return target == ErrOutcomeUnknown }

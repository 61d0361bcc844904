package engine

import (
	"context"
	"errors"
	"iter"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/dlock-go/dlock/internal/slot"
)

// Finding the holdings of a deployment (dlock.Client.Scan).

// ScanKeys yields the name of every holding that a SCAN of every node
// finds (of every primary of a Cluster), once each, that matches the Redis
// glob pattern. Two SCANs find them: one of the fence keys, which a
// Redlock's locks, semaphores, RW locks, multi-key holdings and the locks
// whose holders asked for a fence have; and, on one deployment, one of the
// string keys that match pattern, whose values are read to find the locks
// among them ("token:since", see holder.lua).
func (e *Engine) ScanKeys(ctx context.Context, pattern string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		seen := map[string]bool{} // found by the other SCAN, or on another node of a Redlock
		for _, n := range e.nodes {
			shards, err := bounded(ctx, e, n, "scan", pattern, n.shards, nil)
			if err != nil {
				yield("", n.wrap("scan", pattern, err))
				return
			}
			for _, shard := range shards {
				if !e.scanShard(ctx, n, shard, "dlock:"+fenceKind+"*", "", pattern, seen, yield) {
					return
				}
				if e.quorum == nil && !e.scanShard(ctx, n, shard, pattern, "string", pattern, seen, yield) {
					return
				}
			}
		}
	}
}

// scanShard yields the names of the holdings on one server that a SCAN
// MATCH match (of keys of type typ, if not "") finds: the names under fence
// keys, or the string keys that hold a lock, and reports whether to go on.
func (e *Engine) scanShard(ctx context.Context, n *node, shard redis.Cmdable, match, typ, pattern string, seen map[string]bool, yield func(string, error) bool) bool {
	var cursor uint64
	for {
		type page struct {
			keys []string
			next uint64
		}
		p, err := bounded(ctx, e, n, "scan", pattern, func(ctx context.Context) (page, error) {
			var keys []string
			var next uint64
			var err error
			if typ == "" {
				keys, next, err = shard.Scan(ctx, cursor, match, scanCount).Result()
				for i, side := range keys {
					keys[i], _ = lockKeyOf(fenceKind, side)
				}
			} else {
				keys, next, err = shard.ScanType(ctx, cursor, match, scanCount, typ).Result()
				if err == nil {
					keys, err = locksAmong(ctx, shard, keys)
				}
			}
			return page{keys, next}, err
		}, nil)
		if err != nil {
			return yield("", n.wrap("scan", pattern, err))
		}
		for _, key := range p.keys {
			if key == "" || !matchPattern(pattern, key) || seen[key] {
				continue
			}
			seen[key] = true
			if !yield(key, nil) {
				return false
			}
		}
		if p.next == 0 {
			return true
		}
		cursor = p.next
	}
}

// locksAmong returns those of keys, string keys of one server, whose values
// look like a lock's (see looksLikeLock), read in one pipeline: the start
// and the end of each, never a whole value, which may be large.
func locksAmong(ctx context.Context, shard redis.Cmdable, keys []string) ([]string, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	pipe := shard.Pipeline()
	heads := make([]*redis.StringCmd, len(keys))
	tails := make([]*redis.StringCmd, len(keys))
	for i, key := range keys {
		heads[i] = pipe.GetRange(ctx, key, 0, RandomTokenLen)
		tails[i] = pipe.GetRange(ctx, key, -valueTailLen, -1)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) && !commandError(err) {
		return nil, err
	}
	var locks []string
	for i, key := range keys {
		if looksLikeLock(heads[i].Val(), tails[i].Val()) {
			locks = append(locks, key)
		}
	}
	return locks, nil
}

// commandError reports whether err is Redis's refusal of one command (a
// key that changed type or moved since the SCAN), not a failure of the
// connection.
func commandError(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// valueTailLen is how much of the end of a value looksLikeLock needs: a
// colon, since (16 digits until the year 2286), and ":w".
const valueTailLen = 19

// looksLikeLock reports whether a value whose first RandomTokenLen+1
// bytes are head and whose last valueTailLen bytes are tail is a lock's,
// "token:since" or "token:since:w": a token's random part, a holder name or
// value after it or nothing, then a colon and digits.
func looksLikeLock(head, tail string) bool {
	if len(head) < RandomTokenLen+1 {
		return false
	}
	for _, c := range []byte(head[:RandomTokenLen]) {
		if !isBase64URL(c) {
			return false
		}
	}
	if c := head[RandomTokenLen]; c != ':' && c != holderSeparator[0] && c != valueSeparator[0] {
		return false
	}
	tail = strings.TrimSuffix(tail, ":w")
	i := strings.LastIndexByte(tail, ':')
	if i < 0 || i == len(tail)-1 {
		return false
	}
	for _, c := range []byte(tail[i+1:]) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// lockKeyOf returns the lock key whose side key of the given kind is side:
// the inverse of sideKey.
func lockKeyOf(kind, side string) (string, bool) {
	rest, ok := strings.CutPrefix(side, "dlock:"+kind)
	if !ok || rest == "" {
		return "", false
	}
	switch rest[0] {
	case ':': // the key has a hash tag
		key := rest[1:]
		return key, slot.HasTag(key)
	case '{': // the key is the tag
		key, ok := strings.CutSuffix(rest[1:], "}")
		return key, ok && key != "" && !strings.Contains(key, "}")
	case '#': // a slot tag, then the key
		if !strings.HasPrefix(rest, "#{") {
			return "", false
		}
		_, key, ok := strings.Cut(rest, "}")
		return key, ok && sideKey(kind, key) == side
	}
	return "", false
}

// scanCount is how many keys one SCAN call asks a server to look at.
const scanCount = 500

// matchPattern reports whether s matches the Redis glob pattern, byte by
// byte, as KEYS and SCAN MATCH do (Redis's stringmatchlen): * matches any
// run of bytes, ? one byte, [abc] [^abc] [a-z] a class, and \ escapes the
// next byte. An unclosed [ matches up to the end of the pattern, as in Redis.
func matchPattern(pattern, s string) bool {
	// One pass with backtracking to the last '*' only: a later star can
	// match whatever an earlier one would have, so this is enough, and it
	// takes at most len(pattern)*len(s) steps on megabyte keys too.
	px, sx := 0, 0
	starPx, starSx := -1, 0
	for px < len(pattern) || sx < len(s) {
		if px < len(pattern) {
			switch c := pattern[px]; c {
			case '*':
				starPx, starSx = px, sx
				px++
				continue
			case '?':
				if sx < len(s) {
					px, sx = px+1, sx+1
					continue
				}
			case '[':
				if sx < len(s) {
					if rest, ok := matchClass(pattern[px+1:], s[sx]); ok {
						px, sx = len(pattern)-len(rest), sx+1
						continue
					}
				}
			default:
				width := 1
				if c == '\\' && px+1 < len(pattern) {
					c, width = pattern[px+1], 2
				}
				if sx < len(s) && s[sx] == c {
					px, sx = px+width, sx+1
					continue
				}
			}
		}
		if starPx < 0 || starSx >= len(s) {
			return false
		}
		starSx++ // let the last star take one more byte
		px, sx = starPx+1, starSx
	}
	return true
}

// matchClass matches c against the class that starts at class (after the
// '['), and returns the pattern after the class's ']'.
func matchClass(class string, c byte) (rest string, ok bool) {
	negate := len(class) > 0 && class[0] == '^'
	if negate {
		class = class[1:]
	}
	match := false
	for len(class) > 0 && class[0] != ']' {
		switch {
		case class[0] == '\\' && len(class) > 1:
			class = class[1:]
			match = match || class[0] == c
		case len(class) > 2 && class[1] == '-':
			lo, hi := class[0], class[2]
			if lo > hi {
				lo, hi = hi, lo
			}
			match = match || (lo <= c && c <= hi)
			class = class[2:]
		default:
			match = match || class[0] == c
		}
		class = class[1:]
	}
	if len(class) > 0 {
		class = class[1:] // the ']'
	}
	return class, match != negate
}

// isBase64URL reports whether c is a letter of URL-safe base64, as a
// token's random part is written.
func isBase64URL(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

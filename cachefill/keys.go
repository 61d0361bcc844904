package cachefill

// keys are the Redis keys of one cache entry: the entry itself (a hash), the
// lock its loader holds, the stream on which its loaders tell the callers
// that wait that they are done, the claim of the caller that saw a miss
// first, and the record of the last loader that gave up. The scripts use
// them together, so all must hash to one Cluster slot.
type keys struct {
	entry  string
	lock   string
	filled string
	claim  string
	gaveUp string
}

// The suffixes of the keys. None ends another, so a key of one cache key is
// never another key of another.
const (
	entrySuffix  = ":value"
	lockSuffix   = ":lock"
	filledSuffix = ":filled"
	claimSuffix  = ":claim"
	gaveUpSuffix = ":gaveup"
)

// keysOf returns the keys of the entry for key. Both start with one hash
// tag, so they share a slot:
//
//	cachefill{user:42}:value     the whole key is the tag
//	cachefill#{x}}odd:value      a key that starts with '}' would make an
//	                             empty tag, which Redis ignores: a fixed
//	                             one instead, and the key after it
//
// The '#' tells the two shapes apart (a prefix has no braces), so no two
// keys share an entry. A tag ends at the key's first '}', so "a}b" and "a}c"
// share a slot, which is all the scripts need.
func keysOf(prefix, key string) keys {
	var base string
	if key[0] == '}' {
		base = prefix + "#{x}" + key
	} else {
		base = prefix + "{" + key + "}"
	}
	return keys{entry: base + entrySuffix, lock: base + lockSuffix, filled: base + filledSuffix, claim: base + claimSuffix,
		gaveUp: base + gaveUpSuffix}
}

package cachefill

// Counts is what a Cache did, for the tests.
type Counts struct {
	Hits, Misses, Waits, Loads, Refreshes, Fallbacks int64
}

// CountsOf returns what c did so far.
func CountsOf(c *Cache) Counts {
	return Counts{
		Hits:      c.hits.Load(),
		Misses:    c.misses.Load(),
		Waits:     c.waits.Load(),
		Loads:     c.loads.Load(),
		Refreshes: c.refreshes.Load(),
		Fallbacks: c.fallbacks.Load(),
	}
}

// Add returns the sum of a and b.
func (a Counts) Add(b Counts) Counts {
	return Counts{a.Hits + b.Hits, a.Misses + b.Misses, a.Waits + b.Waits,
		a.Loads + b.Loads, a.Refreshes + b.Refreshes, a.Fallbacks + b.Fallbacks}
}

// EntryKey and LockKey are the Redis keys of key's entry and lock.
func EntryKey(c *Cache, key string) string { return keysOf(c.opts.prefix, key).entry }
func LockKey(c *Cache, key string) string  { return keysOf(c.opts.prefix, key).lock }
func ClaimKey(c *Cache, key string) string { return keysOf(c.opts.prefix, key).claim }

// FilledKey is the Redis key of key's stream of fill messages.
func FilledKey(c *Cache, key string) string { return keysOf(c.opts.prefix, key).filled }

var (
	RefreshDue = refreshDue
	Jitter     = jitter
)

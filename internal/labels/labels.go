// Package labels bounds the values of a metric label, for the metric
// modules (prometheus/, otel/): a label with one value per lock key would
// make a series per key, without bound.
package labels

import "sync"

// Bounded admits the first limit distinct values it meets, and keeps them;
// every other value maps to its other value. A value thus always maps to
// the same label, so a gauge goes down under the label it went up under.
// It is safe for concurrent use.
type Bounded struct {
	limit    int
	other    string
	mu       sync.RWMutex
	admitted map[string]struct{}
}

// NewBounded returns a Bounded that admits limit values (none if limit is not
// positive) and maps the rest to other.
func NewBounded(limit int, other string) *Bounded {
	return &Bounded{limit: limit, other: other, admitted: map[string]struct{}{}}
}

// Label returns v if v is admitted, or is admitted now because fewer than
// limit values are; else the other value.
func (b *Bounded) Label(v string) string {
	b.mu.RLock()
	_, ok := b.admitted[v]
	full := len(b.admitted) >= b.limit
	b.mu.RUnlock()
	switch {
	case ok:
		return v
	case full:
		return b.other
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.admitted[v]; !ok {
		if len(b.admitted) >= b.limit {
			return b.other
		}
		b.admitted[v] = struct{}{}
	}
	return v
}

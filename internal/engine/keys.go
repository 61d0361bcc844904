package engine

import (
	"strings"

	"github.com/dlock-go/dlock/internal/slot"
)

// A side key holds what a lock needs besides its own key: the fence key keeps
// the last fencing token, and its name is also the channel a release is
// published on (channels live apart from keys, so nothing clashes). Lua
// scripts may only touch keys of one Cluster slot, so a side key must hash to
// the lock key's slot. Three shapes do that, and the character after the kind
// tells them apart, so no two lock keys ever share a side key:
//
//	dlock:fence:{user}:42    the lock key "{user}:42" has a hash tag: keep it
//	dlock:fence{order:42}    no tag and no '}': the whole key becomes the tag
//	dlock:fence#{1234}a}b    no tag but a '}' (or empty): a tag chosen to hash
//	                         to the key's slot, followed by the key itself
const fenceKind = "fence"

// The channel on which a release also tells those that watch the lock
// without waiting for it (Client.WaitRelease): a side key's name, though
// no key. Its kind has as many letters as fenceKind, so that the scripts
// find it from the fence key's name.
const watchKind = "watch"

// The side keys of the waiters of a lock on a single deployment: their
// queue in arrival order, and their leases.
const (
	queueKind = "queue"
	leaseKind = "lease"
)

// The release marker of a holding (see release.lua): its name is the fence
// key's with "freed" for "fence", then a colon and the holder's name in
// Redis, so it lies in the lock key's Cluster slot. The scripts take it in
// KEYS, as the last: a script touches only keys it is given.
const freedKind = "freed"

// The side keys of a shared hold (a semaphore, an RW lock): the fences of
// its holders, and the writers that wait for an RW lock.
const (
	holdsKind   = "holds"
	writersKind = "writers"
)

// lockKeys returns the KEYS of every script on the lock named key: the key
// itself and its fence key. A Lock keeps the slice for all its calls.
func lockKeys(key string) []string {
	return []string{key, sideKey(fenceKind, key)}
}

// queueKeys returns the KEYS of the scripts on the lock named key on a
// single deployment: lockKeys, then the queue and the leases of its
// waiters. Some scripts use the first two and accept the rest.
func queueKeys(key string) []string {
	// One string for the three side keys: every obtain makes them.
	n1, n2, n3 := sideKeyLen(fenceKind, key), sideKeyLen(queueKind, key), sideKeyLen(leaseKind, key)
	var b strings.Builder
	b.Grow(n1 + n2 + n3)
	writeSideKey(&b, fenceKind, key)
	writeSideKey(&b, queueKind, key)
	writeSideKey(&b, leaseKind, key)
	s := b.String()
	return []string{key, s[:n1], s[n1 : n1+n2], s[n1+n2:]}
}

// HoldKeys returns the KEYS of the scripts of a shared hold named key
// (hold_*.lua), and of inspect.lua and force_release.lua, which look at
// every kind: queueKeys, then the fences of the holders and the waiting
// writers.
func HoldKeys(key string) []string {
	kinds := [...]string{fenceKind, queueKind, leaseKind, holdsKind, writersKind}
	var lens [len(kinds)]int
	total := 0
	for i, kind := range kinds {
		lens[i] = sideKeyLen(kind, key)
		total += lens[i]
	}
	var b strings.Builder
	b.Grow(total)
	for _, kind := range kinds {
		writeSideKey(&b, kind, key)
	}
	s := b.String()
	keys := make([]string, 1, 1+len(kinds))
	keys[0] = key
	for _, n := range lens {
		keys = append(keys, s[:n])
		s = s[n:]
	}
	return keys
}

// markerKey returns the name of the release marker of the holder named name
// (the token, after its class for a shared hold) on the lock whose fence
// key is fenceKey.
func markerKey(fenceKey, name string) string {
	var b strings.Builder
	b.Grow(markerPrefixLen(fenceKey) + len(name))
	writeMarkerPrefix(&b, fenceKey)
	b.WriteString(name)
	return b.String()
}

// markerPrefixLen is the length of what writeMarkerPrefix writes.
func markerPrefixLen(fenceKey string) int {
	return len(fenceKey) - len(fenceKind) + len(freedKind) + 1
}

// writeMarkerPrefix writes the release marker's name up to the holder's
// name: the fence key's name with freedKind for fenceKind, and a colon.
func writeMarkerPrefix(b *strings.Builder, fenceKey string) {
	b.WriteString("dlock:")
	b.WriteString(freedKind)
	b.WriteString(fenceKey[len("dlock:")+len(fenceKind):])
	b.WriteByte(':')
}

// sideKey returns the name of the side key of the given kind for a lock key.
func sideKey(kind, key string) string {
	var b strings.Builder
	b.Grow(sideKeyLen(kind, key))
	writeSideKey(&b, kind, key)
	return b.String()
}

// The three shapes of a side key (see the comment at the top).
const (
	keepsTag   = iota // dlock:kind:key
	wholeTag          // dlock:kind{key}
	slotTagged        // dlock:kind#{tag}key
)

func sideKeyShape(key string) int {
	switch {
	case slot.HasTag(key):
		return keepsTag
	case key != "" && strings.IndexByte(key, '}') < 0: // "{}" would be no tag
		return wholeTag
	}
	return slotTagged
}

// sideKeyLen is len(sideKey(kind, key)).
func sideKeyLen(kind, key string) int {
	n := len("dlock:") + len(kind) + len(key)
	switch sideKeyShape(key) {
	case keepsTag:
		return n + 1
	case wholeTag:
		return n + 2
	}
	return n + 3 + len(slot.Tag(slot.Of(key)))
}

// writeSideKey writes sideKey(kind, key) to b.
func writeSideKey(b *strings.Builder, kind, key string) {
	b.WriteString("dlock:")
	b.WriteString(kind)
	switch sideKeyShape(key) {
	case keepsTag:
		b.WriteByte(':')
		b.WriteString(key)
	case wholeTag:
		b.WriteByte('{')
		b.WriteString(key)
		b.WriteByte('}')
	default:
		b.WriteString("#{")
		b.WriteString(slot.Tag(slot.Of(key)))
		b.WriteByte('}')
		b.WriteString(key)
	}
}

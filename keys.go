package dlock

import (
	"strconv"
	"strings"
	"sync"
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

// The side keys of fair mode: the queue of waiters in arrival order, and
// their leases.
const (
	queueKind = "queue"
	leaseKind = "lease"
)

// lockKeys returns the KEYS of every script on the lock named key: the key
// itself and its fence key. A Lock keeps the slice for all its calls.
func lockKeys(key string) []string {
	return []string{key, sideKey(fenceKind, key)}
}

// fairKeys returns the KEYS of the fair-mode scripts on the lock named key:
// lockKeys, then the queue and the leases of its waiters. The other scripts
// use the first two and accept the rest.
func fairKeys(key string) []string {
	return []string{key, sideKey(fenceKind, key), sideKey(queueKind, key), sideKey(leaseKind, key)}
}

// sideKey returns the name of the side key of the given kind for a lock key.
func sideKey(kind, key string) string {
	switch {
	case hasHashTag(key):
		return "dlock:" + kind + ":" + key
	case key != "" && strings.IndexByte(key, '}') < 0: // "{}" would be no tag
		return "dlock:" + kind + "{" + key + "}"
	default:
		return "dlock:" + kind + "#{" + slotTag(keySlot(key)) + "}" + key
	}
}

// hasHashTag reports whether Redis Cluster hashes only part of key: the
// characters between the first '{' and the first '}' after it, if any.
func hasHashTag(key string) bool {
	start := strings.IndexByte(key, '{')
	if start < 0 {
		return false
	}
	end := strings.IndexByte(key[start+1:], '}')
	return end > 0
}

// numSlots is the number of hash slots in Redis Cluster.
const numSlots = 16384

// keySlot returns the Redis Cluster hash slot of key (CLUSTER KEYSLOT).
func keySlot(key string) int {
	if start := strings.IndexByte(key, '{'); start >= 0 {
		if end := strings.IndexByte(key[start+1:], '}'); end > 0 {
			key = key[start+1 : start+1+end]
		}
	}
	return int(crc16(key)) % numSlots
}

// slotTags maps every slot to the shortest decimal string that hashes to it.
// It is built on first use (about two milliseconds) and only read afterwards.
var slotTags = sync.OnceValue(func() *[numSlots]string {
	var tags [numSlots]string
	for i, left := 0, numSlots; left > 0; i++ {
		s := strconv.Itoa(i)
		if slot := keySlot(s); tags[slot] == "" {
			tags[slot] = s
			left--
		}
	}
	return &tags
})

// slotTag returns a hash tag that puts a key in the given slot.
func slotTag(slot int) string {
	return slotTags()[slot]
}

// crc16 is CRC-16/XMODEM, the checksum Redis Cluster uses for key slots.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^s[i]]
	}
	return crc
}

var crc16Table = func() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}()

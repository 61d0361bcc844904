// Package slot hashes keys to Redis Cluster slots, as CLUSTER KEYSLOT does.
// The lock keys of dlock, the keys of its packages and the test harness
// redistest share it: a Lua script may only touch keys of one slot, so every
// key a script is given must hash where its lock key does.
package slot

import (
	"strconv"
	"strings"
	"sync"
)

// Count is the number of hash slots of a Redis Cluster, numbered 0 to
// Count-1.
const Count = 16384

// Of returns the slot of key: CRC16 of the key modulo Count, where only the
// part between the first '{' and the next '}' is hashed if that part is not
// empty (the key's hash tag).
func Of(key string) int {
	if start := strings.IndexByte(key, '{'); start >= 0 {
		if end := strings.IndexByte(key[start+1:], '}'); end > 0 {
			key = key[start+1 : start+1+end]
		}
	}
	return int(CRC16(key)) % Count
}

// HasTag reports whether Redis Cluster hashes only part of key: the
// characters between the first '{' and the first '}' after it, if any.
func HasTag(key string) bool {
	start := strings.IndexByte(key, '{')
	return start >= 0 && strings.IndexByte(key[start+1:], '}') > 0
}

// Tag returns the shortest decimal string that hashes to slot s: as a hash
// tag, "{" + Tag(s) + "}", it puts any key in that slot.
func Tag(s int) string { return tags()[s] }

// tags maps every slot to the shortest decimal string that hashes to it.
// It is built on first use (about two milliseconds) and only read afterwards.
var tags = sync.OnceValue(func() *[Count]string {
	var t [Count]string
	for i, left := 0, Count; left > 0; i++ {
		s := strconv.Itoa(i)
		if slot := Of(s); t[slot] == "" {
			t[slot] = s
			left--
		}
	}
	return &t
})

// CRC16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0, no
// reflection), the checksum Redis Cluster hashes keys with.
func CRC16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ table[byte(crc>>8)^s[i]]
	}
	return crc
}

var table = func() (t [256]uint16) {
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

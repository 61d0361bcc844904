package redistest

import "strings"

// Slots is the number of hash slots of a Redis Cluster, numbered 0 to
// Slots-1.
const Slots = 16384

// Slot returns the Redis Cluster hash slot of key, as CLUSTER KEYSLOT does:
// CRC16 of the key modulo [Slots], where only the part of the key between
// the first '{' and the next '}' is hashed if that part is not empty, so
// that "{user:7}:cart" and "{user:7}:orders" share a slot.
func Slot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if n := strings.IndexByte(key[open+1:], '}'); n > 0 {
			key = key[open+1 : open+1+n]
		}
	}
	return int(crc16(key)) % Slots
}

// crc16 is the CRC16 of Redis Cluster: CCITT, polynomial 0x1021,
// initial value 0, no reflection (the XMODEM variant).
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

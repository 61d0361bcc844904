package redistest

import "github.com/dlock-go/dlock/internal/slot"

// Slots is the number of hash slots of a Redis Cluster, numbered 0 to
// Slots-1.
const Slots = slot.Count

// Slot returns the Redis Cluster hash slot of key, as CLUSTER KEYSLOT does:
// CRC16 of the key modulo [Slots], where only the part of the key between
// the first '{' and the next '}' is hashed if that part is not empty, so
// that "{user:7}:cart" and "{user:7}:orders" share a slot.
func Slot(key string) int { return slot.Of(key) }

package stock

import (
	"strconv"
	"strings"

	"github.com/dlock-go/dlock/internal/slot"
)

// The three keys of a sku, named by suffix (see lua/prelude.lua). The
// suffixes have one length, so a key of one sku is never named as a key of
// another sku.
const (
	levelSuffix  = ":level" // hash: available, held, sold
	ordersSuffix = ":order" // hash: order -> "held:3", "sold:3", "cancelled:3" or "expired:3"
	holdsSuffix  = ":holds" // zset: order -> deadline of its hold, or when its outcome is forgotten (ms)
)

// keysPerSKU is how many KEYS each sku brings to a script.
const keysPerSKU = 3

// skuBase returns the part the names of a sku's keys start with. Lua
// scripts may only touch keys of one Cluster slot, so every key of a sku
// must carry one hash tag; the character after the prefix tells the three
// shapes apart, so no two skus share a key:
//
//	stock:{shop-7}shirt   the sku has a hash tag: keep it (skus that share it share a slot)
//	stock{shirt}          no tag and no '}': the whole sku becomes the tag
//	stock#{1234}a}b       no tag but a '}': a tag made from the sku's checksum
func skuBase(prefix, sku string) string {
	switch {
	case slot.HasTag(sku):
		return prefix + ":" + sku
	case strings.IndexByte(sku, '}') < 0:
		return prefix + "{" + sku + "}"
	default:
		return prefix + "#{" + strconv.Itoa(int(slot.CRC16(sku))) + "}" + sku
	}
}

// skuKeys appends the KEYS of sku, in the order the scripts take them.
func skuKeys(keys []string, prefix, sku string) []string {
	base := skuBase(prefix, sku)
	return append(keys, base+levelSuffix, base+ordersSuffix, base+holdsSuffix)
}

// hashTag returns the part of key that Redis Cluster hashes.
func hashTag(key string) string {
	if start := strings.IndexByte(key, '{'); start >= 0 {
		if end := strings.IndexByte(key[start+1:], '}'); end > 0 {
			return key[start+1 : start+1+end]
		}
	}
	return key
}

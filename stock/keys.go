package stock

import (
	"strconv"
	"strings"

	"github.com/dlock-go/dlock/internal/slot"
)

// The suffixes of the keys of a sku (see lua/prelude.lua), and of the
// record of a call that changes it. None contains '=' or a brace.
const (
	levelSuffix  = ":level" // hash: available, held, sold
	ordersSuffix = ":order" // hash: order -> "held:3", "sold:3", "cancelled:3" or "expired:3"
	holdsSuffix  = ":holds" // zset: order -> deadline of its hold, or when its outcome is forgotten (ms)
	callSuffix   = ":call:" // + the call's id; string: the reply of the call's first copy that ran
)

// keysPerSKU is how many KEYS each sku brings to a script.
const keysPerSKU = 3

// skuKey returns the name of the key of sku that ends in suffix. Lua
// scripts may only touch keys of one Cluster slot, so every key of a sku
// carries one hash tag, right after the prefix:
//
//	stock{shirt}:level               no hash tag and no '}': the sku is the tag
//	stock{shop-7}:level={shop-7}a    a hash tag: keep it (skus that share it share a slot)
//	stock{#40634}:level=a}b          no tag but a '}': a tag made from the sku's checksum
//
// The name decodes one way only, so no two inventories or skus share a key:
// the prefix has no brace (WithPrefix), so the first '{' ends it; the tag
// has no '}', so the first '}' ends it; the suffix has no '=', so an '='
// after it starts the sku, and with no '=' the sku is the tag.
func skuKey(prefix, sku, suffix string) string {
	switch {
	case !slot.HasTag(sku) && strings.IndexByte(sku, '}') < 0:
		return prefix + "{" + sku + "}" + suffix
	case slot.HasTag(sku):
		return prefix + "{" + hashTag(sku) + "}" + suffix + "=" + sku
	default:
		return prefix + "{#" + strconv.Itoa(int(slot.CRC16(sku))) + "}" + suffix + "=" + sku
	}
}

// skuKeys appends the KEYS of sku, in the order the scripts take them.
func skuKeys(keys []string, prefix, sku string) []string {
	return append(keys, skuKey(prefix, sku, levelSuffix), skuKey(prefix, sku, ordersSuffix), skuKey(prefix, sku, holdsSuffix))
}

// callKey returns the key of the record of the call id on sku (its first
// sku, for a call of several), in the sku's slot.
func callKey(prefix, sku, id string) string {
	return skuKey(prefix, sku, callSuffix+id)
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

package stock

import (
	"strings"
	"testing"

	"github.com/dlock-go/dlock/redistest"
)

func TestSKUKeys(t *testing.T) {
	t.Parallel()
	tests := []struct{ sku, level string }{
		{"shirt", "stock{shirt}:level"},
		{"{shop-7}shirt", "stock{shop-7}:level={shop-7}shirt"},
		{"shirt:{shop-7}", "stock{shop-7}:level=shirt:{shop-7}"},
		{"{}shirt", "stock{#48646}:level={}shirt"}, // an empty tag is no tag
		{"a}b", "stock{#40634}:level=a}b"},
		{"{a", "stock{{a}:level"},
		{"a=b", "stock{a=b}:level"},
	}
	for _, tt := range tests {
		keys := skuKeys(nil, DefaultPrefix, tt.sku)
		want := []string{tt.level, strings.Replace(tt.level, ":level", ":order", 1), strings.Replace(tt.level, ":level", ":holds", 1)}
		if strings.Join(keys, " ") != strings.Join(want, " ") {
			t.Errorf("skuKeys(%q) = %q, want %q", tt.sku, keys, want)
		}
	}
}

// Two inventories, whatever their prefixes, share no key: "stock" with
// sku "{x}" and "stock:" with sku "x" once did.
func TestPrefixKeysApart(t *testing.T) {
	t.Parallel()
	pairs := [][4]string{ // prefix, sku, prefix, sku
		{"stock", "{x}", "stock:", "x"},
		{"stock", "{x}y", "stock:", "x}y"},
		{"s", "#{1}a}b", "s#", "{1}a}b"},
		{"", "a}:level=b", "a", "b"},
	}
	for _, p := range pairs {
		if k := sharedKey(p[0], p[1], p[2], p[3]); k != "" {
			t.Errorf("prefix %q sku %q and prefix %q sku %q share key %q", p[0], p[1], p[2], p[3], k)
		}
	}
}

// sharedKey returns a key of sku a under prefix pa that is also a key of
// sku b under prefix pb, or a call record of either, or "".
func sharedKey(pa, a, pb, b string) string {
	ka := append(skuKeys(nil, pa, a), callKey(pa, a, "id-1.1"))
	kb := append(skuKeys(nil, pb, b), callKey(pb, b, "id-1.1"))
	for _, x := range ka {
		for _, y := range kb {
			if x == y {
				return x
			}
		}
	}
	return ""
}

// FuzzSKUKeys checks, for any two prefixes and skus, that the keys of one
// sku (and its call records) share one Cluster slot, and that two skus or
// two prefixes share no key.
func FuzzSKUKeys(f *testing.F) {
	for _, s := range []string{"shirt", "{shop}shirt", "{shirt}", "}", "{}", "a}b", "{a", "x:level", "{x}:level", "x}:level=y"} {
		f.Add("stock", s, "stock", "shirt")
		f.Add("stock", s, "stock", "{"+s+"}")
		f.Add("stock", s, "stock", s+":level")
		f.Add("stock", "{"+s+"}", "stock:", s)
		f.Add("stock", s, "stock#", s)
	}
	f.Fuzz(func(t *testing.T, pa, a, pb, b string) {
		if a == "" || b == "" || strings.ContainsAny(pa+pb, "{}") { // what New refuses
			return
		}
		ka := append(skuKeys(nil, pa, a), callKey(pa, a, "x"))
		for _, k := range ka {
			if redistest.Slot(k) != redistest.Slot(ka[0]) {
				t.Fatalf("keys of sku %q in different slots: %q, %q", a, ka[0], k)
			}
		}
		if pa == pb && a == b {
			return
		}
		if k := sharedKey(pa, a, pb, b); k != "" {
			t.Fatalf("prefix %q sku %q and prefix %q sku %q share key %q", pa, a, pb, b, k)
		}
	})
}

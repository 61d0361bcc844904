package stock

import (
	"strings"
	"testing"

	"github.com/dlock-go/dlock/redistest"
)

func TestSKUKeys(t *testing.T) {
	t.Parallel()
	tests := []struct{ sku, base string }{
		{"shirt", "stock{shirt}"},
		{"{shop-7}shirt", "stock:{shop-7}shirt"},
		{"shirt:{shop-7}", "stock:shirt:{shop-7}"},
		{"{}shirt", "stock#{48646}{}shirt"}, // an empty tag is no tag
		{"a}b", "stock#{40634}a}b"},
		{"{a", "stock{{a}"},
	}
	for _, tt := range tests {
		keys := skuKeys(nil, DefaultPrefix, tt.sku)
		want := []string{tt.base + ":level", tt.base + ":order", tt.base + ":holds"}
		if strings.Join(keys, " ") != strings.Join(want, " ") {
			t.Errorf("skuKeys(%q) = %q, want %q", tt.sku, keys, want)
		}
	}
}

// FuzzSKUKeys checks, for any two skus, that the keys of one sku share one
// Cluster slot, and that two skus share no key.
func FuzzSKUKeys(f *testing.F) {
	for _, s := range []string{"shirt", "{shop}shirt", "{shirt}", "}", "{}", "a}b", "{a", "x:level", "{x}:level"} {
		f.Add(s, "shirt")
		f.Add(s, "{"+s+"}")
		f.Add(s, s+":level")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if a == "" || b == "" {
			return
		}
		ka := skuKeys(nil, DefaultPrefix, a)
		for _, k := range ka {
			if redistest.Slot(k) != redistest.Slot(ka[0]) {
				t.Fatalf("keys of sku %q in different slots: %q, %q", a, ka[0], k)
			}
		}
		if a == b {
			return
		}
		for _, x := range ka {
			for _, y := range skuKeys(nil, DefaultPrefix, b) {
				if x == y {
					t.Fatalf("skus %q and %q share key %q", a, b, x)
				}
			}
		}
	})
}

package labels_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/dlock-go/dlock/internal/labels"
)

// The first max values are admitted and stay; the rest are the other value.
func TestBounded(t *testing.T) {
	b := labels.NewBounded(2, "other")
	for _, c := range []struct{ in, want string }{
		{"a", "a"}, {"b", "b"}, {"c", "other"}, {"a", "a"}, {"b", "b"}, {"c", "other"}, {"other", "other"},
	} {
		if got := b.Label(c.in); got != c.want {
			t.Errorf("Label(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// A max that is not positive admits nothing.
func TestBoundedNone(t *testing.T) {
	for _, max := range []int{0, -1} {
		if got := labels.NewBounded(max, "rest").Label("a"); got != "rest" {
			t.Errorf("NewBounded(%d, ...).Label(a) = %q, want rest", max, got)
		}
	}
}

// Concurrent callers admit limit values in all, and each value maps to one
// label for good.
func TestBoundedConcurrent(t *testing.T) {
	const limit, callers, values = 10, 8, 50
	b := labels.NewBounded(limit, "other")
	seen := make([]map[string]string, callers)
	var wg sync.WaitGroup
	for i := range callers {
		seen[i] = map[string]string{}
		wg.Go(func() {
			for round := range 3 {
				for v := range values {
					in := fmt.Sprint((v + i*7 + round) % values)
					got := b.Label(in)
					if prev, ok := seen[i][in]; ok && prev != got {
						t.Errorf("Label(%s) = %s, then %s", in, prev, got)
					}
					seen[i][in] = got
				}
			}
		})
	}
	wg.Wait()
	admitted := map[string]bool{}
	for _, m := range seen {
		for in, got := range m {
			if got != "other" {
				admitted[in] = true
			}
		}
	}
	if len(admitted) != limit {
		t.Errorf("%d values admitted, want %d", len(admitted), limit)
	}
}

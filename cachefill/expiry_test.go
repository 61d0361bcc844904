package cachefill_test

import (
	"math"
	"testing"
	"time"

	"github.com/dlock-go/dlock/cachefill"
)

// XFetch refreshes when delta·beta·(-ln u) >= ttl left.
func TestRefreshDue(t *testing.T) {
	t.Parallel()
	e := math.Exp
	tests := []struct {
		name       string
		ttl, delta time.Duration
		beta, u    float64
		want       bool
	}{
		{"far from expiry", time.Minute, 10 * time.Millisecond, 1, 0.5, false},
		{"unlucky draw far away", 5 * time.Second, 10 * time.Millisecond, 1, 1e-300, true},
		{"at the edge: -ln u = 6", 60 * time.Millisecond, 10 * time.Millisecond, 1, e(-6), true},
		{"just short of it", 61 * time.Millisecond, 10 * time.Millisecond, 1, e(-6), false},
		{"beta doubles the reach", 120 * time.Millisecond, 10 * time.Millisecond, 2, e(-6), true},
		{"expiring now", 0, 10 * time.Millisecond, 1, 1, true},
		{"draw of 1 only at expiry", time.Millisecond, 10 * time.Millisecond, 1, 1, false},
		{"beta 0: never", 0, time.Second, 0, 1e-300, false},
		{"no expiry: never", -time.Millisecond, time.Second, 1, 1e-300, false},
	}
	for _, tt := range tests {
		if got := cachefill.RefreshDue(tt.ttl, tt.delta, tt.beta, tt.u); got != tt.want {
			t.Errorf("%s: refreshDue(%v, %v, %v, %v) = %v, want %v", tt.name, tt.ttl, tt.delta, tt.beta, tt.u, got, tt.want)
		}
	}
}

// Over many Gets, the first refresh comes about delta·beta before expiry:
// a Get 3·delta·beta before it refreshes with probability e^-3.
func TestRefreshDueProbability(t *testing.T) {
	t.Parallel()
	const n = 100000
	delta := 10 * time.Millisecond
	due := 0
	for i := range n {
		u := (float64(i) + 0.5) / n // evenly spread draws
		if cachefill.RefreshDue(30*time.Millisecond, delta, 1, u) {
			due++
		}
	}
	if got, want := float64(due)/n, math.Exp(-3); math.Abs(got-want) > 0.001 {
		t.Errorf("share of Gets refreshing 3·delta before expiry = %.4f, want %.4f", got, want)
	}
}

// Jitter takes off up to its share of the ttl, and keeps a millisecond.
func TestJitter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		ttl   time.Duration
		share float64
		u     float64
		want  time.Duration
	}{
		{time.Minute, 0.05, 0, time.Minute},
		{time.Minute, 0.05, 0.5, time.Minute - 1500*time.Millisecond},
		{time.Minute, 0.05, 0.75, time.Minute - 2250*time.Millisecond},
		{time.Minute, 0, 0.9, time.Minute},
		{time.Millisecond, 0.9, 0.999, time.Millisecond},
	}
	for _, tt := range tests {
		if got := cachefill.Jitter(tt.ttl, tt.share, tt.u); got != tt.want {
			t.Errorf("jitter(%v, %v, %v) = %v, want %v", tt.ttl, tt.share, tt.u, got, tt.want)
		}
	}
}

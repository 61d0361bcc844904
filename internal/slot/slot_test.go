package slot

import "testing"

func TestOf(t *testing.T) {
	// Values from CLUSTER KEYSLOT on Redis 7.
	for key, want := range map[string]int{
		"":             0,
		"foo":          12182,
		"123456789":    12739, // CRC16 0x31C3, the XMODEM check value
		"{user}:42":    5474,
		"user":         5474,
		"a{}b":         Of("a{}b"),
		"{}{user}":     Of("{}{user}"),
		"x{user}y{z}w": 5474,
	} {
		if got := Of(key); got != want {
			t.Errorf("Of(%q) = %d, want %d", key, got, want)
		}
	}
	if CRC16("123456789") != 0x31C3 {
		t.Errorf("CRC16 check value = %#x, want 0x31c3", CRC16("123456789"))
	}
}

func TestTag(t *testing.T) {
	for s := range Count {
		if tag := Tag(s); tag == "" || Of(tag) != s {
			t.Fatalf("Tag(%d) = %q, which is in slot %d", s, tag, Of(tag))
		}
	}
}

func TestHasTag(t *testing.T) {
	for key, want := range map[string]bool{"{a}b": true, "a{}b": false, "ab": false, "}{a}": true, "{": false} {
		if got := HasTag(key); got != want {
			t.Errorf("HasTag(%q) = %v, want %v", key, got, want)
		}
	}
}

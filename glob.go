package dlock

// matchPattern reports whether s matches the Redis glob pattern, byte by
// byte, as KEYS and SCAN MATCH do (Redis's stringmatchlen): * matches any
// run of bytes, ? one byte, [abc] [^abc] [a-z] a class, and \ escapes the
// next byte. An unclosed [ matches up to the end of the pattern, as in Redis.
func matchPattern(pattern, s string) bool {
	// One pass with backtracking to the last '*' only: a later star can
	// match whatever an earlier one would have, so this is enough, and it
	// takes at most len(pattern)*len(s) steps on megabyte keys too.
	px, sx := 0, 0
	starPx, starSx := -1, 0
	for px < len(pattern) || sx < len(s) {
		if px < len(pattern) {
			switch c := pattern[px]; c {
			case '*':
				starPx, starSx = px, sx
				px++
				continue
			case '?':
				if sx < len(s) {
					px, sx = px+1, sx+1
					continue
				}
			case '[':
				if sx < len(s) {
					if rest, ok := matchClass(pattern[px+1:], s[sx]); ok {
						px, sx = len(pattern)-len(rest), sx+1
						continue
					}
				}
			default:
				width := 1
				if c == '\\' && px+1 < len(pattern) {
					c, width = pattern[px+1], 2
				}
				if sx < len(s) && s[sx] == c {
					px, sx = px+width, sx+1
					continue
				}
			}
		}
		if starPx < 0 || starSx >= len(s) {
			return false
		}
		starSx++ // let the last star take one more byte
		px, sx = starPx+1, starSx
	}
	return true
}

// matchClass matches c against the class that starts at class (after the
// '['), and returns the pattern after the class's ']'.
func matchClass(class string, c byte) (rest string, ok bool) {
	negate := len(class) > 0 && class[0] == '^'
	if negate {
		class = class[1:]
	}
	match := false
	for len(class) > 0 && class[0] != ']' {
		switch {
		case class[0] == '\\' && len(class) > 1:
			class = class[1:]
			match = match || class[0] == c
		case len(class) > 2 && class[1] == '-':
			lo, hi := class[0], class[2]
			if lo > hi {
				lo, hi = hi, lo
			}
			match = match || (lo <= c && c <= hi)
			class = class[2:]
		default:
			match = match || class[0] == c
		}
		class = class[1:]
	}
	if len(class) > 0 {
		class = class[1:] // the ']'
	}
	return class, match != negate
}

package engine

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
)

// A token is 22 random characters (never a dot, nor a colon: the scripts
// and the release messages use colons to separate a token from what
// follows it), multiMark for a multi-key holding, the holder's name if any
// (HolderSuffix), and the lock's value if any (ValueSuffix).
const (
	// RandomTokenLen is the length of a token's random part.
	RandomTokenLen  = 22
	holderSeparator = "~"
	valueSeparator  = "."
	// multiMark follows the random part of the token of a multi-key
	// holding, which every one of its keys holds: Inspect tells such a key
	// from a lock's by it, and the acquire of a lock pays nothing for it
	multiMark = "+"
)

// IsMultiToken reports whether token is the token of a multi-key holding
// (see multiMark).
func IsMultiToken(token string) bool {
	return len(token) > RandomTokenLen && token[RandomTokenLen:RandomTokenLen+len(multiMark)] == multiMark
}

var (
	holderEscaper   = strings.NewReplacer("%", "%25", ":", "%3A", ".", "%2E")
	holderUnescaper = strings.NewReplacer("%25", "%", "%3A", ":", "%2E", ".")
	valueEscaper    = strings.NewReplacer("%", "%25", ":", "%3A")
	valueUnescaper  = strings.NewReplacer("%25", "%", "%3A", ":")
)

// HolderSuffix returns what follows the random part of every token of a
// Client whose holder name is name: "" for none.
func HolderSuffix(name string) string {
	if name == "" {
		return ""
	}
	return holderSeparator + holderEscaper.Replace(name)
}

// ValueSuffix returns what follows the holder's name in a token that
// carries the value v (WithValue): "" for none.
func ValueSuffix(v string) string {
	if v == "" {
		return ""
	}
	return valueSeparator + valueEscaper.Replace(v)
}

// SplitToken returns the holder name and the value a token carries, "" for
// those it does not.
func SplitToken(token string) (holder, value string) {
	if len(token) <= RandomTokenLen {
		return "", ""
	}
	rest := strings.TrimPrefix(token[RandomTokenLen:], multiMark)
	if strings.HasPrefix(rest, holderSeparator) {
		name, after, _ := strings.Cut(rest[len(holderSeparator):], valueSeparator)
		holder = holderUnescaper.Replace(name)
		if after == "" {
			return holder, ""
		}
		rest = valueSeparator + after
	}
	if strings.HasPrefix(rest, valueSeparator) {
		value = valueUnescaper.Replace(rest[len(valueSeparator):])
	}
	return holder, value
}

// Fingerprint returns a short public name of a token: the first four bytes
// of its SHA-256, in hex; "" for no token.
func Fingerprint(token string) string {
	if token == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:4])
}

// newToken returns 128 random bits from crypto/rand, URL-safe base64.
func newToken() string { return newTokenWith("", "") }

// newTokenWith returns NewToken followed by a and b, in one allocation.
func newTokenWith(a, b string) string {
	_, _, token := newMarkedToken("", "", a, b)
	return token
}

// newMarkedToken returns a fresh token (NewToken followed by holder and
// value), the holder's name in Redis (class, then the token) and the name
// of the release marker of the holding it names on the lock whose fence key
// is fenceKey (see markerKey): one string holds all three, for one
// allocation. With no fenceKey, marker is "".
func newMarkedToken(fenceKey, class, holder, value string) (marker, name, token string) {
	var random [16]byte
	_, _ = rand.Read(random[:]) // never fails: it crashes the program instead
	var encoded [RandomTokenLen]byte
	base64.RawURLEncoding.Encode(encoded[:], random[:])
	var t strings.Builder
	prefix := 0
	if fenceKey != "" {
		prefix = markerPrefixLen(fenceKey)
	}
	t.Grow(prefix + len(class) + RandomTokenLen + len(holder) + len(value))
	if fenceKey != "" {
		writeMarkerPrefix(&t, fenceKey)
	}
	t.WriteString(class)
	t.Write(encoded[:])
	t.WriteString(holder)
	t.WriteString(value)
	s := t.String()
	if fenceKey != "" {
		marker = s
	}
	return marker, s[prefix:], s[prefix+len(class):]
}

// SplitValue returns the token and the since of a lock's value in Redis
// (see holder.lua): "token:since", or "token:since:w" once someone waits
// for it. The token is what comes before the first colon (the whole value
// if it has none, as a Redlock node's lock or another client's), and since
// the digits after it; 0 if there are none. It reads a value as the
// scripts' token_of and since_of do.
func SplitValue(v string) (token string, since int64) {
	token, rest, found := strings.Cut(v, ":")
	if !found {
		return v, 0
	}
	digits := strings.TrimSuffix(rest, ":w")
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return token, 0
	}
	since, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return token, 0 // it overflows: no time of dlock's
	}
	return token, since
}

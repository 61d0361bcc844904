package idempotency

import (
	"bytes"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// Any header value either parses to a key of 1 to 255 printable ASCII
// bytes, or is refused; a key, quoted as RFC 8941 says, parses back to
// itself.
func FuzzParseKey(f *testing.F) {
	for _, value := range []string{`"k"`, `"a\"b\\c";x=1`, `abc`, `""`, `"é"`, "\"a\"\r\nX: 1", `"k";s="x;y";b=:aGk=:`} {
		f.Add(value, false)
		f.Add(value, true)
	}
	f.Fuzz(func(t *testing.T, value string, bare bool) {
		key, err := parseKey([]string{value}, bare)
		if err != nil {
			return
		}
		if key == "" || len(key) > MaxKeyLength {
			t.Fatalf("parseKey(%q) = %q: %d bytes", value, key, len(key))
		}
		for i := 0; i < len(key); i++ {
			if key[i] < ' ' || key[i] >= 0x7f {
				t.Fatalf("parseKey(%q) = %q: byte %#x", value, key, key[i])
			}
		}
		quoted := `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
		if again, err := parseKey([]string{quoted}, false); err != nil || again != key {
			t.Fatalf("parseKey(%q) = %q, %v; want %q back", quoted, again, err, key)
		}
	})
}

// A stored response reads back as it was written, and any bytes are
// either a response or ErrCorrupt, never a panic.
func FuzzDecodeResponse(f *testing.F) {
	f.Add(encodeResponse(201, http.Header{"Location": {"/p/1"}, "Set-Cookie": {"a=1", "b=2"}}, nil, []byte("body")))
	f.Add(encodeResponse(200, http.Header{"Trailer": {"X-Sum"}}, http.Header{"X-Sum": {"1", "2"}, "x-raw": {""}}, []byte("body")))
	f.Add([]byte{})
	f.Add([]byte{0xc9, 0x01, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeResponse(b)
		if err != nil {
			return
		}
		again := encodeResponse(r.status, r.header, r.trailer, r.body)
		r2, err := decodeResponse(again)
		if err != nil || r2.status != r.status || !reflect.DeepEqual(r2.header, r.header) || !reflect.DeepEqual(r2.trailer, r.trailer) || !bytes.Equal(r2.body, r.body) {
			t.Fatalf("%q decoded to %+v, which encodes to %q, which decodes to %+v, %v", b, r, again, r2, err)
		}
	})
}

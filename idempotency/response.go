package idempotency

import (
	"encoding/binary"
	"fmt"
	"net/http"
	"strings"
)

// A stored response is the result that the Middleware stores for a request:
//
//	status (uvarint) | number of header lines (uvarint) |
//	    for each: name length (uvarint), name, value length (uvarint), value |
//	body
//
// A trailer field is a header line whose name is http.TrailerPrefix and the
// field's name, as net/http's handlers set it: no header field has a ':' in
// its name.

// hopByHop are the header fields that concern one connection, not the
// response: they are not stored (RFC 9110, section 7.6.1). The Trailer
// field, which declares the trailer fields, is stored with them.
var hopByHop = []string{
	"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Transfer-Encoding", "Upgrade",
}

// storedHeader returns the header lines of a response that are stored:
// all but the hop-by-hop ones, those that Connection names, the replay
// marker, and trailer fields.
func storedHeader(h http.Header) http.Header {
	out := h.Clone()
	for _, v := range h.Values("Connection") {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.TrimSpace(name); name != "" {
				out.Del(name)
			}
		}
	}
	for _, name := range hopByHop {
		out.Del(name)
	}
	out.Del(ReplayHeader)
	for name := range out {
		if strings.HasPrefix(name, http.TrailerPrefix) {
			delete(out, name)
		}
	}
	return out
}

// trailers returns the trailer fields that net/http sends after the body
// of a response: those the handler set as http.TrailerPrefix and a name in
// live, its header map once it returned, then the values in live of those
// that the Trailer field of sent, the header as it was sent, declares
// (RFC 9110, section 6.6.2), but for the fields a trailer must not carry.
// The names and the order of values are net/http's.
func trailers(sent, live http.Header) http.Header {
	var t http.Header
	for k, values := range live {
		if name, ok := strings.CutPrefix(k, http.TrailerPrefix); ok {
			if t == nil {
				t = make(http.Header)
			}
			t[name] = append(t[name], values...)
		}
	}
	for _, v := range sent["Trailer"] {
		for name := range strings.SplitSeq(v, ",") {
			name = http.CanonicalHeaderKey(strings.Trim(name, " \t"))
			if name == "" || !allowedInTrailer(name) {
				continue
			}
			for _, value := range live[name] {
				if t == nil {
					t = make(http.Header)
				}
				t[name] = append(t[name], value)
			}
		}
	}
	return t
}

// allowedInTrailer reports whether net/http sends the declared trailer
// field name, in canonical form: not one that framing, routing, or
// authentication needs before the body (RFC 9110, section 6.5.1).
func allowedInTrailer(name string) bool {
	switch name {
	case "Authorization", "Cache-Control", "Connection", "Content-Encoding",
		"Content-Length", "Content-Range", "Content-Type", "Expect", "Host",
		"Keep-Alive", "Max-Forwards", "Pragma", "Proxy-Authenticate",
		"Proxy-Authorization", "Proxy-Connection", "Range", "Realm", "Te",
		"Trailer", "Transfer-Encoding", "Www-Authenticate":
		return false
	}
	return !strings.HasPrefix(name, "If-")
}

// declared returns the canonical names that a header's Trailer field
// declares.
func declared(header http.Header) []string {
	var names []string
	for _, v := range header["Trailer"] {
		for name := range strings.SplitSeq(v, ",") {
			if name = strings.Trim(name, " \t"); name != "" {
				names = append(names, http.CanonicalHeaderKey(name))
			}
		}
	}
	return names
}

// encodeResponse returns the stored form of a response.
func encodeResponse(status int, header, trailer http.Header, body []byte) []byte {
	n := 0
	size := 2*binary.MaxVarintLen64 + len(body)
	for _, lines := range []http.Header{header, trailer} {
		for name, values := range lines {
			n += len(values)
			size += len(values) * (len(http.TrailerPrefix) + len(name) + 2*binary.MaxVarintLen64)
			for _, v := range values {
				size += len(v)
			}
		}
	}
	b := make([]byte, 0, size)
	b = binary.AppendUvarint(b, uint64(status))
	b = binary.AppendUvarint(b, uint64(n))
	for name, values := range header {
		for _, v := range values {
			b = appendString(b, name)
			b = appendString(b, v)
		}
	}
	for name, values := range trailer {
		for _, v := range values {
			b = binary.AppendUvarint(b, uint64(len(http.TrailerPrefix)+len(name)))
			b = append(append(b, http.TrailerPrefix...), name...)
			b = appendString(b, v)
		}
	}
	return append(b, body...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// storedResponse is a response read back from its stored form.
type storedResponse struct {
	status  int
	header  http.Header
	trailer http.Header // nil if none
	body    []byte
}

// decodeResponse reads the stored form of a response.
func decodeResponse(b []byte) (storedResponse, error) {
	d := decoder{b: b}
	status := d.uvarint()
	n := d.uvarint() // each header line takes at least two bytes
	if d.err == nil && (status < 100 || status > 999 || n > uint64(len(d.b)/2)) {
		d.fail()
	}
	if d.err != nil {
		return storedResponse{}, d.err
	}
	r := storedResponse{status: int(status), header: make(http.Header, n)}
	for i := uint64(0); i < n && d.err == nil; i++ {
		name, value := d.string(), d.string()
		if d.err != nil {
			break
		}
		if name, ok := strings.CutPrefix(name, http.TrailerPrefix); ok {
			if r.trailer == nil {
				r.trailer = make(http.Header)
			}
			r.trailer[name] = append(r.trailer[name], value)
			continue
		}
		r.header[name] = append(r.header[name], value)
	}
	if d.err != nil {
		return storedResponse{}, d.err
	}
	r.body = d.b
	return r, nil
}

// decoder reads a stored response; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() {
	d.err = fmt.Errorf("%w: a stored response is cut short or malformed", ErrCorrupt)
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.fail()
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

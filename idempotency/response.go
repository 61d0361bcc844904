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

// hopByHop are the header fields that concern one connection, not the
// response: they are not stored (RFC 9110, section 7.6.1).
var hopByHop = []string{
	"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// storedHeader returns the header lines of a response that are stored:
// all but the hop-by-hop ones, those that Connection names, and the
// replay marker.
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

// encodeResponse returns the stored form of a response.
func encodeResponse(status int, header http.Header, body []byte) []byte {
	n := 0
	size := 2*binary.MaxVarintLen64 + len(body)
	for name, values := range header {
		n += len(values)
		size += len(values) * (len(name) + 2*binary.MaxVarintLen64)
		for _, v := range values {
			size += len(v)
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
	return append(b, body...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// storedResponse is a response read back from its stored form.
type storedResponse struct {
	status int
	header http.Header
	body   []byte
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
		if d.err == nil {
			r.header[name] = append(r.header[name], value)
		}
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

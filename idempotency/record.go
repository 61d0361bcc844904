package idempotency

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
)

// A record is what the Store keeps under a key once a call finished: the
// outcome of fn, and a digest of the fingerprint it was called with. It is
// stored as
//
//	"idem1" | kind (1 byte) | SHA-256 of the fingerprint (32 bytes) | payload
//
// where kind is kindResult (the payload is fn's result) or kindFinalError
// (the payload is the message of the error fn marked Final).
type record struct {
	kind    byte
	digest  [sha256.Size]byte
	payload []byte
}

const (
	recordMagic    = "idem1"
	kindResult     = 'r'
	kindFinalError = 'e'
	recordHeader   = len(recordMagic) + 1 + sha256.Size
)

// encode returns the record as stored.
func (r record) encode() []byte {
	b := make([]byte, 0, recordHeader+len(r.payload))
	b = append(b, recordMagic...)
	b = append(b, r.kind)
	b = append(b, r.digest[:]...)
	return append(b, r.payload...)
}

// decodeRecord reads a stored record.
func decodeRecord(b []byte) (record, error) {
	if len(b) < recordHeader || !bytes.HasPrefix(b, []byte(recordMagic)) {
		return record{}, fmt.Errorf("%w: %d bytes without the record header", ErrCorrupt, len(b))
	}
	r := record{kind: b[len(recordMagic)], payload: b[recordHeader:]}
	copy(r.digest[:], b[len(recordMagic)+1:recordHeader])
	if r.kind != kindResult && r.kind != kindFinalError {
		return record{}, fmt.Errorf("%w: unknown kind %q", ErrCorrupt, r.kind)
	}
	return r, nil
}

// outcome returns what a replayed call returns: the result, or the final
// error, or ErrMismatch if the record was stored for another fingerprint.
func (r record) outcome(digest [sha256.Size]byte) ([]byte, error) {
	if r.digest != digest {
		return nil, ErrMismatch
	}
	if r.kind == kindFinalError {
		return nil, &FinalError{Err: errors.New(string(r.payload))}
	}
	return r.payload, nil
}

//go:build !unix

package top

// A keyReader reads the keys typed on a terminal; there is none on systems
// other than Unix, where dlock top cannot interrupt a read of the terminal
// to stop cleanly. Ctrl-C quits it there, by the interrupt it sends.
type keyReader struct {
	keys chan byte
}

// readKeys returns nil: see keyReader.
func readKeys() (*keyReader, error) { return nil, nil }

func (k *keyReader) stop() error { return nil }

package dlock

import (
	"fmt"

	"github.com/dlock-go/dlock/observe"
)

// WithObserver makes the Client tell o what it and its locks do (see
// package observe). Given more than once, every Observer given is told, in
// order. The default is no Observer, which costs nothing: no Event is
// built and nothing is allocated for it.
func WithObserver(o observe.Observer) Option {
	return func(c *clientConfig) {
		if o == nil {
			c.err = fmt.Errorf("%w: WithObserver(nil)", ErrInvalidOption)
			return
		}
		c.observers = append(c.observers, o)
	}
}

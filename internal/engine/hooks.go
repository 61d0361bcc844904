package engine

import "context"

// Hooks are told what the Engine does where no caller sees it: dlock's
// observer code implements them. An Engine without Hooks (nil) calls none
// and allocates nothing for them. Each method is called from the goroutine
// that did the work, and must not block.
type Hooks interface {
	// Held is told of a holding just obtained, before anything else can
	// see it (the renewer included).
	Held(h *Hold)
	// WaitStart is told that an acquire of kind on key starts to wait.
	WaitStart(ctx context.Context, kind *Kind, key string, record bool)
	// Refreshed is told how an automatic refresh of h went: err is nil
	// when it held, else why not.
	Refreshed(h *Hold, err error)
	// Ended is told once when h ends, released or lost, with the error Err
	// returns from then on.
	Ended(h *Hold, err error)
	// RecordEnded is told when a record (AsRecord) ran out, as its holder
	// meant.
	RecordEnded(h *Hold)
	// NodeError is told of a failure of a node, unless it only says that
	// the caller's context ended first.
	NodeError(e *NodeError)
}

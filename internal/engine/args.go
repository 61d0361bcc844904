package engine

// Each script's ARGV is a struct here, its fields in the order of the
// script's header; withArgs makes EVALSHA's arguments of one. A field of
// type any comes boxed already from its owner (a holding's name, a
// semaphore's limit, an Engine's settings): boxing allocates, and a
// holding's calls box each of them once.

// argv is the ARGV of one script.
type argv interface {
	// count is how many arguments there are.
	count() int
	// appendTo appends them to args, in the script's order.
	appendTo(args []any) []any
}

// withArgs returns o running s with o.keys and a. boxed are the first of
// o.keys boxed already by an earlier op of the same holding (see
// op.keyArgs), or nil: boxing a string allocates, and a release has the
// keys its acquire boxed.
func withArgs[A argv](o op, s *script, boxed []any, a A) op {
	return withMarkedArgs(o, s, boxed, nil, a)
}

// withMarkedArgs is withArgs for the scripts that end a holding (release,
// refresh): their KEYS are o.keys, then marker, the holding's release
// marker key (see markerKey), boxed. A Hold boxes a pointer to its own
// copy of the name, which allocates nothing (go-redis writes a *string as
// the string). marker nil: none, as withArgs.
func withMarkedArgs[A argv](o op, s *script, boxed []any, marker any, a A) op {
	keys := len(o.keys)
	if marker != nil {
		keys++
	}
	n := 3 + keys
	args := make([]any, n, n+a.count())
	args[0], args[1], args[2] = "evalsha", s.shaArg, keys
	for i, key := range o.keys {
		if i < len(boxed) {
			args[3+i] = boxed[i]
		} else {
			args[3+i] = key
		}
	}
	if marker != nil {
		args[n-1] = marker
	}
	o.script, o.argv = s, a.appendTo(args)
	return o
}

// acquireArgv is acquire.lua's ARGV.
type acquireArgv struct {
	holder any   // the holder's name: its token
	ttl    int64 // milliseconds
}

func (acquireArgv) count() int { return 2 }

func (a acquireArgv) appendTo(args []any) []any { return append(args, a.holder, a.ttl) }

// queueAcquireArgv is queue_acquire.lua's ARGV, and hold_acquire.lua's.
type queueAcquireArgv struct {
	holder any   // the holder's name: its token, after its class for a shared hold
	ttl    int64 // milliseconds
	lease  int64 // the waiter's lease in the queue, milliseconds; 0 to not join it
	notify string
	mode   string // "barge", or "" for a fair waiter
	woken  string // "1" when a release woke the waiter
	limit  any    // hold_acquire.lua: a semaphore's limit; nil for other kinds, and then absent
}

func (a queueAcquireArgv) count() int {
	if a.limit != nil {
		return 7
	}
	return 6
}

func (a queueAcquireArgv) appendTo(args []any) []any {
	args = append(args, a.holder, a.ttl, a.lease, a.notify, a.mode, a.woken)
	if a.limit != nil {
		args = append(args, a.limit)
	}
	return args
}

// releaseArgv is release.lua's ARGV, and hold_release.lua's.
type releaseArgv struct {
	holder any
	mode   string // "" to release, "quiet", or "leave" for a waiter's leave
	ttl    int64  // with "leave": the waiter's ttl, which names it in the queue, milliseconds
	notify string // with "leave": the waiter's channel, "" if none
	// call is the number of the call among the releases of the holding
	// (see Hold.nextCall), boxed, or takeBack: the script's release marker
	// records it, so that a copy of the call sent again knows it is one
	call any
	releaseSetting
	limit any // hold_release.lua: a semaphore's limit; nil for other kinds, and then absent
	// release.lua for Hold.ReleaseStoring: a value to store, and its ttl
	// in milliseconds; nil: absent
	value    []byte
	valueTTL int64
}

func (a releaseArgv) count() int {
	switch {
	case a.limit != nil:
		return 9
	case a.value != nil:
		return 10
	}
	return 8
}

func (a releaseArgv) appendTo(args []any) []any {
	args = append(args, a.holder, a.mode, a.ttl, fairLeaseMillis, a.notify, a.counted, a.call, a.markerTTL)
	switch {
	case a.limit != nil:
		args = append(args, a.limit)
	case a.value != nil:
		args = append(args, a.value, a.valueTTL)
	}
	return args
}

// fairLeaseMillis is FairLease for the scripts' ARGV, boxed once: never
// changed.
var fairLeaseMillis any = FairLease.Milliseconds()

// takeBack is the call number of the release of an acquire that handed
// out no Hold (see attempt.undo): boxed once.
var takeBack any = int64(0)

// releaseSetting is what every release of an Engine tells its script
// besides the holding and the call, boxed once.
type releaseSetting struct {
	// counted: what a release tells its script of PUBLISH's count (see
	// release.lua): "1" on a single server or Sentinel, "" on a Cluster or
	// a Redlock quorum
	counted any
	// markerTTL: how long a release marker lives, in milliseconds (see
	// Engine.markerTTL)
	markerTTL any
}

// refreshArgv is refresh.lua's ARGV, and hold_refresh.lua's.
type refreshArgv struct {
	holder any
	ttl    int64 // milliseconds
	// call and markerTTL: a release that keeps the holding for ttl
	// (Hold.ReleaseAfter), numbered as a release (see releaseArgv); nil
	// for a refresh, and then absent
	call, markerTTL any
}

func (a refreshArgv) count() int {
	if a.call != nil {
		return 4
	}
	return 2
}

func (a refreshArgv) appendTo(args []any) []any {
	if a.call != nil {
		return append(args, a.holder, a.ttl, a.call, a.markerTTL)
	}
	return append(args, a.holder, a.ttl)
}

// ttlArgv is ttl.lua's ARGV, and hold_ttl.lua's.
type ttlArgv struct{ holder any }

func (ttlArgv) count() int { return 1 }

func (a ttlArgv) appendTo(args []any) []any { return append(args, a.holder) }

// raiseFenceArgv is raise_fence.lua's ARGV, and hold_raise_fence.lua's.
type raiseFenceArgv struct {
	holder any
	fence  int64  // 0 to hand one out, else the fence to store
	tag    string // the holder's tag, stored with the fence (see fenceTag)
	ttl    int64  // one deployment: the lock's ttl in milliseconds; 0: none
}

func (a raiseFenceArgv) count() int {
	if a.ttl > 0 {
		return 4
	}
	return 3
}

func (a raiseFenceArgv) appendTo(args []any) []any {
	args = append(args, a.holder, a.fence, a.tag)
	if a.ttl > 0 {
		args = append(args, a.ttl)
	}
	return args
}

// forceReleaseArgv is force_release.lua's ARGV.
type forceReleaseArgv struct {
	id   string   // the call's id, which the deletion's mark records
	seen []string // the SHA-1 of the holders Inspect saw (Inspection.Seen)
}

func (a forceReleaseArgv) count() int { return 1 + len(a.seen) }

func (a forceReleaseArgv) appendTo(args []any) []any {
	args = append(args, a.id)
	for _, s := range a.seen {
		args = append(args, s)
	}
	return args
}

// inspectArgv is the ARGV of inspect.lua: 'watch' to mark the lock as
// waited for (WaitRelease), or none.
type inspectArgv struct{ watch bool }

func (a inspectArgv) count() int {
	if a.watch {
		return 1
	}
	return 0
}

func (a inspectArgv) appendTo(args []any) []any {
	if a.watch {
		return append(args, "watch")
	}
	return args
}

package redistest

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// slotRange is the slots from first to last, both included.
type slotRange struct{ first, last int }

// clusterNode is one line of CLUSTER NODES, reduced to what all nodes of a
// settled cluster agree on.
type clusterNode struct {
	id       string
	primary  bool
	masterID string // the primary a replica follows; "" for a primary
	slots    []slotRange
	// pending marks a node still in handshake or without an address, that
	// the cluster does not fully know yet.
	pending bool
}

// clusterView is a node's view of the cluster, from its CLUSTER NODES.
type clusterView struct {
	nodes map[string]*clusterNode // by ID
	// key is the view in a canonical form, which is the same on every node
	// of a settled cluster: no flags such as myself or fail?, no times or
	// link states, which differ from node to node.
	key string
}

// parseClusterNodes parses the reply to CLUSTER NODES, whose lines read
//
//	<id> <ip:port@cport> <flags> <master> <ping-sent> <pong-recv> <epoch> <link> <slot>...
func parseClusterNodes(reply string) (*clusterView, error) {
	v := &clusterView{nodes: make(map[string]*clusterNode)}
	for line := range strings.Lines(reply) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if len(fields) < 8 {
			return nil, fmt.Errorf("CLUSTER NODES: short line %q", line)
		}
		n := &clusterNode{id: fields[0]}
		for flag := range strings.SplitSeq(fields[2], ",") {
			switch flag {
			case "master":
				n.primary = true
			case "handshake", "noaddr":
				n.pending = true
			}
		}
		if !n.primary && fields[3] != "-" {
			n.masterID = fields[3]
		}
		for _, field := range fields[8:] {
			if strings.HasPrefix(field, "[") {
				continue // a slot being imported or migrated
			}
			r, err := parseSlotRange(field)
			if err != nil {
				return nil, fmt.Errorf("CLUSTER NODES: %w in %q", err, line)
			}
			n.slots = append(n.slots, r)
		}
		v.nodes[n.id] = n
	}
	v.key = v.canonical()
	return v, nil
}

// parseSlotRange parses "5" or "0-5460".
func parseSlotRange(s string) (slotRange, error) {
	firstText, lastText, isRange := strings.Cut(s, "-")
	first, err := strconv.Atoi(firstText)
	if err != nil {
		return slotRange{}, fmt.Errorf("bad slot %q", s)
	}
	last := first
	if isRange {
		if last, err = strconv.Atoi(lastText); err != nil {
			return slotRange{}, fmt.Errorf("bad slot range %q", s)
		}
	}
	return slotRange{first, last}, nil
}

// canonical returns the view as text, nodes sorted by ID.
func (v *clusterView) canonical() string {
	ids := make([]string, 0, len(v.nodes))
	for id := range v.nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b strings.Builder
	for _, id := range ids {
		n := v.nodes[id]
		role := "replica-of-" + n.masterID
		if n.primary {
			role = "primary"
		}
		fmt.Fprintf(&b, "%s %s", id, role)
		if n.pending {
			b.WriteString(" pending")
		}
		for _, r := range n.slots {
			fmt.Fprintf(&b, " %d-%d", r.first, r.last)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// ownerOf returns the ID of the primary that serves slot, or "".
func (v *clusterView) ownerOf(slot int) string {
	for id, n := range v.nodes {
		if !n.primary {
			continue
		}
		for _, r := range n.slots {
			if r.first <= slot && slot <= r.last {
				return id
			}
		}
	}
	return ""
}

// coverage returns the primaries' slot ranges in slot order with their
// owners, and the first slot that no primary serves, or -1 if every slot is
// served.
func (v *clusterView) coverage() (ranges []ownedRange, unserved int) {
	for id, n := range v.nodes {
		if n.primary {
			for _, r := range n.slots {
				ranges = append(ranges, ownedRange{r, id})
			}
		}
	}
	slices.SortFunc(ranges, func(a, b ownedRange) int { return cmp.Compare(a.first, b.first) })
	next := 0
	for _, r := range ranges {
		if r.first > next {
			return ranges, next
		}
		next = max(next, r.last+1)
	}
	if next < Slots {
		return ranges, next
	}
	return ranges, -1
}

// ownedRange is a slot range and the ID of the primary that serves it.
type ownedRange struct {
	slotRange
	owner string
}

// splitSlots divides the slots among n primaries in contiguous ranges whose
// sizes differ by at most one, as redis-cli --cluster create does: 0-5460,
// 5461-10922 and 10923-16383 for three.
func splitSlots(n int) []slotRange {
	perNode := float64(Slots) / float64(n)
	ranges := make([]slotRange, n)
	first := 0
	for i := range ranges {
		last := int(math.Round(float64(i+1)*perNode - 1))
		if i == n-1 {
			last = Slots - 1
		}
		ranges[i] = slotRange{first, last}
		first = last + 1
	}
	return ranges
}

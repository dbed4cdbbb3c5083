package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"
)

// lockReport is what inspect prints; its JSON form is a stable interface
// for scripts, so fields are only ever added.
type lockReport struct {
	Name      string       `json:"name"`
	Prefix    string       `json:"prefix"`
	Quorum    int          `json:"quorum"`    // nodes that must agree
	Reachable int          `json:"reachable"` // nodes that answered
	Holder    string       `json:"holder"`    // the owner on the most nodes; "" when free everywhere
	HeldOn    int          `json:"held_on"`   // nodes where Holder holds it
	Voting    int          `json:"voting"`    // nodes that answered and would vote (see nodeState.Votes)
	Summary   *lockSummary `json:"summary"`   // the library's reading (Client.Inspect)
	Nodes     []nodeState  `json:"nodes"`
}

// lockSummary is Client.Inspect's LockInfo without the nodes.
type lockSummary struct {
	Held    bool   `json:"held"`              // one owner holds it on a quorum
	Owner   string `json:"owner_fingerprint"` // that owner's fingerprint
	Holds   int    `json:"holds"`
	PTTLms  int64  `json:"pttl_ms"` // how long a quorum still holds it
	Waiting int    `json:"waiting"`
	Fence   uint64 `json:"fence"`
	// ForcedMs: a ForceUnlock ended a handing, and the lock stays held by
	// no client on some node for up to this long (0: none).
	ForcedMs int64  `json:"forced_handing_ms,omitempty"`
	Error    string `json:"error,omitempty"` // e.g. no quorum answered
}

// nodeState is one node's view of the lock.
type nodeState struct {
	Node      int      `json:"node"`
	Addr      string   `json:"addr"`
	Reachable bool     `json:"reachable"`
	Error     string   `json:"error,omitempty"`
	Owner     string   `json:"owner,omitempty"` // owner id holding the lock on this node
	Holds     int      `json:"holds"`           // the owner's reentrant holds
	PTTLms    int64    `json:"pttl_ms"`         // remaining TTL; -2 when the lock key does not exist
	Queue     []waiter `json:"queue"`           // fair waiters, first in line first
	Fence     int64    `json:"fence"`           // the fencing counter (0 when never used)
	// Marker is the node's marker of complete data: "complete",
	// "declared" (by redlock init), "missing" (it lost its data, or is
	// new), or the node time (RFC 3339) since which its data is complete
	// and, in brackets, the rule that made it.
	Marker string `json:"marker,omitempty"`
	// QuarantinedUntil: the restart guard holds the node's vote back
	// until then (node time, RFC 3339).
	QuarantinedUntil string `json:"quarantined_until,omitempty"`
	// ClockOffsetMS is the node's clock minus this host's, at the read.
	ClockOffsetMS float64 `json:"clock_offset_ms"`
	// ClockRate is a lower bound of the node's clock rate against this
	// host's over -clock-sample (0: not measured); ClockFast: above
	// 1 + -drift.
	ClockRate float64 `json:"clock_rate,omitempty"`
	ClockFast bool    `json:"clock_fast"`
	// Votes: the node answered and the library's checks would count it;
	// Why says why not (or what could not be checked).
	Votes bool     `json:"votes"`
	Why   []string `json:"why,omitempty"`

	clock clockReading // the first TIME reading
}

// waiter is one owner in a fair queue.
type waiter struct {
	Owner  string `json:"owner"`
	Ticket int64  `json:"ticket"` // its place: microseconds since the epoch when it started waiting
	// HeartbeatMS is how long until the waiter is dropped from the queue
	// unless it tries again; null when it has no heartbeat entry.
	HeartbeatMS *int64 `json:"heartbeat_ms"`
}

// summarize fills the fields that look across nodes.
func (r *lockReport) summarize() {
	counts := make(map[string]int)
	for _, n := range r.Nodes {
		if n.Reachable {
			r.Reachable++
		}
		if n.Owner != "" {
			counts[n.Owner]++
		}
	}
	for owner, count := range counts {
		if count > r.HeldOn || (count == r.HeldOn && owner < r.Holder) {
			r.Holder, r.HeldOn = owner, count
		}
	}
}

func writeJSON(w io.Writer, r *lockReport) error {
	encoder := json.NewEncoder(w)
	encoder.SetIndent("", "  ")
	return encoder.Encode(r)
}

// writeTable prints a headline, one row per node and the queue of each
// node that has one. It builds the text first so that one write, whose
// error is returned, puts it out.
func writeTable(out io.Writer, r *lockReport) error {
	w := new(bytes.Buffer)
	var headline string
	switch {
	case r.Reachable == 0:
		headline = "no node answered: nothing is known of the lock"
	case r.Holder == "":
		headline = "free on every node that answered"
	case r.HeldOn >= r.Quorum:
		headline = fmt.Sprintf("held by %s on %d nodes", r.Holder, r.HeldOn)
	default:
		headline = fmt.Sprintf("not held by a quorum (%s on %d nodes): expiring, or being acquired", r.Holder, r.HeldOn)
	}
	fmt.Fprintf(w, "lock %q (key %s{%s}), %d of %d nodes answered, %d vote, quorum %d: %s\n",
		r.Name, r.Prefix, r.Name, r.Reachable, len(r.Nodes), r.Voting, r.Quorum, headline)
	if s := r.Summary; s != nil {
		switch {
		case s.Error != "":
			fmt.Fprintf(w, "Client.Inspect: %s\n", s.Error)
		case s.Held:
			fmt.Fprintf(w, "Client.Inspect: held by owner fingerprint %s, %d holds, %s left; %d waiting; fence %d\n",
				s.Owner, s.Holds, pttl(s.PTTLms), s.Waiting, s.Fence)
		default:
			fmt.Fprintf(w, "Client.Inspect: not held by any owner on a quorum; %d waiting; fence %d\n", s.Waiting, s.Fence)
		}
		if s.ForcedMs > 0 {
			fmt.Fprintf(w, "Client.Inspect: a handing ForceUnlock ended keeps the lock from everyone on some nodes for up to %s more\n",
				pttl(s.ForcedMs))
		}
	}
	table := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(table, "NODE\tADDRESS\tSTATE\tOWNER\tHOLDS\tTTL\tQUEUED\tFENCE\tVOTES\tCLOCK")
	for _, n := range r.Nodes {
		writeNodeRow(table, &n)
	}
	_ = table.Flush() // into a buffer: cannot fail
	for _, n := range r.Nodes {
		for _, why := range n.Why {
			fmt.Fprintf(w, "node %d: %s\n", n.Node, why)
		}
	}
	for _, n := range r.Nodes {
		if len(n.Queue) == 0 {
			continue
		}
		fmt.Fprintf(w, "queue on node %d:\n", n.Node)
		for i, q := range n.Queue {
			heartbeat := "no heartbeat"
			if q.HeartbeatMS != nil {
				heartbeat = "heartbeat ends in " + pttl(*q.HeartbeatMS)
			}
			fmt.Fprintf(w, "  %d. %s  ticket %d  %s\n", i+1, q.Owner, q.Ticket, heartbeat)
		}
	}
	_, err := w.WriteTo(out)
	return err
}

// writeNodeRow prints one node's row of the table.
func writeNodeRow(table io.Writer, n *nodeState) {
	if !n.Reachable {
		fmt.Fprintf(table, "%d\t%s\tdown: %s\t\t\t\t\t\t\t\n", n.Node, n.Addr, n.Error)
		return
	}
	state, owner, holds, ttl := "free", "-", "-", "-"
	if n.Owner != "" {
		state, owner, holds, ttl = "held", n.Owner, strconv.Itoa(n.Holds), pttl(n.PTTLms)
	}
	if n.Error != "" {
		state = "error: " + n.Error
	}
	votes := "yes"
	if !n.Votes {
		votes = "no"
	}
	clock := fmt.Sprintf("%+.1fms", n.ClockOffsetMS)
	if n.ClockRate > 0 {
		clock += fmt.Sprintf(" rate≥%.3f", n.ClockRate)
	}
	fmt.Fprintf(table, "%d\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", n.Node, n.Addr, state, owner, holds, ttl, len(n.Queue), n.Fence, votes, clock)
}

// pttl shows a remaining time in milliseconds the way PTTL means it.
func pttl(ms int64) string {
	switch {
	case ms == -1:
		return "no expiry"
	case ms < 0:
		return "expired"
	}
	return (time.Duration(ms) * time.Millisecond).String()
}

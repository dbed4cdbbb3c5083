package core

import (
	"time"

	"github.com/quorumlock/redlock/node"
)

// Keys are the Redis names of one lock. The name sits in a hash tag so that
// every key of a lock lands in one Redis Cluster slot.
type Keys struct {
	Lock, Gone, Fence, Queue, Alive, Wake, Channel string
	// Readers: a read-write lock's writer tells its waiting readers there
	// when its release frees the lock (see node.Keys.Readers); "" otherwise
	Readers string
	Marker  string          // the node's marker of complete data (not the lock's)
	Guard   time.Duration   // the restart guard (see WithRestartGuard)
	Risks   node.Risk       // the risks the guard takes on trust (see WithAcceptedRisks)
	Clock   node.ClockCheck // the clock check (see WithClockCheck)
	Fenced  bool            // grants answer the fencing counter (WithFencing; see internal/leases/fencing.go)
}

func (k Keys) Node() node.Keys {
	return node.Keys{Lock: k.Lock, Gone: k.Gone, Fence: k.Fence, Queue: k.Queue, Alive: k.Alive, Wake: k.Wake,
		Marker: k.Marker, Guard: k.Guard, Risks: k.Risks, Clock: k.Clock, Readers: k.Readers, Fenced: k.Fenced}
}

func KeysFor(prefix, name string, guard time.Duration) Keys {
	base := prefix + "{" + name + "}"
	return Keys{
		Marker:  prefix + "node",
		Guard:   guard,
		Lock:    base,
		Gone:    base + ":gone",
		Fence:   base + ":fence",
		Queue:   base + ":queue",
		Alive:   base + ":alive",
		Wake:    base + ":wake",
		Channel: base + ":released",
	}
}

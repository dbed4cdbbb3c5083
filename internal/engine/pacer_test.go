package engine

import (
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/leases"
)

// A holder seen on a quorum of nodes is waited for until its TTL (its
// release notice normally comes first). One seen on fewer, the other nodes
// silent, may be an attempt that failed: its undo wakes no one, so the
// waiter looks again soon instead of sleeping through the TTL.
func TestPacer_holderSeenOnFewerThanAQuorumIsPolled(t *testing.T) {
	m := &Mutex{target: &leases.Target{}}
	held := outcome{held: true, seen: true, minPTTL: 30 * time.Second}
	if wait, ok := m.newPacer().next(held); !ok || wait != 30*time.Second+pttlMargin {
		t.Fatalf("held on a quorum: wait %v, %v; want the holder's TTL", wait, ok)
	}
	partial := outcome{held: true, seen: false, minPTTL: 30 * time.Second}
	if wait, ok := m.newPacer().next(partial); !ok || wait > 100*time.Millisecond {
		t.Fatalf("held on fewer than a quorum: wait %v, %v; want the first backoff step", wait, ok)
	}
}

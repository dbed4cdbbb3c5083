package node

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"time"
)

var (
	//go:embed scripts/permits.lua
	permitsSource string

	permitsScript = newLibScript("permits", false, permitsSource, guardSource)
)

// MaxPermits bounds a semaphore's permit count.
const MaxPermits = 1024

// Permits stores permits as the count of the semaphore whose count is at
// keys.Lock, unless a count is stored there already, and answers the
// stored count. A count equal to permits is kept for at least life from
// now (its life is never shortened); another one is left as it is. A node
// that lost its data less than keys.Guard ago answers a *Quarantine.
func (n *Node) Permits(ctx context.Context, keys Keys, permits int, life time.Duration) (int, error) {
	used := []string{keys.Lock, n.markerKey(keys)}
	reply, err := n.run(ctx, permitsScript, ClockCheck{}, used, strconv.Itoa(permits), n.guardArg(keys),
		milliseconds(max(life, time.Millisecond))).Result()
	if err != nil {
		return 0, conflicting(quarantined(err), used...)
	}
	return decodePermits(reply)
}

func decodePermits(reply any) (int, error) {
	stored, err := decimal(reply, MaxPermits)
	if err != nil || stored == 0 {
		return 0, fmt.Errorf("%w for the permit count: %v", ErrBadReply, reply)
	}
	return int(stored), nil
}

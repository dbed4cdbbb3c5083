package node

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed scripts/lower.lua
	lowerSource string

	lowerScript = redis.NewScript(guardSource + declareCommon + lowerSource)
)

// ErrLeaseOutlives reports a node where LowerGuard found a key under the
// prefix that lives longer than the guard asked: a lease the node granted
// may need the longer guard.
var ErrLeaseOutlives = errors.New("a key outlives the guard")

// LeaseOutlives is LowerGuard's refusal for a key that outlives to.
type LeaseOutlives struct {
	Key  string        // the key
	Left time.Duration // how long it lives on
	To   time.Duration // the guard asked
}

func (e *LeaseOutlives) Error() string {
	return fmt.Sprintf("%v: %s lives %v more, longer than %v; try again when it has gone (or shortened)",
		ErrLeaseOutlives, e.Key, e.Left, e.To)
}

func (e *LeaseOutlives) Is(target error) bool { return target == ErrLeaseOutlives }

// LowerGuard lowers the longest restart guard the node's marker under
// prefix records to to, when that is safe: the node votes now, and no key
// under prefix lives longer than to. It returns the guard the marker
// recorded before. A Client already running carries the longest guard it
// has heard of until it is made again. Not on a Redis Cluster member.
func LowerGuard(ctx context.Context, client redis.Scripter, prefix string, to time.Duration) (time.Duration, error) {
	if _, cluster := client.(*redis.ClusterClient); cluster {
		return 0, errors.New("redlock: lowering the guard of a Redis Cluster member is not supported; its markers are per slot")
	}
	if to <= 0 {
		return 0, fmt.Errorf("redlock: the guard to lower to must be positive, not %v", to)
	}
	marker := MarkerFor(client, prefix+"node", "")
	reply, err := lowerScript.Run(ctx, client, []string{marker}, globEscape(prefix)+"*", milliseconds(to)).StringSlice()
	if err != nil {
		return 0, quarantined(err)
	}
	return decodeLowered(reply, to)
}

func decodeLowered(reply []string, to time.Duration) (time.Duration, error) {
	ms := func(s string) (time.Duration, bool) {
		n, err := strconv.ParseInt(s, 10, 64)
		return time.Duration(n) * time.Millisecond, err == nil && n >= 0
	}
	switch {
	case len(reply) == 2 && (reply[0] == "lowered" || reply[0] == "kept"):
		if from, ok := ms(reply[1]); ok {
			return from, nil
		}
	case len(reply) == 3 && reply[0] == "live":
		if left, ok := ms(reply[2]); ok {
			return 0, &LeaseOutlives{Key: reply[1], Left: left, To: to}
		}
	case len(reply) == 2 && reply[0] == "marker":
		return 0, fmt.Errorf("redlock: the node has no marker (%q) to lower", reply[1])
	}
	return 0, fmt.Errorf("%w to lower the guard: %v", ErrBadReply, reply)
}

package node_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest"
)

// A node whose clock runs ten times fast (libfaketime): with the clock
// check its answers do not count, though the script ran (its fate is
// unknown to the caller, who must release); a node with a true clock
// counts; with the check off the fast node's grant counts.
func TestClockCheck_fastNode(t *testing.T) {
	libfaketime := redlocktest.RequireFaketime(t)
	cluster := redlocktest.Start(t, 2)
	cluster.Servers[1].SetEnv(redlocktest.FastClock(libfaketime, 10))
	if err := cluster.Servers[1].Restart(false); err != nil {
		t.Fatal(err)
	}
	clients := cluster.Clients(t)
	ctx := context.Background()
	check := node.ClockCheck{MaxRate: 1.01, Hold: time.Second}
	for i, fast := range []bool{false, true} {
		n := node.New(i, cluster.Addrs()[i], clients[i])
		t.Cleanup(n.Wait)
		if !n.ClockChecked() {
			t.Fatal("the clock of a plain client's node is not checked")
		}
		keys := keysOf("redlock:{clock}")
		keys.Clock = check
		for call := range 3 {
			got, err := n.Acquire(ctx, nil, keys, "o", fmt.Sprintf("h%d", call), time.Minute)
			var q *node.ClockQuarantine
			switch {
			case !fast && (err != nil || !got.Granted):
				t.Fatalf("node %d (true clock), call %d: %+v, %v; want granted", i, call, got, err)
			case fast && (!errors.As(err, &q) || q.Rate <= check.MaxRate || node.Answered(err) || !node.Unknown(err)):
				t.Fatalf("node %d (10x clock), call %d: %+v, %v; want a *ClockQuarantine of unknown fate", i, call, got, err)
			}
		}
		if holds, _ := cluster.Admin(t, i).HLen(ctx, keys.Lock).Result(); holds != 4 {
			t.Fatalf("node %d: %d fields in the lock; want the owner and 3 holds: the scripts ran", i, holds)
		}
		keys.Clock = node.ClockCheck{}
		if got, err := n.Acquire(ctx, nil, keys, "o", "h-unchecked", time.Minute); err != nil || !got.Granted {
			t.Fatalf("node %d with the check off: %+v, %v", i, got, err)
		}
	}
}

package node_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/redlock/node"
)

// A node that stops answering (paused: every call times out) is called
// down after one unanswered send: later calls fail at once, not sent,
// instead of each waiting for its timeout. Once the node answers a ping
// again, calls go out again.
func TestBreaker_silentNodeFailsFastThenRecovers(t *testing.T) {
	n, cluster := oneNode(t)
	keys := keysOf("redlock:{b}")
	call := func(timeout time.Duration, hold string) (time.Duration, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		start := time.Now()
		_, err := n.Acquire(ctx, nil, keys, "owner", hold, time.Second)
		return time.Since(start), err
	}
	if _, err := call(time.Second, "h0"); err != nil {
		t.Fatalf("node up: %v", err)
	}
	if err := cluster.Nodes[0].Pause(); err != nil {
		t.Fatal(err)
	}
	if _, err := call(100*time.Millisecond, "h1"); err == nil || !node.Unknown(err) {
		t.Fatalf("call to a paused node: %v; want a timeout of unknown fate", err)
	}
	for i := range 3 {
		took, err := call(5*time.Second, "h2")
		if !errors.Is(err, node.ErrNotSent) || node.Unknown(err) || took > 50*time.Millisecond {
			t.Fatalf("call %d after the timeout: %v after %v; want ErrNotSent at once", i, err, took)
		}
		time.Sleep(100 * time.Millisecond) // across a probe or two: the node stays down
	}
	if err := cluster.Nodes[0].Resume(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		_, err := call(time.Second, "h3")
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node resumed 3s ago, calls still fail: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

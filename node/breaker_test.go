package node_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/quorumlock/redlock/redlocktest/faultproxy"
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
	if err := cluster.Servers[0].Pause(); err != nil {
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
	if err := cluster.Servers[0].Resume(); err != nil {
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

// A node 150 ms away that was cut off is back as soon as the cut heals:
// the breaker's ping may take what a new connection through that link
// needs (four round trips). With pings bounded at 250 ms, such a node was
// never re-admitted.
func TestBreaker_farNodeComesBackAfterACut(t *testing.T) {
	cluster := redlocktest.Start(t, 1)
	proxy, err := faultproxy.New(cluster.Addrs()[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	proxy.SetRequestLatency(75 * time.Millisecond)
	proxy.SetLatency(75 * time.Millisecond)
	client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	t.Cleanup(func() { _ = client.Close() })
	n := node.New(0, proxy.Addr(), client)
	t.Cleanup(n.Wait)
	keys := keysOf("redlock:{far}")
	call := func(hold string) error {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_, err := n.Acquire(ctx, nil, keys, "owner", hold, time.Second)
		return err
	}
	warm, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := n.Warm(warm, node.ClockCheck{}); err != nil {
		t.Fatal(err)
	}
	if err := call("h0"); err != nil {
		t.Fatalf("node up: %v", err)
	}
	proxy.Cut()
	if err := call("h1"); err == nil {
		t.Fatal("a call through a cut link succeeded")
	}
	time.Sleep(600 * time.Millisecond) // the prober's pings time out meanwhile
	proxy.Heal()
	proxy.Reset() // the connections of the cut are gone: a new one is needed
	healed := time.Now()
	for err := call("h2"); err != nil; err = call("h2") {
		if time.Since(healed) > 5*time.Second {
			t.Fatalf("the link healed 5 s ago, calls still fail: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("back %v after the heal", time.Since(healed).Round(time.Millisecond))
}

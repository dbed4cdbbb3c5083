package redlocktest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
)

// newClient is a redlock Client over nodes, closed with the test.
func newClient(t *testing.T, nodes *redlocktest.Nodes, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	client, err := redlock.New(nodes.Clients(t), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

func TestNodes_aMinorityBrokenLocksOnAMajorityNot(t *testing.T) {
	nodes := redlocktest.StartBehindProxies(t, 3)
	// Long enough for a first call on a loaded machine (clock read, library
	// load, race detector); node 0's partition costs a try this much.
	client := newClient(t, nodes, redlock.WithNodeTimeout(500*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	try := func(name string) error {
		lease, err := client.Mutex(name).TryLock(ctx)
		if err == nil {
			err = lease.Unlock(ctx)
		}
		return err
	}
	nodes.Partition(t, 0)
	if err := try("a"); err != nil {
		t.Fatalf("node 0 partitioned, 2 of 3 answer: %v", err)
	}
	nodes.Pause(t, 1)
	if err := try("b"); !errors.Is(err, redlock.ErrNoQuorum) {
		t.Fatalf("node 0 partitioned and node 1 paused: %v, want ErrNoQuorum", err)
	}
	nodes.Heal(t, 0)
	nodes.Resume(t, 1)
	nodes.SetLatency(t, 2, 30*time.Millisecond)
	began := time.Now()
	if err := nodes.Clients(t)[2].Ping(ctx).Err(); err != nil || time.Since(began) < 60*time.Millisecond {
		t.Fatalf("PING over node 2's slowed link: %v after %v, want at least 60 ms", err, time.Since(began))
	}
	if err := try("c"); err != nil {
		t.Fatalf("healed and resumed, node 2 slow: %v", err)
	}
}

func TestNodes_restartKeepsWhatItSays(t *testing.T) {
	nodes := redlocktest.Start(t, 3, "--appendonly", "yes")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for i := range 3 {
		if err := nodes.Admin(t, i).Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	nodes.Restart(t, 0, redlocktest.Empty)
	nodes.Restart(t, 1, redlocktest.FromSnapshot)
	nodes.Restart(t, 2, redlocktest.FromDisk)
	for i, want := range []int64{0, 1, 1} {
		if got := nodes.Admin(t, i).Exists(ctx, "k").Val(); got != want {
			t.Fatalf("node %d after its restart: EXISTS k = %d, want %d", i, got, want)
		}
	}
	nodes.Kill(t, 2)
	if err := nodes.Admin(t, 2).Ping(ctx).Err(); err == nil {
		t.Fatal("node 2 answers after Kill")
	}
}

func TestNodes_aRestartedEmptyNodeDoesNotVote(t *testing.T) {
	nodes := redlocktest.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	nodes.Restart(t, 0, redlocktest.Empty)
	nodes.Kill(t, 1)
	client := newClient(t, nodes)
	_, err := client.Mutex("after-restart").TryLock(ctx)
	if !errors.Is(err, redlock.ErrNoQuorum) || !errors.Is(err, redlock.ErrQuarantined) {
		t.Fatalf("node 0 restarted empty, node 1 killed: %v, want no quorum for node 0's quarantine", err)
	}
}

func TestNodes_skewClockRunsOneNodesClockFast(t *testing.T) {
	nodes := redlocktest.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := nodes.Admin(t, 0).Set(ctx, "k", "v", 20*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	nodes.SkewClock(t, 0, 10)
	time.Sleep(500 * time.Millisecond)
	// 0.5 s real is 5 s on the node: at least 4 s gone, where 1 s would be.
	if pttl := nodes.Admin(t, 0).PTTL(ctx, "k").Val(); pttl <= 0 || pttl > 16*time.Second {
		t.Fatalf("PTTL %v half a second after SkewClock(10) of a 20 s key", pttl)
	}
}

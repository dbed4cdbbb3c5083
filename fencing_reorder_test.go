package redlock_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/redis/go-redis/v9"
)

// The reviewer's trail, on five real nodes N, X, V, Z, W (0..4) whose
// fencing counters diverged (Z = W = 5). B's requests to N, Z and W are
// held on their way; B wins X and V. A wins N, Z, W and writes its token
// back to X, V, Z and W, but its write to N is held on its way for a
// while. A's lease ends (its TTL runs out). B's held request then reaches
// N, which is free: B's grant completes with N, X, V. With tokens taken at
// vote time and written back unchecked, B's token was read from X and V
// before A's write-back, A's Lock returned on the write-backs to X, V, Z
// and W, and the token went from A's 6 to B's 2. Now the write-backs to X
// and V are refused (B holds them): A's Lock waits for N's.
func TestFencing_delayedVoteAfterThePreviousLeaseEnded_tokenStillIncreases(t *testing.T) {
	cluster := redlocktest.Start(t, 5)
	ctx := testContext(t)
	const name = "ledger"
	for _, i := range []int{3, 4} {
		if err := cluster.Admin(t, i).Set(ctx, "redlock:{"+name+"}:fence", 5, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}

	// B reaches every node through a proxy; its links to N, Z, W hold
	// what it sends until healed.
	proxies, bNodes := proxiedClients(t, cluster)
	for _, i := range []int{0, 3, 4} {
		proxies[i].Cut()
	}
	b, err := redlock.New(bNodes, redlock.WithFencing(), redlock.WithWatchdog(false), redlock.WithNodeTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	t.Cleanup(func() {
		for _, proxy := range proxies {
			proxy.Heal() // so that B's held stragglers end before B closes
		}
	})

	// A reaches every node directly, but its write-back to N is held on
	// its way for 300 ms.
	dropWriteBack := make(chan struct{})
	aNodes := cluster.Clients(t)
	aNodes[0].AddHook(dropFenceWriteBack{until: dropWriteBack})
	release := sync.OnceFunc(func() { close(dropWriteBack) })
	held := time.AfterFunc(time.Hour, release)
	a, err := redlock.New(aNodes, redlock.WithFencing(), redlock.WithWatchdog(false), redlock.WithTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	t.Cleanup(release) // before the Clients close

	bDone := tryLockAsync(ctx, b.Mutex(name))
	waitFor(t, 5*time.Second, "B's votes on X and V", func() bool {
		return holderOn(t, cluster, 1, name) != "" && holderOn(t, cluster, 2, name) != ""
	})

	held.Reset(300 * time.Millisecond)
	first := mustLock(t, ctx, a.Mutex(name)) // N, Z, W
	time.Sleep(time.Until(first.Until()) + 100*time.Millisecond)
	if first.Err() == nil {
		t.Fatal("A's lease outlived its TTL")
	}
	waitFor(t, 2*time.Second, "A's key to expire on N", func() bool { return holderOn(t, cluster, 0, name) == "" })

	proxies[0].Heal() // B's held request reaches N
	got := <-bDone
	if got.err != nil {
		t.Fatalf("B: %v", got.err)
	}
	defer func() { _ = got.lease.Unlock(context.Background()) }()
	if got.lease.Token() <= first.Token() {
		t.Fatalf("A's lease ended before B's was granted, yet tokens went %d then %d", first.Token(), got.lease.Token())
	}
}

// dropFenceWriteBack holds every fencing write-back (a script call whose
// first key is a ":fence" key, with the token, and the hold when checked)
// until until is closed, then sends it; a call whose deadline passes first
// is lost: the command never reaches the node.
type dropFenceWriteBack struct{ until <-chan struct{} }

func (d dropFenceWriteBack) DialHook(next redis.DialHook) redis.DialHook { return next }

func (d dropFenceWriteBack) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if err := d.hold(ctx, cmd); err != nil {
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (d dropFenceWriteBack) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if err := d.hold(ctx, cmd); err != nil {
				for _, cmd := range cmds {
					cmd.SetErr(err)
				}
				return err
			}
		}
		return next(ctx, cmds)
	}
}

func (d dropFenceWriteBack) hold(ctx context.Context, cmd redis.Cmder) error {
	args := cmd.Args()
	name, _ := args[0].(string)
	if (len(args) != 5 && len(args) != 7) || (name != "evalsha" && name != "eval") {
		return nil
	}
	if key, _ := args[3].(string); !strings.HasSuffix(key, ":fence") {
		return nil
	}
	select {
	case <-d.until:
		return nil
	case <-ctx.Done():
		return &net.OpError{Op: "write", Net: "tcp", Err: ctx.Err()}
	}
}

// holderOn is the owner field of the lock name on node i ("" when free).
func holderOn(t *testing.T, cluster *redlocktest.Nodes, i int, name string) string {
	t.Helper()
	owner, err := cluster.Admin(t, i).HGet(context.Background(), "redlock:{"+name+"}", "owner").Result()
	if err != nil && err != redis.Nil {
		t.Fatalf("node %d: %v", i, err)
	}
	return owner
}

// The lock's own restart rule (a node restarts empty only after the TTL)
// applied to fencing counters, which never expire: a client that reached
// only nodes 0..2 took five tokens; then nodes 0 and 1 restart empty after
// the TTL, and node 2 is down. Another client's quorum {0, 1, 3, 4} has
// never seen a token: with counters alone it handed out token 1.
func TestFencing_minorityRestartedEmptyAfterTheTTL_tokenStillIncreases(t *testing.T) {
	cluster := redlocktest.Start(t, 5)
	ctx := testContext(t)
	const ttl = 300 * time.Millisecond
	opts := []redlock.Option{redlock.WithFencing(), redlock.WithTTL(ttl), redlock.WithNodeTimeout(200 * time.Millisecond)}
	for _, i := range []int{3, 4} {
		if err := cluster.Servers[i].Kill(); err != nil {
			t.Fatal(err)
		}
	}
	first := newClient(t, cluster, opts...)
	var last uint64
	for range 5 {
		lease := mustLock(t, ctx, first.Mutex("ledger"))
		if lease.Token() <= last {
			t.Fatalf("tokens %d then %d", last, lease.Token())
		}
		last = lease.Token()
		mustUnlock(t, lease)
	}
	time.Sleep(ttl + 50*time.Millisecond)
	for _, i := range []int{3, 4, 0, 1} {
		if err := cluster.Servers[i].Restart(false); err != nil {
			t.Fatal(err)
		}
	}
	if err := cluster.Servers[2].Kill(); err != nil {
		t.Fatal(err)
	}
	second := newClient(t, cluster, opts...)
	lease := mustLock(t, ctx, second.Mutex("ledger"))
	defer mustUnlock(t, lease)
	if lease.Token() <= last {
		t.Fatalf("after a minority restarted empty past the TTL, tokens went %d then %d", last, lease.Token())
	}
}

package redlock_test

import (
	"slices"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/quorumlock/redlock/redlocktest/faultproxy"
	"github.com/redis/go-redis/v9"
)

// distantClient is a Client whose link to node i has a round trip of
// rtts[i], half of it each way (the notices too).
func distantClient(t *testing.T, cluster *redlocktest.Nodes, rtts []time.Duration, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	nodes := make([]redis.UniversalClient, len(rtts))
	for i, addr := range cluster.Addrs() {
		proxy, err := faultproxy.New(addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = proxy.Close() })
		proxy.SetRequestLatency(rtts[i] / 2)
		proxy.SetLatency(rtts[i] / 2)
		nodes[i] = redis.NewClient(&redis.Options{Addr: proxy.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1,
			DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
		t.Cleanup(func() { _ = nodes[i].Close() })
	}
	c, err := redlock.New(nodes, append([]redlock.Option{redlock.WithNodeTimeout(time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// handOver has waiter Lock while holder is held, unlocks holder after
// hold, and returns the waiter's lease and the time from the Unlock to the
// grant.
func handOver(t *testing.T, holder *redlock.Lease, waiter *redlock.Mutex, hold time.Duration) (*redlock.Lease, time.Duration) {
	t.Helper()
	type result struct {
		lease *redlock.Lease
		at    time.Time
		err   error
	}
	got := make(chan result, 1)
	go func() {
		lease, err := waiter.Lock(testContext(t))
		got <- result{lease, time.Now(), err}
	}()
	time.Sleep(hold)
	released := time.Now()
	mustUnlock(t, holder)
	r := <-got
	if r.err != nil {
		t.Fatalf("waiter's Lock: %v", r.err)
	}
	return r.lease, r.at.Sub(released)
}

// pingPong has two Clients over links of the given round trips pass the
// lock back and forth, each holder unlocking hold after its grant while
// the other waits: a takes it free (a direct holder) and b is handed it,
// then a is handed it by b (a holder that was handed it itself). It
// returns both kinds of handoff times, sorted; a first round, which loads
// scripts and subscribes channels, is not counted.
func pingPong(t *testing.T, rtts []time.Duration, rounds int, hold time.Duration, opts ...redlock.Option) (direct, handed []time.Duration) {
	t.Helper()
	cluster := redlocktest.Start(t, len(rtts))
	// A short TTL: a hold left on a minority by a call whose fate was
	// unknown (a loaded machine) lapses before the next round needs every
	// node free.
	opts = append([]redlock.Option{redlock.WithTTL(3 * time.Second)}, opts...)
	a := distantClient(t, cluster, rtts, opts...).Mutex("pingpong")
	b := distantClient(t, cluster, rtts, opts...).Mutex("pingpong")
	for round := range rounds + 1 {
		// A handing left behind on a minority lapses within the queue's
		// span, a hold within the TTL.
		waitFor(t, 10*time.Second, "the lock free on every node", func() bool {
			return !slices.ContainsFunc(ownersOf(t, cluster, a), func(o string) bool { return o != "" })
		})
		held := holdEverywhere(t, cluster, a)
		lease, fromDirect := handOver(t, held, b, hold)
		lease, fromHanded := handOver(t, lease, a, hold)
		mustUnlock(t, lease)
		if round > 0 {
			direct, handed = append(direct, fromDirect), append(handed, fromHanded)
		}
	}
	slices.Sort(direct)
	slices.Sort(handed)
	return direct, handed
}

// A holder that was itself handed the lock hands it on as fast as one
// that took it free. It used to leave the queues of the far nodes 3 ms
// after it took its lease from the near ones' notices, before the far
// nodes' notices came: the leave freed the lock there, the next waiter's
// attempt was granted there and failed, and its undo on the farthest node
// came before it could take the lock from this holder's release. With
// round trips of 5/20/50/80/120 ms its handoffs took 116 ms (p50) against
// 55 ms from a direct holder; with 1/10/10/100/100 ms, 95 against 14.
// The bound is on the ratio of the medians, far from both.
func TestHandoff_handedHolderHandsOnAsFast(t *testing.T) {
	ms := func(rtts ...int) []time.Duration {
		out := make([]time.Duration, len(rtts))
		for i, rtt := range rtts {
			out[i] = time.Duration(rtt) * time.Millisecond
		}
		return out
	}
	for _, run := range []struct {
		name  string
		rtts  []time.Duration
		opts  []redlock.Option
		ratio float64
	}{
		{"plain", ms(5, 20, 50, 80, 120), nil, 1.5},
		{"fair", ms(5, 20, 50, 80, 120), []redlock.Option{redlock.WithFair()}, 1.5},
		{"fair near", ms(1, 10, 10, 100, 100), []redlock.Option{redlock.WithFair()}, 3},
	} {
		t.Run(run.name, func(t *testing.T) {
			direct, handed := pingPong(t, run.rtts, 5, 200*time.Millisecond, run.opts...)
			fromDirect, fromHanded := quantile(direct, 0.5), quantile(handed, 0.5)
			t.Logf("round trips %v: handoff p50 %v from a direct holder %v, %v from a handed one %v",
				run.rtts, fromDirect, direct, fromHanded, handed)
			if float64(fromHanded) > run.ratio*float64(fromDirect) {
				t.Fatalf("a handed holder hands on in %v (p50), a direct one in %v: more than %.1f times slower",
					fromHanded, fromDirect, run.ratio)
			}
		})
	}
}

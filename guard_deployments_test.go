package redlock_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/quorumlock/redlock/redlocktest/redisproc"
	"github.com/redis/go-redis/v9"
)

// The restart guard where it used to take a deployment on trust: failover
// to a replica, a user without INFO, an evicting memory policy, mixed TTLs
// (docs/restart-guard.md). Each test grants no second owner with default
// options, or sees the library refuse at once naming the cause.

// neverGrantedBefore tries b until end and fails the test on a grant.
// Each refusal must match want.
func neverGrantedBefore(t *testing.T, ctx context.Context, b *redlock.Mutex, end time.Time, want func(error) bool) {
	t.Helper()
	tries := 0
	for ; time.Now().Before(end); tries++ {
		_, err := b.TryLock(ctx)
		if err == nil {
			t.Fatalf("second owner granted %v before the first lease ends", time.Until(end))
		}
		if !want(err) {
			t.Fatalf("TryLock = %v; not the refusal expected", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if tries == 0 {
		t.Fatal("the first lease ended before the second owner tried")
	}
}

// Members are primaries with a replica; the replicas of two of three miss
// A's grant (paused), their primaries die, and they are promoted
// (REPLICAOF NO ONE, as Sentinel does). The promoted nodes hold the
// marker, replicated long ago, but not A's lease: they must not vote
// until A's lease has ended.
func TestGuard_failoverToReplicasThatMissedAGrant(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	ttl := 3 * time.Second
	opts := []redlock.Option{redlock.WithTTL(ttl), redlock.WithRestartGuard(ttl), redlock.WithWatchdog(false)}
	warm := newClient(t, cluster, opts...)
	mustUnlock(t, mustLock(t, ctx, warm.Mutex("warm"))) // the markers, stamped, reach the replicas
	replica0, link0, _ := redlocktest.StartReplica(t, cluster.Admin(t, 0))
	replica1, link1, _ := redlocktest.StartReplica(t, cluster.Admin(t, 1))
	replicas := []*redisproc.Server{replica0, replica1}
	time.Sleep(ttl + 500*time.Millisecond) // the replicas are up longer than the guard
	link0.Cut()
	link1.Cut()
	a := mustLock(t, ctx, newClient(t, cluster, opts...).Mutex("failover"))
	for i, r := range replicas {
		if err := cluster.Servers[i].Kill(); err != nil {
			t.Fatal(err)
		}
		admin := redis.NewClient(&redis.Options{Addr: r.Addr()})
		if err := admin.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
			t.Fatal(err)
		}
		_ = admin.Close()
	}
	clients := []redis.UniversalClient{}
	for _, addr := range []string{replicas[0].Addr(), replicas[1].Addr(), cluster.Servers[2].Addr()} {
		c := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { _ = c.Close() })
		clients = append(clients, c)
	}
	b, err := redlock.New(clients, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	neverGrantedBefore(t, ctx, b.Mutex("failover"), a.Until(), func(err error) bool {
		return errors.Is(err, redlock.ErrQuarantined) && strings.Contains(err.Error(), "became a primary")
	})
}

// aclUser creates, on every node, a user allowed everything but INFO and
// LASTSAVE (and, with +@all -@dangerous, as some services give) and
// returns a client per node logged in as it.
func aclUser(t *testing.T, cluster *redlocktest.Nodes, nodes ...int) []redis.UniversalClient {
	t.Helper()
	var clients []redis.UniversalClient
	for i := range cluster.Servers {
		err := cluster.Admin(t, i).Do(context.Background(), "ACL", "SETUSER", "locker", "on", ">pw", "~*", "&*",
			"+@all", "-@dangerous").Err()
		if err != nil {
			t.Fatal(err)
		}
		c := redis.NewClient(&redis.Options{Addr: cluster.Addrs()[i], Username: "locker", Password: "pw"})
		t.Cleanup(func() { _ = c.Close() })
		clients = append(clients, c)
	}
	return clients
}

// A least-privilege user (+@all -@dangerous: no INFO, no LASTSAVE), and a
// majority restarted from a snapshot older than A's lease: the guard
// cannot see the restart, so the nodes refuse at once, naming the remedy;
// accepting RiskNoInfo brings back the old trust (and its second owner).
func TestGuard_userWithoutInfoIsRefusedAtOnce(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	opts := []redlock.Option{redlock.WithTTL(5 * time.Second), redlock.WithWatchdog(false)}
	blind := append(opts, redlock.WithAcceptedRisks(redlock.RiskNoInfo))
	b := newClientOf(t, aclUser(t, cluster), opts...)
	if _, err := b.Mutex("acl").TryLock(ctx); !errors.Is(err, redlock.ErrQuarantined) || !strings.Contains(err.Error(), "+info") {
		t.Fatalf("TryLock without INFO = %v; want refused, naming the remedy", err)
	}
	for i := range cluster.Servers {
		if err := cluster.Admin(t, i).Save(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	a := mustLock(t, ctx, newClientOf(t, aclUser(t, cluster), blind...).Mutex("acl"))
	// Lock returned on a quorum; a grant still on its way would be sent
	// again (go-redis retries) to a node restarted meanwhile.
	for i := range cluster.Servers {
		for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if owner, _ := cluster.Admin(t, i).HGet(ctx, "redlock:{acl}", "owner").Result(); owner == a.Owner() {
				break
			} else if time.Now().After(deadline) {
				t.Fatalf("node %d: A's grant did not land: owner %q", i, owner)
			}
		}
	}
	for _, i := range []int{0, 1} {
		if err := cluster.Servers[i].Restart(true); err != nil { // loads the snapshot
			t.Fatal(err)
		}
	}
	b = newClientOf(t, aclUser(t, cluster), opts...)
	start := time.Now()
	_, err := b.Mutex("acl").Lock(ctx)
	if !errors.Is(err, redlock.ErrNoQuorum) || !strings.Contains(err.Error(), "+info") || time.Since(start) > time.Second {
		t.Fatalf("Lock without INFO after %v = %v; want refused at once, naming the remedy", time.Since(start), err)
	}
	blindB := newClientOf(t, aclUser(t, cluster), blind...).Mutex("acl")
	if lease, err := blindB.TryLock(ctx); err != nil || !lease.Until().After(time.Now()) || !a.Until().After(time.Now()) {
		t.Fatalf("with RiskNoInfo accepted: TryLock = %v; want the risk taken (a second owner) while A holds", err)
	}
}

func newClientOf(t *testing.T, clients []redis.UniversalClient, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	c, err := redlock.New(clients, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Nodes with maxmemory and a volatile-* policy (several managed services'
// default) may evict a lock key while the marker stays: they refuse at
// once, naming the policy; a policy switched on at run time is seen
// within a second.
func TestGuard_evictingPolicyIsRefused(t *testing.T) {
	cluster := redlocktest.Start(t, 3, "--maxmemory", "64mb", "--maxmemory-policy", "volatile-lru")
	ctx := testContext(t)
	start := time.Now()
	_, err := newClient(t, cluster).Mutex("evict").Lock(ctx)
	if !errors.Is(err, redlock.ErrNoQuorum) || !strings.Contains(err.Error(), "volatile-lru") || time.Since(start) > time.Second {
		t.Fatalf("Lock on evicting nodes after %v = %v; want refused at once, naming the policy", time.Since(start), err)
	}
	accepted := newClient(t, cluster, redlock.WithAcceptedRisks(redlock.RiskEviction))
	mustUnlock(t, mustLock(t, ctx, accepted.Mutex("evict")))

	for i := range cluster.Servers {
		if err := cluster.Admin(t, i).ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
			t.Fatal(err)
		}
	}
	c := newClient(t, cluster)
	mustUnlock(t, mustLock(t, ctx, c.Mutex("evict")))
	for _, i := range []int{0, 1} {
		if err := cluster.Admin(t, i).ConfigSet(ctx, "maxmemory-policy", "allkeys-lru").Err(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1100 * time.Millisecond)
	if _, err := c.Mutex("evict").TryLock(ctx); !errors.Is(err, redlock.ErrQuarantined) || !strings.Contains(err.Error(), "allkeys-lru") {
		t.Fatalf("TryLock a second after the policy changed = %v; want refused, naming it", err)
	}
}

// Mixed TTLs on one name: A holds with a long TTL; a majority restarts
// from a snapshot; a Client with a short TTL, with the default guard or
// one as short as its TTL, must not be granted until A's lease ends. The
// nodes recorded A's longer guard; where the snapshot predates that
// record (A's first Lock came after it), the node that kept it lends it
// to the Client through its answers.
func TestGuard_mixedTTLsWaitForTheLongest(t *testing.T) {
	for _, tc := range []struct {
		explicit, snapshotFirst bool
	}{{false, false}, {true, false}, {false, true}} {
		cluster := redlocktest.Start(t, 3)
		ctx := testContext(t)
		save := func() {
			for i := range cluster.Servers {
				if err := cluster.Admin(t, i).Save(ctx).Err(); err != nil {
					t.Fatal(err)
				}
			}
		}
		if tc.snapshotFirst {
			save()
		}
		long := newClient(t, cluster, redlock.WithTTL(6*time.Second), redlock.WithWatchdog(false))
		mustUnlock(t, mustLock(t, ctx, long.Mutex("mixed"))) // the nodes record its guard
		if !tc.snapshotFirst {
			save()
		}
		a := mustLock(t, ctx, long.Mutex("mixed"))
		for _, i := range []int{0, 1} {
			if err := cluster.Servers[i].Restart(true); err != nil {
				t.Fatal(err)
			}
		}
		opts := []redlock.Option{redlock.WithTTL(time.Second)}
		if tc.explicit {
			opts = append(opts, redlock.WithRestartGuard(time.Second))
		}
		b := newClient(t, cluster, opts...)
		// As Dial does: the warm-up reads each node's record first.
		waitFor(t, 5*time.Second, "the warm-up", func() bool { return !slices.Contains(redlock.NodeRTTs(b), 0) })
		neverGrantedBefore(t, ctx, b.Mutex("mixed"), a.Until(), func(err error) bool {
			return errors.Is(err, redlock.ErrQuarantined) && strings.Contains(err.Error(), "restarted")
		})
	}
}

// A guard shorter than the TTL would let a node that forgot a lease vote
// before it ends: refused.
func TestGuard_shorterThanTheTTLIsAConfigError(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	_, err := redlock.New(cluster.Clients(t), redlock.WithTTL(10*time.Second), redlock.WithRestartGuard(2*time.Second))
	if !errors.Is(err, redlock.ErrConfig) || !strings.Contains(err.Error(), "shorter than the TTL") {
		t.Fatalf("New with a guard shorter than the TTL = %v; want ErrConfig saying why", err)
	}
	c := newClient(t, cluster, redlock.WithRestartGuard(2*time.Second), redlock.WithTTL(time.Second))
	if _, err := c.Mutex("short", redlock.WithTTL(10*time.Second)).TryLock(testContext(t)); !errors.Is(err, redlock.ErrConfig) {
		t.Fatalf("TryLock of a Mutex whose TTL outlasts the guard = %v; want ErrConfig", err)
	}
}

// A majority restarted empty under A's lease: the node that still answers
// shows the set is live, so the quarantine says to wait, not to run
// `redlock init` (which would let the restarted nodes grant A's lock).
func TestGuard_liveSetQuarantineDoesNotSuggestInit(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	opts := []redlock.Option{redlock.WithTTL(5 * time.Second), redlock.WithWatchdog(false)}
	mustLock(t, ctx, newClient(t, cluster, opts...).Mutex("live"))
	for _, i := range []int{0, 1} {
		if err := cluster.Servers[i].Restart(false); err != nil {
			t.Fatal(err)
		}
	}
	_, err := newClient(t, cluster, opts...).Mutex("live").TryLock(ctx)
	if !errors.Is(err, redlock.ErrQuarantined) || !strings.Contains(err.Error(), "while the other nodes serve locks") ||
		strings.Contains(err.Error(), "votes at once after `redlock init`") {
		t.Fatalf("TryLock on a live set with a majority restarted empty = %v; want told to wait, not to init", err)
	}
}

//go:build topology

package topology_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/quorumlock/redlock/redlocktest/redisproc"
	"github.com/redis/go-redis/v9"
)

// Members run as Sentinel runs them: a master, a replica and a
// redis-sentinel each, the clients go-redis's failover clients.

// sentinelTTL is every lease's TTL here, and so the default guard: a
// promoted replica votes again this long after the promotion is first seen.
const sentinelTTL = 6 * time.Second

// sentinelClient is a Client over failover clients of its own, one per member.
func sentinelClient(t *testing.T, members []*redlocktest.SentinelMember, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	nodes := make([]redis.UniversalClient, len(members))
	for i, m := range members {
		nodes[i] = m.Client(t)
	}
	c, err := redlock.New(nodes, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// failoverRefusals returns, per node, the guard's failover quarantine in
// err, and every other node error (a refusal because A holds is none).
func failoverRefusals(err error) (found map[int]*node.Quarantine, others map[int]error) {
	found, others = map[int]*node.Quarantine{}, map[int]error{}
	var walk func(error)
	walk = func(err error) {
		if ne, ok := err.(*redlock.NodeError); ok {
			var q *node.Quarantine
			if errors.As(ne.Err, &q) && q.Why == node.WhyFailover {
				found[ne.Node] = q
			} else {
				others[ne.Node] = ne
			}
			return
		}
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			for _, inner := range joined.Unwrap() {
				walk(inner)
			}
		} else if inner := errors.Unwrap(err); inner != nil {
			walk(inner)
		}
	}
	walk(err)
	return found, others
}

// Members are a master, a replica and a sentinel each. The replicas of two
// of three miss A's grant (their links cut), their masters die, and the
// sentinels promote them: B, with default options but the TTL, must get
// nothing while A's lease lasts, refused by the guard for a failover; the
// promoted members then vote again, G after the promotion was first seen.
func TestSentinel_failoverToReplicasThatMissedAGrant(t *testing.T) {
	members := redlocktest.StartSentinel(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	opts := []redlock.Option{redlock.WithTTL(sentinelTTL)}
	a := sentinelClient(t, members, opts...)
	warm, err := a.Mutex("warm").Lock(ctx) // the markers, stamped, reach the replicas
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for _, m := range members[:2] {
		m.WaitReplicated(t)
		m.Link.Cut()
	}
	lease, err := a.Mutex("failover").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	killedAt := time.Now()
	for _, m := range members[:2] {
		missedTheGrant(t, ctx, m)
		if err := m.Master.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	b := sentinelClient(t, members, opts...)
	seen := refusedWhileHeld(t, ctx, b.Mutex("failover"), lease)
	for i := range 2 {
		q := seen[i]
		t.Logf("node %d: the promotion first seen %v after its master died", i, q.Since.Sub(killedAt))
		if q.Until.Sub(q.Since) != sentinelTTL || q.Since.Before(killedAt.Add(-time.Millisecond)) || q.Until.Before(lease.Until()) {
			t.Errorf("node %d quarantined from %v to %v; want from the promotion's first sight (after %v) for the guard, %v, "+
				"past A's lease (%v)", i, q.Since, q.Until, killedAt, sentinelTTL, lease.Until())
		}
	}
	rejoin(t, ctx, b, lease, members, seen)
}

// missedTheGrant checks that m's master holds A's lock and its replica,
// cut off, does not.
func missedTheGrant(t *testing.T, ctx context.Context, m *redlocktest.SentinelMember) {
	t.Helper()
	for addr, want := range map[string]int64{m.Master.Addr(): 1, m.Replica.Addr(): 0} {
		admin := redis.NewClient(&redis.Options{Addr: addr})
		n, err := admin.Exists(ctx, "redlock:{failover}").Result()
		_ = admin.Close()
		if err != nil || n != want {
			t.Fatalf("%s: EXISTS the lock at %s = %d, %v; want %d", m.Name, addr, n, err, want)
		}
	}
}

// refusedWhileHeld tries m (TryLock, then Lock in the lease's last second)
// until the lease ends. Nothing may be granted; once the guard refused for
// a failover, every refusal of that node must be its. It returns the
// quarantines of nodes 0 and 1, which must be found before the lease ends.
func refusedWhileHeld(t *testing.T, ctx context.Context, m *redlock.Mutex, lease *redlock.Lease) map[int]*node.Quarantine {
	t.Helper()
	seen := map[int]*node.Quarantine{}
	waited := false
	for tries := 0; time.Now().Before(lease.Until()); tries++ {
		start := time.Now()
		var err error
		if !waited && time.Until(lease.Until()) < time.Second {
			waited = true
			lctx, cancel := context.WithDeadline(ctx, lease.Until())
			_, err = m.Lock(lctx)
			cancel()
			if !errors.Is(err, redlock.ErrNotAcquired) {
				t.Fatalf("Lock until A's lease ends = %v; want ErrNotAcquired", err)
			}
		} else {
			_, err = m.TryLock(ctx)
		}
		if err == nil {
			t.Fatalf("B granted (asked %v before A's lease ends; try %d)", lease.Until().Sub(start), tries)
		}
		found, others := failoverRefusals(err)
		if len(found) > 0 && (!errors.Is(err, redlock.ErrQuarantined) || !strings.Contains(err.Error(), "became a primary")) {
			t.Fatalf("try %d: %v; want it to match ErrQuarantined, naming the promotion", tries, err)
		}
		for i, other := range others {
			if seen[i] != nil {
				t.Fatalf("try %d, %v before A's lease ends: node %d: %v; want the guard's refusal for a failover",
					tries, lease.Until().Sub(start), i, other)
			}
		}
		for i, q := range found {
			if seen[i] != nil && (!seen[i].Since.Equal(q.Since) || !seen[i].Until.Equal(q.Until)) {
				t.Fatalf("node %d: quarantine moved from %v to %v", i, seen[i], q)
			}
			seen[i] = q
		}
		time.Sleep(100 * time.Millisecond)
	}
	if seen[0] == nil || seen[1] == nil || !waited {
		t.Fatalf("before A's lease ended, the guard refused for a failover on nodes %v (want 0 and 1; Lock tried: %v)",
			seen, waited)
	}
	return seen
}

// rejoin: A's holder finds its lease lost and unlocks, as its code would;
// the third member goes down, so B's Lock needs both promoted members: it
// must be granted once both quarantines end, not before, and soon after.
func rejoin(t *testing.T, ctx context.Context, b *redlock.Client, lease *redlock.Lease,
	members []*redlocktest.SentinelMember, seen map[int]*node.Quarantine) {
	t.Helper()
	select {
	case <-lease.Done():
	case <-time.After(time.Until(lease.Until()) + time.Second):
		t.Fatal("A's lease is not over a second past its Until")
	}
	if !errors.Is(lease.Err(), redlock.ErrLost) {
		t.Fatalf("A's lease ended with %v; want ErrLost (no quorum renewed it)", lease.Err())
	}
	_ = lease.Unlock(ctx) // drops the holds its last renewals left
	for _, s := range []*redisproc.Server{members[2].Sentinel, members[2].Master} {
		if err := s.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	votes := seen[0].Until
	if seen[1].Until.After(votes) {
		votes = seen[1].Until
	}
	got, err := b.Mutex("failover").Lock(ctx)
	grantedAt := time.Now()
	if err != nil || grantedAt.Before(votes) || grantedAt.After(votes.Add(3*time.Second)) {
		t.Fatalf("B's Lock = %v at %v; want granted once both promoted members vote again, at %v",
			err, grantedAt, votes)
	}
	t.Logf("B granted %v after both promoted members vote again", grantedAt.Sub(votes))
	info, err := b.Inspect(ctx, "failover") // the third member is down: its error is in Nodes
	if len(info.Nodes) != len(members) {
		t.Fatalf("Inspect = %+v, %v", info, err)
	}
	for _, i := range []int{0, 1} {
		if owner := info.Nodes[i].Owner; owner != node.Fingerprint(got.Owner()) {
			t.Errorf("promoted node %d holds %q; want B's lease (%s)", i, owner, node.Fingerprint(got.Owner()))
		}
	}
	if err := got.Unlock(ctx); err != nil {
		t.Fatalf("B's Unlock on the promoted members: %v", err)
	}
}

// Dial takes each member as a failover URL (redis://sentinel?master_name=…,
// one with a second, dead sentinel) and locks on the masters; a malformed
// failover URL is ErrConfig, naming the node, without its password.
func TestSentinel_dialFailoverURLs(t *testing.T) {
	members := redlocktest.StartSentinel(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	urls := []string{members[0].URL() + "&addr=127.0.0.1:1", members[1].URL(), members[2].URL()}
	c, err := redlock.Dial(urls)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	lease, err := c.Mutex("dial").Lock(ctx)
	if err != nil {
		t.Fatalf("Lock over failover URLs: %v", err)
	}
	// Lock returns once a quorum granted; the third member's answer may
	// still be on its way (its first call also reads its clock).
	for _, m := range members {
		admin := redis.NewClient(&redis.Options{Addr: m.Master.Addr()})
		held, err := "", error(nil)
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if held, err = admin.HGet(ctx, "redlock:{dial}", "owner").Result(); err == nil && held == lease.Owner() {
				break
			}
		}
		_ = admin.Close()
		if err != nil || held != lease.Owner() {
			t.Errorf("%s's master holds %q, %v; want the lease's owner", m.Name, held, err)
		}
	}
	if err := lease.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(members[1].URL(), "redis://", "redis://:s3cret@", 1) + "&addr=no-port"
	if _, err := redlock.Dial([]string{urls[0], bad, urls[2]}); !errors.Is(err, redlock.ErrConfig) ||
		!strings.Contains(err.Error(), "node 1") || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("Dial with a malformed failover URL = %v; want ErrConfig naming node 1, not the password", err)
	}
}

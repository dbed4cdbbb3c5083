package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/quorumlock/redlock/redlocktest/faultproxy"
	"github.com/redis/go-redis/v9"
)

// waitQueued waits until name's queue is n long on every node: a waiter
// queued on one node only may not yet be queued on the others.
func waitQueued(t *testing.T, cluster *redlocktest.Nodes, name string, n int) {
	t.Helper()
	waitFor(t, 5*time.Second, fmt.Sprintf("%d queued waiters on every node", n), func() bool {
		for i := range cluster.Servers {
			if len(queueOf(t, cluster, i, name)) != n {
				return false
			}
		}
		return true
	})
}

// adoption has a waiter of another Client queue behind a holder, releases
// the holder's lease, and returns the waiter's lease, how long it had left
// when Lock returned, and on how many nodes the lock was still only handed
// to the waiter then (a claim round would have made it a hold there).
func adoption(t *testing.T, cluster *redlocktest.Nodes, name string, opts ...redlock.Option) (*redlock.Lease, time.Duration, int) {
	t.Helper()
	return adoptionWith(t, testContext(t), cluster, name, opts...)
}

// handedTo counts the nodes on which name's lock is handed to owner, not
// claimed.
func handedTo(t *testing.T, cluster *redlocktest.Nodes, name, owner string) int {
	t.Helper()
	n := 0
	for i := range cluster.Servers {
		fields, _ := cluster.Admin(t, i).HMGet(context.Background(), "redlock:{"+name+"}", "owner", "handed").Result()
		if len(fields) == 2 && fields[0] == owner && fields[1] != nil {
			n++
		}
	}
	return n
}

// ownersOf lists the owner of m's lock on each node ("" where free).
func ownersOf(t *testing.T, cluster *redlocktest.Nodes, m *redlock.Mutex) []string {
	t.Helper()
	var out []string
	for i := range cluster.Servers {
		owner, _ := cluster.Admin(t, i).HGet(context.Background(), "redlock:{"+m.Name()+"}", "owner").Result()
		out = append(out, owner)
	}
	return out
}

// holdEverywhere locks m once every node has it free, and returns once
// the lease is on every node: an Unlock (a warm-up's) and a Lock return at
// a quorum, and a test of the handoff needs the holder on all nodes.
func holdEverywhere(t *testing.T, cluster *redlocktest.Nodes, m *redlock.Mutex) *redlock.Lease {
	t.Helper()
	waitFor(t, 5*time.Second, "the lock free on every node", func() bool {
		return !slices.ContainsFunc(ownersOf(t, cluster, m), func(o string) bool { return o != "" })
	})
	held := mustLock(t, testContext(t), m)
	waitFor(t, 5*time.Second, "the holder on every node", func() bool {
		return !slices.ContainsFunc(ownersOf(t, cluster, m), func(o string) bool { return o != held.Owner() })
	})
	return held
}

// adoptionWith is adoption with the waiter's Lock called with ctx.
func adoptionWith(t *testing.T, ctx context.Context, cluster *redlocktest.Nodes, name string, opts ...redlock.Option) (*redlock.Lease, time.Duration, int) {
	t.Helper()
	holder := newClient(t, cluster, opts...)
	waiter := newClient(t, cluster, opts...)
	mustUnlock(t, mustLock(t, testContext(t), waiter.Mutex(name))) // scripts loaded, clock probed
	held := holdEverywhere(t, cluster, holder.Mutex(name))
	type result struct {
		lease  *redlock.Lease
		left   time.Duration
		handed int
		err    error
	}
	got := make(chan result, 1)
	go func() {
		lease, err := waiter.Mutex(name).Lock(ctx)
		r := result{lease: lease, err: err}
		if err == nil {
			r.left = time.Until(lease.Until())
			r.handed = handedTo(t, cluster, name, lease.Owner())
		}
		got <- r
	}()
	waitQueued(t, cluster, name, 1)
	time.Sleep(50 * time.Millisecond) // the subscription confirmed
	mustUnlock(t, held)
	r := <-got
	if r.err != nil {
		t.Fatalf("waiter's Lock: %v", r.err)
	}
	return r.lease, r.left, r.handed
}

// A waiter that hears from a quorum of nodes that the lock was handed to
// it takes the lease from the notices: no claim round. Its validity counts
// from its last attempt's start, for the queue's span (min(TTL, queue
// timeout)), not a TTL from a claim.
func TestHandoff_waiterTakesTheLeaseFromTheNotices(t *testing.T) {
	cluster := redlocktest.Start(t, 5)
	for _, fair := range []bool{false, true} {
		t.Run(fmt.Sprintf("fair=%v", fair), func(t *testing.T) {
			opts := []redlock.Option{redlock.WithQueueTimeout(4 * time.Second)}
			if fair {
				opts = append(opts, redlock.WithFair())
			}
			lease, left, handed := adoption(t, cluster, fmt.Sprintf("adopt-%v", fair), opts...)
			t.Logf("lease left %v at the grant; handed, unclaimed, on %d of 5 nodes", left, handed)
			if left <= 0 || left > 4*time.Second {
				t.Errorf("lease valid for %v more; want at most the span, 4s (a claimed lease has the 30s TTL)", left)
			}
			if handed < 3 {
				t.Errorf("at the grant the lock was only handed to the waiter on %d nodes; want a quorum, 3 (a claim round makes it a hold)", handed)
			}
			mustUnlock(t, lease)
		})
	}
}

// The adopted lease holds the lock: another Client is refused; the
// watchdog renews it before its span ends (it would otherwise lapse at
// the span); its release frees the lock at once.
func TestHandoff_adoptedLeaseHoldsRenewsAndReleases(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	const span = 900 * time.Millisecond
	lease, left, _ := adoption(t, cluster, "adopted", redlock.WithQueueTimeout(span))
	if left > span {
		t.Fatalf("lease valid for %v more; want at most the span %v (taken from the notices)", left, span)
	}
	other := newClient(t, cluster)
	ctx := testContext(t)
	if _, err := other.Mutex("adopted").TryLock(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("another Client's TryLock on an adopted lock: %v, want ErrNotAcquired", err)
	}
	time.Sleep(2 * span)
	if err := lease.Err(); err != nil {
		t.Fatalf("adopted lease after twice its span: %v; want renewed", err)
	}
	if until := time.Until(lease.Until()); until < 10*time.Second {
		t.Fatalf("adopted lease has %v left after renewals; want the TTL's", until)
	}
	if _, err := other.Mutex("adopted").TryLock(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("another Client's TryLock after the renewal: %v, want ErrNotAcquired", err)
	}
	mustUnlock(t, lease)
	mustUnlock(t, mustLockNow(t, ctx, other.Mutex("adopted")))
}

// Released before any renewal, an adopted lease frees the lock on every
// node (its release names the hold the nodes handed it for).
func TestHandoff_adoptedLeaseReleasedAtOnce(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	lease, _, _ := adoption(t, cluster, "quick")
	if err := lease.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock of an adopted lease: %v", err)
	}
	// A node whose notice the waiter had not heard when it adopted is left
	// in the background (handoff.settle): the leave passes on a lock it
	// handed meanwhile. Freed by that, not expired: a handed lock lasts the
	// queue's span, 5 s.
	for i := range cluster.Servers {
		admin := cluster.Admin(t, i)
		waitFor(t, 2*time.Second, fmt.Sprintf("node %d to free the lock after the adopted lease's release", i), func() bool {
			n, err := admin.Exists(context.Background(), "redlock:{quick}").Result()
			return err == nil && n == 0
		})
	}
	mustUnlock(t, mustLockNow(t, testContext(t), newClient(t, cluster).Mutex("quick")))
}

// Without the watchdog, a lease taken from the notices would be shorter
// than the TTL the caller asked for: the waiter claims the lock instead,
// unless the span is the TTL (TTL <= queue timeout).
func TestHandoff_withoutWatchdogOnlyWhenTheSpanIsTheTTL(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	claimed, left, _ := adoption(t, cluster, "claimed", redlock.WithWatchdog(false), redlock.WithTTL(20*time.Second))
	mustUnlock(t, claimed)
	if left < 15*time.Second {
		t.Fatalf("without the watchdog a waiter's lease has %v left; want the 20s TTL (claimed)", left)
	}
	lease, left, handed := adoption(t, cluster, "short", redlock.WithWatchdog(false), redlock.WithTTL(3*time.Second))
	if left > 3*time.Second || handed < 2 {
		t.Fatalf("TTL 3s (= the span) without the watchdog: %v left, handed on %d nodes; want taken from the notices", left, handed)
	}
	mustUnlock(t, lease)
}

// mustLockNow takes m with TryLock: it must be free.
func mustLockNow(t *testing.T, ctx context.Context, m *redlock.Mutex) *redlock.Lease {
	t.Helper()
	lease, err := m.TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock(%s): %v; want the lock free", m.Name(), err)
	}
	return lease
}

// Two Lock calls that share an owner (WithOwner) both write its place on
// the nodes, so a notice naming one call's attempt says nothing of the
// other's: a call with an owner from its ctx always claims the lock.
func TestHandoff_sharedOwnerClaims(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := redlock.WithOwner(testContext(t), "shared-owner")
	lease, left, _ := adoptionWith(t, ctx, cluster, "shared")
	if left < 20*time.Second {
		t.Fatalf("a waiter with an owner from its ctx: %v left; want a claimed lease (the 30s TTL)", left)
	}
	// The claim round returned at a quorum; its last claim lands soon
	// after. A lease taken from the notices would keep handed keys until
	// its first renewal (a third of the 30s TTL).
	waitFor(t, 5*time.Second, "the lock claimed on every node", func() bool { return handedTo(t, cluster, "shared", lease.Owner()) == 0 })
	mustUnlock(t, lease)
}

// Re-entering a lease taken from the notices (Lock with its Context),
// before its first renewal has turned the handed keys into holds, keeps
// the outer hold on the nodes: the inner Unlock does not free the lock,
// and neither does an inner Lock that gives up (its leave). Both freed it
// while the handed key stood for the outer lease's hold alone.
func TestHandoff_reentryIntoAnAdoptedLease(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	for _, how := range []string{"inner unlock", "inner gives up"} {
		t.Run(how, func(t *testing.T) {
			name := "reentry-" + strings.ReplaceAll(how, " ", "-")
			lease, left, handed := adoption(t, cluster, name, redlock.WithQueueTimeout(3*time.Second))
			if left > 3*time.Second || handed < 2 {
				t.Fatalf("not taken from the notices: %v left, handed on %d nodes", left, handed)
			}
			m := newClient(t, cluster).Mutex(name)
			if how == "inner unlock" {
				mustUnlock(t, mustLock(t, lease.Context(), m))
			} else {
				ctx, cancel := context.WithCancel(lease.Context())
				cancel()
				if _, err := m.Lock(ctx); err == nil {
					t.Fatal("Lock with a cancelled ctx succeeded")
				}
			}
			if other, err := newClient(t, cluster).Mutex(name).TryLock(testContext(t)); err == nil {
				_ = other.Unlock(context.Background())
				t.Fatalf("another owner took the lock while the outer lease is valid (%v left, Err %v)", time.Until(lease.Until()), lease.Err())
			}
			mustUnlock(t, lease)
		})
	}
}

// ForceUnlock removes a lease taken from the notices like any other: it
// is lost at its next renewal. A key still handed (not claimed by a
// renewal yet) is free only once the handing would have lapsed: another
// waiter may still take its lease from notices on their way, valid until
// then. Nobody holds the lock meanwhile.
func TestHandoff_forceUnlockRevokesAnAdoptedLease(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	const span = 900 * time.Millisecond
	lease, _, _ := adoption(t, cluster, "forced-adopted", redlock.WithQueueTimeout(span))
	op := newClient(t, cluster)
	handed := handedTo(t, cluster, "forced-adopted", lease.Owner())
	if err := op.ForceUnlock(testContext(t), "forced-adopted"); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	next := mustLock(t, testContext(t), op.Mutex("forced-adopted"))
	if waited := time.Since(began); waited > span+200*time.Millisecond {
		t.Fatalf("Lock after ForceUnlock waited %v, want at most the span %v (handed on %d nodes)", waited, span, handed)
	}
	select {
	case <-lease.Done():
	default:
		if now := time.Now(); now.Before(lease.Until()) {
			t.Fatalf("granted while the adopted lease is valid for %v more (handed on %d nodes)", lease.Until().Sub(now), handed)
		}
	}
	mustUnlock(t, next)
	select {
	case <-lease.Done():
	case <-time.After(2 * span):
		t.Fatalf("the adopted lease outlived ForceUnlock: Err %v, %v left", lease.Err(), time.Until(lease.Until()))
	}
	if !errors.Is(lease.Err(), redlock.ErrLost) {
		t.Fatalf("lease after ForceUnlock: %v, want ErrLost", lease.Err())
	}
}

// A lease taken from a quorum's notices does not leave the queue of a node
// whose notice of the same release is still on its way: that node handed
// the lock to it as well, and a leave would pass the lock on there to the
// next waiter at once, mid-lease (and wake that waiter with notices from a
// minority). The lease's release passes it on instead.
func TestHandoff_adoptedLeaseKeepsTheNodesWhoseNoticesComeLate(t *testing.T) {
	// The grace for the notices on their way, far above the 1 ms delay
	// below, so that a scheduling stall on a busy machine cannot make the
	// notice late. Set before any Client exists (and restored after every
	// one closed).
	redlock.SetHandoffGrace(t, 500*time.Millisecond)
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	const name = "late-notice"
	proxy, err := faultproxy.New(cluster.Servers[2].Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	clients := cluster.Clients(t)
	slow := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = slow.Close() })
	clients[2] = slow
	waiter, err := redlock.New(clients)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = waiter.Close() })
	holder, next := newClient(t, cluster), newClient(t, cluster)
	for _, c := range []*redlock.Client{waiter, next} {
		mustUnlock(t, mustLock(t, ctx, c.Mutex(name))) // scripts loaded, clock probed
	}
	held := holdEverywhere(t, cluster, holder.Mutex(name))
	type result struct {
		lease *redlock.Lease
		err   error
	}
	adopted, after := make(chan result, 1), make(chan result, 1)
	go func() {
		lease, err := waiter.Mutex(name).Lock(ctx)
		adopted <- result{lease, err}
	}()
	waitQueued(t, cluster, name, 1)
	go func() {
		lease, err := next.Mutex(name).Lock(ctx)
		after <- result{lease, err}
	}()
	waitQueued(t, cluster, name, 2)
	time.Sleep(50 * time.Millisecond) // the subscriptions confirmed
	// Node 2's notice reaches the waiter 1 ms after the others': the
	// waiter takes the lease from nodes 0 and 1.
	proxy.SetLatency(time.Millisecond)
	mustUnlock(t, held)
	r := <-adopted
	if r.err != nil {
		t.Fatalf("waiter's Lock: %v", r.err)
	}
	time.Sleep(50 * time.Millisecond) // any leave has arrived
	for i, owner := range ownersOf(t, cluster, holder.Mutex(name)) {
		if owner != r.lease.Owner() {
			t.Errorf("node %d: the lock's owner is %q during the lease, want the lease's", i, owner)
		}
	}
	select {
	case n := <-after:
		t.Fatalf("the next waiter's Lock returned during the lease: %v", n.err)
	default:
	}
	proxy.SetLatency(0)
	mustUnlock(t, r.lease)
	n := <-after
	if n.err != nil {
		t.Fatalf("the next waiter's Lock after the release: %v", n.err)
	}
	mustUnlock(t, n.lease)
}

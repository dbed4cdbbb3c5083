package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/quorumlock/redlock/redlocktest/checker"
)

// forcedGrant is one lease's grant, as its holder saw it.
type forcedGrant struct {
	grant checker.Grant
	left  time.Duration // validity left when Lock returned
	err   error         // Lock's error; grant is then zero
}

// forcedHold takes m with ctx, keeps the lease until it ends or for hold,
// whichever comes first, and unlocks it. The grant comes on the channel.
func forcedHold(ctx context.Context, m *redlock.Mutex, hold time.Duration) <-chan forcedGrant {
	out := make(chan forcedGrant, 1)
	go func() {
		lease, err := m.Lock(ctx)
		acquired := time.Now()
		if err != nil {
			out <- forcedGrant{err: err}
			return
		}
		left := time.Until(lease.Until())
		timer := time.NewTimer(hold)
		select {
		case <-lease.Done():
		case <-timer.C:
		}
		timer.Stop()
		released := time.Now()
		until := lease.Until()
		_ = lease.Unlock(context.Background())
		out <- forcedGrant{left: left, grant: checker.Grant{Name: m.Name(), Owner: lease.Owner(), Token: lease.Token(),
			Acquired: acquired, Released: released, Until: until}}
	}()
	return out
}

// ForceUnlock ends a handing in flight: a lock the nodes handed to a
// waiter whose notices have not reached it yet. H holds the lock, W waits
// (its Client behind proxies of its own, whose replies, the notices
// included, come 400 ms late), H unlocks (the nodes hand the lock to W and
// publish the notices), an operator forces the lock free, and V locks.
// When W's notices arrive, W must not take a lease from them while V's is
// valid: no two leases of one lock may be valid at once. V may have to
// wait for the handing's span (min(TTL, queue timeout)); W's lease, if it
// takes one, is then lost at its first renewal.
func TestForceUnlock_endsAHandingInFlight(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	const (
		name    = "forced-handing"
		span    = 3 * time.Second        // the queue timeout, shorter than the TTL
		latency = 400 * time.Millisecond // on W's replies, the notices included
		hold    = time.Second            // how long V and W keep their leases
	)
	opts := []redlock.Option{redlock.WithNodeTimeout(200 * time.Millisecond), redlock.WithQueueTimeout(span)}
	holder, op, other := newClient(t, cluster, opts...), newClient(t, cluster, opts...), newClient(t, cluster, opts...)
	waiter, links := ownLinksClient(t, cluster, opts...)
	for _, c := range []*redlock.Client{waiter, op, other} {
		mustUnlock(t, mustLock(t, ctx, c.Mutex(name))) // scripts loaded, clocks probed
	}
	held := holdEverywhere(t, cluster, holder.Mutex(name))

	wctx, wcancel := context.WithTimeout(ctx, 6*time.Second)
	defer wcancel()
	w := forcedHold(wctx, waiter.Mutex(name), hold)
	waitQueued(t, cluster, name, 1)
	time.Sleep(50 * time.Millisecond) // W's subscriptions confirmed
	for _, link := range links {
		link.SetLatency(latency)
	}
	start := time.Now()
	mustUnlock(t, held) // the nodes hand the lock to W; its notices are on their way
	if err := op.ForceUnlock(ctx, name); err != nil {
		t.Fatalf("ForceUnlock: %v", err)
	}
	forced := time.Since(start)
	// Inspect says that no one holds it, and that the ended handing keeps
	// it from everyone for now.
	if info, err := op.Inspect(ctx, name); err != nil || info.Held || !info.Forced {
		t.Errorf("Inspect right after ForceUnlock ended the handing: Held %v, Forced %v, %v; want not held, forced", info.Held, info.Forced, err)
	}
	vctx, vcancel := context.WithTimeout(ctx, span+3*time.Second)
	defer vcancel()
	v := forcedHold(vctx, other.Mutex(name), hold)
	// The notices were read by W's proxies at H's release: they arrive
	// late all the same. What W sends from now on is answered on time.
	time.Sleep(latency / 4)
	for _, link := range links {
		link.SetLatency(0)
	}

	vr, wr := <-v, <-w
	if vr.err != nil {
		t.Fatalf("V's Lock after ForceUnlock: %v", vr.err)
	}
	t.Logf("H released and the lock was forced free within %v; V's Lock returned at +%v (%v left), holding until +%v",
		forced, vr.grant.Acquired.Sub(start), vr.left, vr.grant.End().Sub(start))
	if wr.err != nil {
		t.Logf("W's Lock: %v (no lease: nothing to overlap)", wr.err)
		return
	}
	t.Logf("W's Lock returned at +%v (%v after V's), valid for %v more; W held it until +%v",
		wr.grant.Acquired.Sub(start), wr.grant.Acquired.Sub(vr.grant.Acquired), wr.left, wr.grant.End().Sub(start))
	check := checker.New()
	check.Record(vr.grant)
	check.Record(wr.grant)
	if err := check.Err(); err != nil {
		t.Fatalf("two leases valid at once after ForceUnlock ended a handing in flight: %v", err)
	}
}

package redlock_test

import (
	"context"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/quorumlock/redlock/redlocktest/checker"
	"github.com/quorumlock/redlock/redlocktest/faultproxy"
	"github.com/redis/go-redis/v9"
)

// newClient returns a Client over the cluster's nodes, closed at cleanup.
func newClient(t *testing.T, cluster *redlocktest.Nodes, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	c, err := redlock.New(cluster.Clients(t), opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// ownLinksClient is a Client over redlocktest's OwnLinks: every link of
// its own (commands and Pub/Sub alike) goes through a fault proxy of its
// own, so that this Client alone can be cut off from nodes or slowed.
func ownLinksClient(t *testing.T, cluster *redlocktest.Nodes, opts ...redlock.Option) (*redlock.Client, []*faultproxy.Proxy) {
	t.Helper()
	clients, proxies := cluster.OwnLinks(t)
	c, err := redlock.New(clients, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, proxies
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// locker is a Mutex or a MultiMutex.
type locker interface {
	Lock(context.Context) (*redlock.Lease, error)
}

func mustLock(t *testing.T, ctx context.Context, m locker) *redlock.Lease {
	t.Helper()
	lease, err := m.Lock(ctx)
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	return lease
}

func mustUnlock(t *testing.T, lease *redlock.Lease) {
	t.Helper()
	if err := lease.Unlock(context.Background()); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
}

// tryResult is the outcome of a TryLock run in the background.
type tryResult struct {
	lease *redlock.Lease
	err   error
}

// tryLockAsync runs m.TryLock in a goroutine; its result comes on the
// channel, which the test must read before it ends.
func tryLockAsync(ctx context.Context, m *redlock.Mutex) <-chan tryResult {
	done := make(chan tryResult, 1)
	go func() {
		lease, err := m.TryLock(ctx)
		done <- tryResult{lease, err}
	}()
	return done
}

// requireGrants fails t unless check found no violation in at least
// grants grants.
func requireGrants(t *testing.T, check *checker.Checker, grants int) {
	t.Helper()
	if err := check.Err(); err != nil {
		t.Fatal(err)
	}
	if check.Len() < grants {
		t.Fatalf("%d grants, want %d", check.Len(), grants)
	}
}

// record is what a holder reports to the checker when it lets go.
func record(c *checker.Checker, name string, lease *redlock.Lease, acquired time.Time) {
	released := time.Now()
	c.Record(checker.Grant{
		Name:     name,
		Owner:    lease.Owner(),
		Token:    lease.Token(),
		Acquired: acquired,
		Released: released,
		Until:    lease.Until(),
	})
}

// holders counts, per node, the hash fields of a lock key: the owner field
// plus one per hold; 0 when the key is absent.
func holdCount(t *testing.T, admin *redis.Client, key string) int64 {
	t.Helper()
	n, err := admin.HLen(context.Background(), key).Result()
	if err != nil {
		t.Fatalf("HLEN %s: %v", key, err)
	}
	if n == 0 {
		return 0
	}
	return n - 1
}

func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func newBenchClient(b *testing.B, cluster *redlocktest.Nodes, opts ...redlock.Option) (*redlock.Client, error) {
	c, err := redlock.New(cluster.Clients(b), opts...)
	if err != nil {
		return nil, err
	}
	b.Cleanup(func() { _ = c.Close() })
	return c, nil
}

// lockInBackground takes m with ctx in a goroutine and unlocks at once. The
// returned function waits for it and tells when the grant came (false when
// Lock failed, which is reported on t). Cleanup waits for the goroutine.
func lockInBackground(t *testing.T, ctx context.Context, m *redlock.Mutex) func() (time.Time, bool) {
	t.Helper()
	granted := make(chan time.Time, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		lease, err := m.Lock(ctx)
		if err != nil {
			t.Errorf("Lock(%s) in the background: %v", m.Name(), err)
			close(granted)
			return
		}
		granted <- time.Now()
		_ = lease.Unlock(context.Background())
	}()
	t.Cleanup(func() { <-done })
	return func() (time.Time, bool) {
		<-done
		at, ok := <-granted
		return at, ok
	}
}

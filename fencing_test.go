package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/quorumlock/redlock/redlocktest/checker"
)

// Tokens stay strictly increasing in grant order while a node restarts
// empty (its counter starts again from zero) halfway through.
func TestFencing_tokensIncreaseAcrossAnEmptyRestart(t *testing.T) {
	cluster := redlocktest.Start(t, 5)
	check := checker.New()
	fencedGrantsAcrossARestart(t, cluster, 2, 3, 4, 300, check, nil)
	requireGrants(t, check, 300)
}

// fencedGrantsAcrossARestart has goroutines per each of clients Clients
// lock and unlock "fenced" with fencing until grants were made, restarting
// node restart empty at half of them; each grant goes to check and to
// onGrant (when not nil).
func fencedGrantsAcrossARestart(t *testing.T, cluster *redlocktest.Nodes, restart, clients, goroutines int, grants int64,
	check *checker.Checker, onGrant func(*redlock.Lease)) {
	t.Helper()
	ctx := testContext(t)
	var done atomic.Int64
	restarted := make(chan struct{})
	var wg sync.WaitGroup
	for range clients {
		c := newClient(t, cluster, redlock.WithFencing())
		for range goroutines {
			m := c.Mutex("fenced")
			wg.Go(func() {
				for done.Load() < grants {
					lease, err := m.Lock(ctx)
					if err != nil {
						t.Errorf("Lock: %v", err)
						return
					}
					record(check, "fenced", lease, time.Now())
					if onGrant != nil {
						onGrant(lease)
					}
					if done.Add(1) == grants/2 {
						close(restarted)
					}
					_ = lease.Unlock(context.Background())
				}
			})
		}
	}
	wg.Go(func() {
		<-restarted
		if err := cluster.Servers[restart].Restart(false); err != nil {
			t.Errorf("restart: %v", err)
		}
	})
	wg.Wait()
}

func TestFencing_tokenIsZeroWithoutFencing(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	lease := mustLock(t, testContext(t), newClient(t, cluster).Mutex("plain"))
	defer mustUnlock(t, lease)
	if lease.Token() != 0 {
		t.Fatalf("Token() = %d without WithFencing", lease.Token())
	}
}

// storage is a resource that checks fencing tokens: it refuses a write
// carrying a token lower than one it has seen.
type storage struct {
	mu      sync.Mutex
	highest uint64
	value   string
}

var errStaleToken = errors.New("stale fencing token")

func (s *storage) write(token uint64, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.highest {
		return fmt.Errorf("%w: %d < %d", errStaleToken, token, s.highest)
	}
	s.highest, s.value = token, value
	return nil
}

// The protected resource checks the token: a holder that paused past its
// lease (Kleppmann's scenario) has its late write refused.
func ExampleWithFencing() {
	urls, stop := exampleNodes()
	defer stop()
	client, _ := redlock.Dial(urls, redlock.WithFencing(), redlock.WithTTL(200*time.Millisecond), redlock.WithWatchdog(false))
	defer client.Close()
	ctx := context.Background()
	store := &storage{}

	first, _ := client.Mutex("file").Lock(ctx)
	time.Sleep(300 * time.Millisecond) // a long GC pause: the lease expires
	second, _ := client.Mutex("file").Lock(ctx)
	fmt.Println("second writes:", store.write(second.Token(), "from second"))
	fmt.Println("first writes late:", errors.Is(store.write(first.Token(), "from first"), errStaleToken))
	fmt.Println("stored:", store.value)
	_ = second.Unlock(ctx)
	// Output:
	// second writes: <nil>
	// first writes late: true
	// stored: from second
}

// Counters that diverged across the nodes (after restarts) are why the
// token is written back: without it, a later quorum that meets the first
// one only at a node with a low counter would hand out a lower token.
func TestFencing_writeBackCarriesTheOrderToLaterQuorums(t *testing.T) {
	cluster := redlocktest.Start(t, 5)
	ctx := testContext(t)
	for i, value := range []int{10, 5, 5, 0, 0} {
		if err := cluster.Admin(t, i).Set(ctx, "redlock:{ledger}:fence", value, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// A short TTL: the nodes restarted empty wait out the restart guard
	// (the TTL) before the second Lock can count them.
	c := newClient(t, cluster, redlock.WithFencing(), redlock.WithNodeTimeout(200*time.Millisecond), redlock.WithTTL(time.Second))
	for _, i := range []int{3, 4} {
		if err := cluster.Servers[i].Kill(); err != nil {
			t.Fatal(err)
		}
	}
	first := mustLock(t, ctx, c.Mutex("ledger")) // quorum {0, 1, 2}: token 11
	mustUnlock(t, first)
	for _, i := range []int{3, 4} {
		if err := cluster.Servers[i].Restart(false); err != nil {
			t.Fatal(err)
		}
	}
	for _, i := range []int{0, 1} {
		if err := cluster.Servers[i].Kill(); err != nil {
			t.Fatal(err)
		}
	}
	second := mustLock(t, ctx, c.Mutex("ledger")) // quorum {2, 3, 4}: meets the first only at node 2
	defer mustUnlock(t, second)
	if second.Token() <= first.Token() {
		t.Fatalf("tokens %d then %d: the second grant's quorum did not see the first token", first.Token(), second.Token())
	}
}

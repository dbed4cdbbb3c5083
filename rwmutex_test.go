package redlock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/quorumlock/redlock/redlocktest/checker"
	"github.com/redis/go-redis/v9"
)

// recordRW reports a read or write hold to the checker: read holds share
// the readers' owner and may overlap each other, never a writer.
func recordRW(c *checker.Checker, name string, lease *redlock.Lease, acquired time.Time) {
	c.Record(checker.Grant{Name: name, Owner: lease.Owner(), Token: lease.Token(), Shared: lease.Owner() == node.Readers,
		Acquired: acquired, Released: time.Now(), Until: lease.Until()})
}

// Readers and writers of three Clients: no writer overlaps anyone (the
// checker, and a gauge under the lock), readers do overlap, writers'
// tokens increase.
func TestRWMutex_readersTogetherWriterAlone(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	check := checker.New()
	const clients, readers, rounds = 3, 3, 6
	var reading, writing, mostReaders atomic.Int32
	var wg sync.WaitGroup
	section := func(lease *redlock.Lease, write bool) {
		acquired := time.Now()
		if write {
			if writing.Add(1) != 1 || reading.Load() != 0 {
				t.Errorf("a writer entered with another holder inside")
			}
		} else {
			now := reading.Add(1)
			if writing.Load() != 0 {
				t.Errorf("a reader entered with a writer inside")
			}
			for seen := mostReaders.Load(); now > seen && !mostReaders.CompareAndSwap(seen, now); seen = mostReaders.Load() {
			}
		}
		time.Sleep(15 * time.Millisecond)
		if write {
			writing.Add(-1)
		} else {
			reading.Add(-1)
		}
		recordRW(check, "rw", lease, acquired)
		if err := lease.Unlock(context.Background()); err != nil {
			t.Errorf("Unlock: %v", err)
		}
	}
	for range clients {
		rw := newClient(t, cluster).RWMutex("rw", redlock.WithFencing())
		for range readers {
			wg.Go(func() {
				for range rounds {
					lease, err := rw.RLock(ctx)
					if err != nil {
						t.Errorf("RLock: %v", err)
						return
					}
					section(lease, false)
				}
			})
		}
		wg.Go(func() {
			for range rounds {
				lease, err := rw.Lock(ctx)
				if err != nil {
					t.Errorf("Lock: %v", err)
					return
				}
				if lease.Token() == 0 {
					t.Errorf("a writer's lease has no token with WithFencing")
				}
				section(lease, true)
			}
		})
	}
	wg.Wait()
	if err := check.Err(); err != nil {
		t.Fatal(err)
	}
	if want := clients * (readers + 1) * rounds; check.Len() != want {
		t.Fatalf("%d grants, want %d", check.Len(), want)
	}
	if mostReaders.Load() < 2 {
		t.Fatalf("at most %d readers at once: read holds did not overlap", mostReaders.Load())
	}
	waitFor(t, time.Second, "only the fence left", func() bool { return cluster.KeyCount(t) == 3 }) // one a node
}

// Readers that keep the lock read-held between them (each takes it before
// the last lets go, so it is never free) do not starve a writer: once it
// waits, new readers are refused, and the last reader's release hands it
// the lock. (Without the refusal, the relay would hold it forever.)
func TestRWMutex_writerNotStarvedByReaders(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	readers, writer := newClient(t, cluster).RWMutex("doc"), newClient(t, cluster).RWMutex("doc")
	first := mustRLock(t, ctx, readers)
	stop := make(chan struct{})
	var relay sync.WaitGroup
	relay.Go(func() { // a relay of readers: each takes it before the last lets go
		held := first
		for {
			select {
			case <-stop:
				if held != nil {
					_ = held.Unlock(context.Background())
				}
				return
			default:
			}
			next, err := readers.TryRLock(ctx)
			if err != nil {
				next = nil
			}
			if held != nil {
				_ = held.Unlock(context.Background())
			}
			held = next
			time.Sleep(5 * time.Millisecond)
		}
	})
	defer func() { close(stop); relay.Wait() }()
	got := make(chan error, 1)
	go func() {
		lease, err := writer.Lock(ctx)
		if err == nil {
			_ = lease.Unlock(context.Background())
		}
		got <- err
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("the writer: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the writer starved behind a relay of readers")
	}
}

// A reader that asks for the write lock gets an error at once, not a
// deadlock; the write hold's owner may read inside it.
func TestRWMutex_upgradeRefusedReadInsideWrite(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	rw, other := newClient(t, cluster).RWMutex("cfg"), newClient(t, cluster).RWMutex("cfg")

	read := mustRLock(t, ctx, rw)
	if read.Owner() != node.Readers || read.Token() != 0 {
		t.Fatalf("read lease: owner %q token %d", read.Owner(), read.Token())
	}
	for _, try := range []func(context.Context) (*redlock.Lease, error){rw.Lock, rw.TryLock} {
		began := time.Now()
		lease, err := try(read.Context())
		if !errors.Is(err, redlock.ErrNotAcquired) || lease != nil {
			t.Fatalf("Lock with a read lease's Context: %v, want ErrNotAcquired", err)
		}
		if waited := time.Since(began); waited > 100*time.Millisecond {
			t.Fatalf("the refused upgrade took %v, want at once", waited)
		}
	}
	nested := mustRLock(t, read.Context(), rw) // a read inside a read
	mustUnlock(t, nested)
	mustUnlock(t, read)
	// Once the read lease ended, its Context no longer blocks Lock (it is
	// done, so Lock reports that instead).
	if _, err := rw.Lock(read.Context()); errors.Is(err, redlock.ErrNotAcquired) && !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock with an ended read lease's Context: %v, want the Context's error", err)
	}

	write := mustLock(t, ctx, rw)
	inside, err := rw.RLock(write.Context())
	if err != nil {
		t.Fatalf("RLock inside the write hold: %v", err)
	}
	if inside.Owner() != write.Owner() {
		t.Fatalf("the read inside the write hold is owned by %q, want the writer %q", inside.Owner(), write.Owner())
	}
	if lease, err := other.TryRLock(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		if lease != nil {
			_ = lease.Unlock(context.Background())
		}
		t.Fatalf("another reader while the write hold is held: %v", err)
	}
	mustUnlock(t, inside)
	if lease, err := other.TryRLock(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		if lease != nil {
			_ = lease.Unlock(context.Background())
		}
		t.Fatalf("another reader after the inner read, the write hold still held: %v", err)
	}
	mustUnlock(t, write)
	mustUnlock(t, mustRLock(t, ctx, other))
}

// A reader re-entering its read hold is not refused for a waiting writer
// (which waits for that very hold); a new reader is.
func TestRWMutex_nestedReadWhileWriterWaits(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	rw, writer := newClient(t, cluster).RWMutex("tree"), newClient(t, cluster).RWMutex("tree")
	outer := mustRLock(t, ctx, rw)
	waitCtx, cancel := context.WithCancel(ctx)
	got := make(chan error, 1)
	go func() {
		lease, err := writer.Lock(waitCtx)
		if err == nil {
			err = lease.Unlock(context.Background())
		}
		got <- err
	}()
	waitQueued(t, cluster, "tree", 1)
	if lease, err := rw.TryRLock(ctx); !errors.Is(err, redlock.ErrNotAcquired) || !strings.Contains(err.Error(), "a writer waits") {
		if lease != nil {
			_ = lease.Unlock(context.Background())
		}
		t.Fatalf("a new reader while a writer waits: %v, want ErrNotAcquired saying a writer waits", err)
	}
	inner, err := rw.TryRLock(outer.Context())
	if err != nil {
		t.Fatalf("a nested read while a writer waits: %v", err)
	}
	mustUnlock(t, inner)
	mustUnlock(t, outer)
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("the writer: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the writer did not get the lock after the reads ended")
	}
	cancel()
}

// A writer's release that frees the lock tells the waiting readers on
// their channel (once per node that freed it); a reader's does not.
func TestRWMutex_writerReleaseTellsReaders(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	rw := newClient(t, cluster).RWMutex("news")
	subs := make([]*redis.PubSub, 3)
	for i := range subs {
		subs[i] = cluster.Admin(t, i).Subscribe(ctx, "redlock:{news}:readers")
		if _, err := subs[i].Receive(ctx); err != nil { // the subscription's confirmation
			t.Fatal(err)
		}
		defer subs[i].Close()
	}
	mustUnlock(t, mustRLock(t, ctx, rw))
	mustUnlock(t, mustLock(t, ctx, rw))
	for i, sub := range subs {
		msgCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		msg, err := sub.ReceiveMessage(msgCtx)
		cancel()
		if err != nil {
			t.Fatalf("node %d: no notice after the writer's release: %v", i, err)
		}
		if msg.Payload == "" || msg.Payload[len(msg.Payload)-1] != ' ' {
			t.Fatalf("node %d: notice %q, want \"<id> \" (naming no waiter)", i, msg.Payload)
		}
	}
	for i, sub := range subs { // the reader's release sent nothing before it
		quiet, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		msg, err := sub.ReceiveMessage(quiet)
		cancel()
		if err == nil {
			t.Fatalf("node %d: a second notice %q: the reader's release told readers too", i, msg.Payload)
		}
	}
}

// A waiting reader gets the lock after the writer's release, and a reader
// whose process crashed (its hold never released, not renewed) keeps a
// writer out until the TTL, no longer.
func TestRWMutex_readerWaitsForWriterCrashedReaderExpires(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	const ttl = time.Second
	rw := newClient(t, cluster).RWMutex("cache")
	write := mustLock(t, ctx, rw)
	got := make(chan *redlock.Lease, 1)
	go func() {
		lease, err := rw.RLock(ctx)
		if err != nil {
			t.Errorf("RLock: %v", err)
		}
		got <- lease
	}()
	time.Sleep(50 * time.Millisecond)
	select {
	case <-got:
		t.Fatal("a reader got the lock while the writer held it")
	default:
	}
	mustUnlock(t, write)
	if lease := <-got; lease != nil {
		mustUnlock(t, lease)
	}

	crashed := newClient(t, cluster, redlock.WithTTL(ttl), redlock.WithWatchdog(false)).RWMutex("cache")
	if _, err := crashed.RLock(ctx); err != nil { // never unlocked, never renewed
		t.Fatal(err)
	}
	began := time.Now()
	mustUnlock(t, mustLock(t, ctx, rw))
	if waited := time.Since(began); waited > ttl+500*time.Millisecond {
		t.Fatalf("a crashed reader kept the writer out %v, TTL %v", waited, ttl)
	}
}

func TestRWMutex_badInput(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	c := newClient(t, cluster)
	empty := c.RWMutex("")
	for name, try := range map[string]func(context.Context) (*redlock.Lease, error){
		"RLock": empty.RLock, "TryRLock": empty.TryRLock, "Lock": empty.Lock, "TryLock": empty.TryLock,
	} {
		if _, err := try(ctx); !errors.Is(err, redlock.ErrConfig) {
			t.Fatalf("%s of an empty name: %v, want ErrConfig", name, err)
		}
	}
	rw := c.RWMutex("x")
	//lint:ignore SA1012 a nil context is the bad input under test
	if _, err := rw.RLock(nil); !errors.Is(err, redlock.ErrConfig) { //nolint:staticcheck
		t.Fatalf("RLock(nil): %v, want ErrConfig", err)
	}
	if _, err := c.RWMutex("x", redlock.WithTTL(-1)).TryRLock(ctx); !errors.Is(err, redlock.ErrConfig) {
		t.Fatalf("a negative TTL: %v, want ErrConfig", err)
	}
	// The readers' shared owner cannot be taken as a writer's.
	posing := redlock.WithOwner(ctx, node.Readers)
	read := mustRLock(t, ctx, rw)
	if _, err := rw.TryLock(posing); !errors.Is(err, redlock.ErrConfig) {
		t.Fatalf("TryLock as the readers' owner: %v, want ErrConfig", err)
	}
	if _, err := c.Mutex("x").TryLock(posing); !errors.Is(err, redlock.ErrConfig) {
		t.Fatalf("Mutex.TryLock as the readers' owner: %v, want ErrConfig", err)
	}
	if _, err := c.Mutex("x").TryLock(redlock.WithOwner(ctx, node.ForcedOwner)); !errors.Is(err, redlock.ErrConfig) {
		t.Fatalf("Mutex.TryLock as the owner of a handing ForceUnlock ended: %v, want ErrConfig", err)
	}
	mustUnlock(t, read)
	if err := read.Unlock(ctx); !errors.Is(err, redlock.ErrReleased) {
		t.Fatalf("a second Unlock: %v, want ErrReleased", err)
	}
	// RLock returned at a quorum. On a loaded machine its request to the
	// third node can time out and still run there after the release; the
	// lease releases that late grant again (leases.Lease.LateAcquire).
	waitFor(t, 5*time.Second, "no keys left", func() bool { return cluster.KeyCount(t) == 0 })
}

func mustRLock(t *testing.T, ctx context.Context, rw *redlock.RWMutex) *redlock.Lease {
	t.Helper()
	lease, err := rw.RLock(ctx)
	if err != nil {
		t.Fatalf("RLock: %v", err)
	}
	return lease
}

// A waiting RLock whose ctx ends returns an error matching ErrNotAcquired
// and the ctx's error, and leaves no read hold behind; neither does a
// TryRLock refused by a writer.
func TestRWMutex_cancelledReaderLeavesNothing(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	rw, reader := newClient(t, cluster).RWMutex("gone"), newClient(t, cluster).RWMutex("gone")
	write := mustLock(t, ctx, rw)
	// Lock returned at a quorum; the third node's grant may still be on
	// its way on a loaded machine.
	waitFor(t, 5*time.Second, "the writer's hold on every node", func() bool {
		for i := range 3 {
			if holdCount(t, cluster.Admin(t, i), "redlock:{gone}") != 1 {
				return false
			}
		}
		return true
	})
	waitCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := reader.RLock(waitCtx); !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("RLock whose ctx ended: %v, want ErrNotAcquired and DeadlineExceeded", err)
	}
	if _, err := reader.TryRLock(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("TryRLock under a writer: %v, want ErrNotAcquired", err)
	}
	for i := range 3 {
		if holds := holdCount(t, cluster.Admin(t, i), "redlock:{gone}"); holds != 1 {
			t.Fatalf("node %d: %d holds in the lock, want the writer's one", i, holds)
		}
	}
	mustUnlock(t, write)
	if got := cluster.KeyCount(t); got != 0 {
		t.Fatalf("%d keys left", got)
	}
}

// With one node paused, read and write holds are taken and released
// without waiting for it (no Pub/Sub subscription in the way of a reader
// that gets the lock at once).
func TestRWMutex_onePausedNode_noStall(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	rw := newClient(t, cluster, redlock.WithNodeTimeout(2*time.Second)).RWMutex("paused")
	ctx := testContext(t)
	if err := cluster.Servers[1].Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Servers[1].Resume() })
	for range 3 {
		for what, take := range map[string]func(context.Context) (*redlock.Lease, error){"RLock": rw.RLock, "Lock": rw.Lock} {
			start := time.Now()
			lease, err := take(ctx)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			mustUnlock(t, lease)
			if elapsed := time.Since(start); elapsed >= 300*time.Millisecond { // node timeout 2 s
				t.Fatalf("%s+Unlock with one node paused took %v: it waited for the paused node", what, elapsed)
			}
		}
	}
}

// Inspect tells a read-held lock from a write-held one.
func TestRWMutex_inspect(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	c := newClient(t, cluster)
	rw := c.RWMutex("seen")
	a, b := mustRLock(t, ctx, rw), mustRLock(t, ctx, rw)
	info, err := c.Inspect(ctx, "seen")
	if err != nil || !info.Held || !info.Readers || info.Holds != 2 || info.Owner != node.Fingerprint(node.Readers) {
		t.Fatalf("two readers: %+v, %v", info, err)
	}
	mustUnlock(t, a)
	mustUnlock(t, b)
	w := mustLock(t, ctx, rw)
	info, err = c.Inspect(ctx, "seen")
	if err != nil || !info.Held || info.Readers || info.Owner != node.Fingerprint(w.Owner()) {
		t.Fatalf("a writer: %+v, %v", info, err)
	}
	mustUnlock(t, w)
}

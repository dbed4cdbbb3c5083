package redlock_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/redis/go-redis/v9"
)

func TestMutex_Lock_minorityKilled(t *testing.T) {
	cluster := redlocktest.Start(t, 5)
	ctx := testContext(t)
	c := newClient(t, cluster)
	for _, i := range []int{1, 3} {
		if err := cluster.Servers[i].Kill(); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		lease := mustLock(t, ctx, c.Mutex("survivor"))
		mustUnlock(t, lease)
	}
}

func TestMutex_TryLock_majorityKilled_noQuorumFast(t *testing.T) {
	cluster := redlocktest.Start(t, 5)
	nodeTimeout := 2 * time.Second
	c := newClient(t, cluster, redlock.WithNodeTimeout(nodeTimeout))
	for _, i := range []int{0, 2, 4} {
		if err := cluster.Servers[i].Kill(); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	_, err := c.Mutex("doomed").TryLock(testContext(t))
	elapsed := time.Since(start)
	if !errors.Is(err, redlock.ErrNoQuorum) {
		t.Fatalf("TryLock with 3 of 5 nodes dead: %v, want ErrNoQuorum", err)
	}
	var nodeErr *redlock.NodeError
	if !errors.As(err, &nodeErr) {
		t.Fatalf("error carries no *NodeError: %v", err)
	}
	if got := strings.Count(err.Error(), "redlock: node "); got != 3 {
		t.Fatalf("error names %d failing nodes, want 3: %v", got, err)
	}
	// Dead nodes refuse connections at once: giving up must not wait for
	// the node timeout.
	if elapsed >= nodeTimeout {
		t.Fatalf("TryLock took %v, as long as the node timeout %v", elapsed, nodeTimeout)
	}
	if keys := cluster.KeyCount(t); keys != 0 {
		t.Fatalf("%d keys left on the live nodes after a failed TryLock", keys)
	}
}

func TestMutex_Lock_onePausedNode_noStall(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	nodeTimeout := 2 * time.Second
	c := newClient(t, cluster, redlock.WithNodeTimeout(nodeTimeout))
	ctx := testContext(t)
	if err := cluster.Servers[1].Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Servers[1].Resume() })
	for range 3 {
		start := time.Now()
		lease := mustLock(t, ctx, c.Mutex("paused"))
		mustUnlock(t, lease)
		// 300ms: well under the node timeout (2s) and the go-redis
		// clients' read timeout (500ms), so a wait for the paused node in
		// any step (the waiters' clock reading included) shows.
		if elapsed := time.Since(start); elapsed >= 300*time.Millisecond {
			t.Fatalf("Lock+Unlock with one node paused took %v: it waited for the paused node", elapsed)
		}
	}
}

func TestMutex_Lock_scriptFlushBetweenCalls(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	c := newClient(t, cluster, redlock.WithWatchdog(false))
	for range 3 {
		for i := range cluster.Servers {
			if err := redlocktest.FlushScripts(ctx, cluster.Admin(t, i)); err != nil {
				t.Fatal(err)
			}
		}
		lease := mustLock(t, ctx, c.Mutex("flushed"))
		for i := range cluster.Servers {
			_ = redlocktest.FlushScripts(ctx, cluster.Admin(t, i))
		}
		if err := lease.Extend(ctx); err != nil {
			t.Fatalf("Extend after SCRIPT FLUSH: %v", err)
		}
		for i := range cluster.Servers {
			_ = redlocktest.FlushScripts(ctx, cluster.Admin(t, i))
		}
		mustUnlock(t, lease)
	}
}

func TestMutex_Lock_restartedNodeKeepsWorking(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	c := newClient(t, cluster)
	mustUnlock(t, mustLock(t, ctx, c.Mutex("restarts")))
	if err := cluster.Servers[0].Restart(false); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		mustUnlock(t, mustLock(t, ctx, c.Mutex("restarts")))
	}
}

func TestMutex_TryLock_wrongTypeKey(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	for i := range cluster.Servers {
		if err := cluster.Admin(t, i).Set(ctx, "redlock:{typed}", "not a hash", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := cluster.Admin(t, 0).HSet(ctx, "redlock:{hashed}", "field", "1").Err(); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, cluster)
	lease, err := c.Mutex("typed").TryLock(ctx)
	if lease != nil || !errors.Is(err, redlock.ErrKeyConflict) || !strings.Contains(err.Error(), "WRONGTYPE") ||
		!strings.Contains(err.Error(), "redlock:{typed}") || strings.Contains(err.Error(), "user_script") {
		t.Fatalf("TryLock over WRONGTYPE keys: lease %v, err %v; want no lease and ErrKeyConflict naming the key", lease, err)
	}
	// Lock does not wait for what waiting cannot fix: it returns at once.
	start := time.Now()
	waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := c.Mutex("typed").Lock(waitCtx); !errors.Is(err, redlock.ErrKeyConflict) || time.Since(start) > 2*time.Second {
		t.Fatalf("Lock over WRONGTYPE keys: %v after %v; want ErrKeyConflict at once", err, time.Since(start))
	}
	// A fence key of another type: with fencing, Lock stops at once too,
	// and gives the lock back.
	for i := range cluster.Servers {
		if err := cluster.Admin(t, i).HSet(ctx, "redlock:{fenced}:fence", "x", "1").Err(); err != nil {
			t.Fatal(err)
		}
	}
	start = time.Now()
	if _, err := c.Mutex("fenced", redlock.WithFencing()).Lock(waitCtx); !errors.Is(err, redlock.ErrKeyConflict) ||
		!strings.Contains(err.Error(), "redlock:{fenced}:fence") || time.Since(start) > 2*time.Second {
		t.Fatalf("fenced Lock over a WRONGTYPE fence key: %v after %v; want ErrKeyConflict at once", err, time.Since(start))
	}
	for i := range cluster.Servers {
		if n, _ := cluster.Admin(t, i).Exists(ctx, "redlock:{fenced}").Result(); n != 0 {
			t.Fatalf("node %d: the lock was left taken", i)
		}
	}
	// One node with a foreign hash is a failing minority: the lock works.
	lease = mustLock(t, ctx, c.Mutex("hashed"))
	mustUnlock(t, lease)
	if got, _ := cluster.Admin(t, 0).HGet(ctx, "redlock:{hashed}", "field").Result(); got != "1" {
		t.Fatalf("the foreign hash was changed: field = %q", got)
	}
}

// garbageNode is a TCP server that answers every command with a reply of
// the wrong shape: a broken proxy, or not a Redis at all.
func garbageNode(t *testing.T) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		_ = listener.Close()
		mu.Lock()
		for _, conn := range conns {
			_ = conn.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			wg.Go(func() {
				reader := bufio.NewReader(conn)
				for {
					line, err := reader.ReadString('\n')
					if err != nil {
						return
					}
					if strings.HasPrefix(line, "*") { // one reply per command
						if _, err := conn.Write([]byte(":7\r\n")); err != nil {
							return
						}
					}
				}
			})
		}
	})
	return listener.Addr().String()
}

func TestMutex_TryLock_nodeAnswersGarbage(t *testing.T) {
	cluster := redlocktest.Start(t, 2)
	clients := cluster.Clients(t)
	bad := redis.NewClient(&redis.Options{Addr: garbageNode(t), MaxRetries: -1, ContextTimeoutEnabled: true,
		ReadTimeout: 200 * time.Millisecond, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { _ = bad.Close() })
	c, err := redlock.New(append(clients, bad), redlock.WithNodeTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	ctx := testContext(t)
	// Two good nodes of three are a quorum: the garbage node is a failing minority.
	lease := mustLock(t, ctx, c.Mutex("garbage"))
	mustUnlock(t, lease)
	// Needing all three, the garbage node's reply is an error, not a panic.
	_, err = c.Mutex("garbage", redlock.WithQuorum(3)).TryLock(ctx)
	var nodeErr *redlock.NodeError
	if !errors.As(err, &nodeErr) || nodeErr.Node != 2 {
		t.Fatalf("TryLock needing the garbage node: %v, want a *NodeError for node 2", err)
	}
	waitFor(t, time.Second, "no keys left", func() bool { return cluster.KeyCount(t) == 0 })
}

func TestMutex_afterClose(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	c, err := redlock.New(cluster.Clients(t))
	if err != nil {
		t.Fatal(err)
	}
	held := mustLock(t, ctx, c.Mutex("closing"))
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if !errors.Is(held.Err(), redlock.ErrClosed) {
		t.Fatalf("lease after Close: %v, want ErrClosed", held.Err())
	}
	if keys := cluster.KeyCount(t); keys != 0 {
		t.Fatalf("Close left %d keys: it must release the leases it holds", keys)
	}
	if _, err := c.Mutex("closing").Lock(ctx); !errors.Is(err, redlock.ErrClosed) {
		t.Fatalf("Lock after Close: %v, want ErrClosed", err)
	}
	if _, err := c.Mutex("closing").TryLock(ctx); !errors.Is(err, redlock.ErrClosed) {
		t.Fatalf("TryLock after Close: %v, want ErrClosed", err)
	}
	if err := held.Unlock(ctx); !errors.Is(err, redlock.ErrClosed) {
		t.Fatalf("Unlock after Close: %v, want ErrClosed", err)
	}
	if err := c.Close(); !errors.Is(err, redlock.ErrClosed) {
		t.Fatalf("second Close: %v, want ErrClosed", err)
	}
}

// Lock that gives up with a majority of nodes down says what it last saw:
// it matches ErrNoQuorum and the ctx's error, names each failing node
// (errors.As finds every *NodeError), and reads on one line.
func TestMutex_Lock_majorityDown_givesUpWithTheReason(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	// A node timeout a loaded machine's calls fit in: an attempt whose call
	// to node 0 waited past it unsent would not hear node 0 agree. Nodes 1
	// and 2 refuse at once, so it does not slow the test.
	c := newClient(t, cluster, redlock.WithNodeTimeout(time.Second))
	// One lock first: node 0's connection, script and guard stamp are
	// ready, so under a loaded CI machine each attempt hears it answer.
	mustUnlock(t, mustLock(t, testContext(t), c.Mutex("down")))
	for _, i := range []int{1, 2} {
		if err := cluster.Servers[i].Kill(); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(testContext(t), 2*time.Second)
	defer cancel()
	_, err := c.Mutex("down").Lock(ctx)
	if !errors.Is(err, redlock.ErrNotAcquired) || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, redlock.ErrNoQuorum) {
		t.Fatalf("Lock with 2 of 3 nodes down: %v; want ErrNotAcquired, DeadlineExceeded and ErrNoQuorum", err)
	}
	seen := map[int]bool{}
	for _, e := range unwrapAll(err) {
		var nodeErr *redlock.NodeError
		if errors.As(e, &nodeErr) {
			seen[nodeErr.Node] = true
		}
	}
	if !seen[1] || !seen[2] || seen[0] {
		t.Errorf("node errors for nodes %v; want 1 and 2", seen)
	}
	for _, e := range []error{err, tryLockErr(t, c)} {
		if message := e.Error(); strings.Contains(message, "\n") || !strings.Contains(message, "1 of 3 nodes agreed, 2 needed") {
			t.Errorf("message %q: want one line saying 1 of 3 nodes agreed, 2 needed", message)
		}
	}
}

func tryLockErr(t *testing.T, c *redlock.Client) error {
	t.Helper()
	_, err := c.Mutex("down").TryLock(testContext(t))
	if !errors.Is(err, redlock.ErrNoQuorum) {
		t.Fatalf("TryLock: %v; want ErrNoQuorum", err)
	}
	return err
}

// unwrapAll is err and every error in its tree.
func unwrapAll(err error) []error {
	all := []error{err}
	switch e := err.(type) {
	case interface{ Unwrap() error }:
		if inner := e.Unwrap(); inner != nil {
			all = append(all, unwrapAll(inner)...)
		}
	case interface{ Unwrap() []error }:
		for _, inner := range e.Unwrap() {
			all = append(all, unwrapAll(inner)...)
		}
	}
	return all
}

// countingRedisLog counts go-redis's own log lines that name an address.
type countingRedisLog struct {
	mu    sync.Mutex
	lines map[string]int // by address
	all   []string
}

func (l *countingRedisLog) Printf(_ context.Context, format string, v ...any) {
	line := fmt.Sprintf(format, v...)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, line)
	for addr := range l.lines {
		if strings.Contains(line, addr) {
			l.lines[addr]++
		}
	}
}

func (l *countingRedisLog) count(addr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lines[addr]
}

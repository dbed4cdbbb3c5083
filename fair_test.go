package redlock_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
)

// queueOf returns the fair queue of name on node i, head first.
func queueOf(t *testing.T, cluster *redlocktest.Nodes, i int, name string) []string {
	t.Helper()
	members, err := cluster.Admin(t, i).ZRange(context.Background(), "redlock:{"+name+"}:queue", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	return members
}

func TestFair_grantsInArrivalOrder(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	const waiters = 12
	holder := newClient(t, cluster, redlock.WithFair())
	first := mustLock(t, ctx, holder.Mutex("fifo"))
	order := make(chan int, waiters)
	var wg sync.WaitGroup
	for i := range waiters {
		c := newClient(t, cluster, redlock.WithFair())
		wg.Go(func() {
			lease, err := c.Mutex("fifo").Lock(ctx)
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			order <- i
			time.Sleep(2 * time.Millisecond)
			_ = lease.Unlock(context.Background())
		})
		waitQueued(t, cluster, "fifo", i+1) // arrive one after another
	}
	mustUnlock(t, first)
	wg.Wait()
	close(order)
	want := 0
	for got := range order {
		if got != want {
			t.Fatalf("waiter %d got the lock in place %d", got, want)
		}
		want++
	}
	if want != waiters {
		t.Fatalf("%d of %d waiters got the lock", want, waiters)
	}
	waitFor(t, time.Second, "no keys left", func() bool { return cluster.KeyCount(t) == 0 })
}

func TestFair_cancelledWaiterLeavesAndNextGetsItPromptly(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	opts := []redlock.Option{redlock.WithFair(), redlock.WithQueueTimeout(10 * time.Second)}
	holder, quitter, patient := newClient(t, cluster, opts...), newClient(t, cluster, opts...), newClient(t, cluster, opts...)
	lease := mustLock(t, ctx, holder.Mutex("queue"))
	quitCtx, quit := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if _, err := quitter.Mutex("queue").Lock(quitCtx); !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled waiter: %v", err)
		}
	})
	waitQueued(t, cluster, "queue", 1)
	grant := lockInBackground(t, ctx, patient.Mutex("queue"))
	waitQueued(t, cluster, "queue", 2)
	quit()
	waitQueued(t, cluster, "queue", 1) // the cancelled waiter left
	released := time.Now()
	mustUnlock(t, lease)
	at, ok := grant()
	wg.Wait()
	if ok && at.Sub(released) > time.Second {
		t.Fatalf("the waiter behind a cancelled one got the lock %v after the release", at.Sub(released))
	}
	waitFor(t, time.Second, "no keys left", func() bool { return cluster.KeyCount(t) == 0 })
}

// A waiter process killed while queued holds up the queue for at most the
// queue timeout: the others evict it when its heartbeat deadline passes.
func TestFair_killedWaiterDelaysQueueAtMostQueueTimeout(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	const queueTimeout = time.Second
	opts := []redlock.Option{redlock.WithFair(), redlock.WithQueueTimeout(queueTimeout)}
	holder, patient := newClient(t, cluster, opts...), newClient(t, cluster, opts...)
	lease := mustLock(t, ctx, holder.Mutex("crash"))

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), "REDLOCK_FAIR_WAITER="+cluster.URLs()[0]+","+cluster.URLs()[1]+","+cluster.URLs()[2])
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	waitQueued(t, cluster, "crash", 1)
	grant := lockInBackground(t, ctx, patient.Mutex("crash"))
	waitQueued(t, cluster, "crash", 2)
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	killed := time.Now()
	mustUnlock(t, lease)
	at, ok := grant()
	if !ok {
		return
	}
	// The dead waiter's deadline is at most queueTimeout after its last
	// heartbeat; the patient waiter looks every queueTimeout/3.
	if delay := at.Sub(killed); delay > queueTimeout+queueTimeout/3+300*time.Millisecond {
		t.Fatalf("queue held up %v by a killed waiter, more than the queue timeout %v", delay, queueTimeout)
	} else {
		t.Logf("a killed waiter held up the queue for %v (queue timeout %v)", delay, queueTimeout)
	}
	waitFor(t, time.Second, "no keys left", func() bool { return cluster.KeyCount(t) == 0 })
}

// runFairWaiter is the child process of the killed-waiter test: it queues
// for the lock and waits to be killed.
func runFairWaiter(urls string) {
	c, err := redlock.Dial(strings.Split(urls, ","), redlock.WithFair(), redlock.WithQueueTimeout(time.Second))
	if err != nil {
		os.Exit(3)
	}
	_, _ = c.Mutex("crash").Lock(context.Background())
	os.Exit(4) // not reached: the parent kills this process while it waits
}

func TestFair_reentrantAndTryLock(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	a, b := newClient(t, cluster, redlock.WithFair()), newClient(t, cluster, redlock.WithFair())
	outer := mustLock(t, ctx, a.Mutex("fair-nested"))
	inner, err := a.Mutex("fair-nested").TryLock(outer.Context())
	if err != nil {
		t.Fatalf("fair re-entry: %v", err)
	}
	if _, err := b.Mutex("fair-nested").TryLock(ctx); !errors.Is(err, redlock.ErrNotAcquired) {
		t.Fatalf("fair TryLock of a held lock: %v", err)
	}
	if got := queueOf(t, cluster, 0, "fair-nested"); len(got) != 0 {
		t.Fatalf("a failed TryLock left %v queued", got)
	}
	mustUnlock(t, inner)
	mustUnlock(t, outer)
	waitFor(t, time.Second, "no keys left", func() bool { return cluster.KeyCount(t) == 0 })
}

// Tickets are in the nodes' time: a waiter whose process clock is 5 s
// behind, arriving second, is still served second (with the process's own
// clock its ticket would be the smaller one).
func TestFair_ticketsInTheNodesTime(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	holderClient := newClient(t, cluster, redlock.WithFair())
	onTime := newClient(t, cluster, redlock.WithFair())
	behind := newClient(t, cluster, redlock.WithFair())
	redlock.SetLocalClock(behind, func() time.Time { return time.Now().Add(-5 * time.Second) })

	holder := mustLock(t, ctx, holderClient.Mutex("order"))
	served := make(chan string, 2)
	lockAs := func(c *redlock.Client, who string) {
		lease, err := c.Mutex("order").Lock(ctx)
		if err != nil {
			t.Errorf("%s: %v", who, err)
			served <- who
			return
		}
		served <- who
		_ = lease.Unlock(context.Background())
	}
	var wg sync.WaitGroup
	// Queued on every node, not just one: a node the first waiter has not
	// reached yet when the lock is freed would hand it to the second.
	queuedEverywhere := func(n int64) func() bool {
		return func() bool {
			for i := range cluster.Servers {
				if got, _ := cluster.Admin(t, i).ZCard(ctx, "redlock:{order}:queue").Result(); got != n {
					return false
				}
			}
			return true
		}
	}
	wg.Go(func() { lockAs(onTime, "first to arrive") })
	waitFor(t, 2*time.Second, "the first waiter to queue on every node", queuedEverywhere(1))
	// A ticket is in the nodes' time to within half the round trip of the
	// clock reading behind it: arrivals closer than that (a loaded machine
	// can make it tens of ms) have no defined order.
	time.Sleep(200 * time.Millisecond)
	wg.Go(func() { lockAs(behind, "second to arrive, clock behind") })
	waitFor(t, 2*time.Second, "the second waiter to queue on every node", queuedEverywhere(2))
	mustUnlock(t, holder)
	wg.Wait()
	if first := <-served; first != "first to arrive" {
		t.Fatalf("served first: %s", first)
	}
}

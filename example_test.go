package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest/redisproc"
)

// exampleNodes starts three local redis-server processes for an example
// and returns their URLs and a function that stops them.
func exampleNodes() ([]string, func()) {
	dir, err := os.MkdirTemp("", "redlock-example-")
	if err != nil {
		panic(err) // examples only: a test binary that cannot make a temp dir is broken
	}
	var servers []*redisproc.Server
	stop := func() {
		for _, server := range servers {
			_ = server.Kill()
		}
		_ = os.RemoveAll(dir)
	}
	for i := range 3 {
		server, err := redisproc.Start(redisproc.Config{Dir: fmt.Sprintf("%s/%d", dir, i)})
		if err != nil {
			stop()
			panic(err)
		}
		servers = append(servers, server)
	}
	urls := make([]string, len(servers))
	for i, server := range servers {
		urls[i] = server.URL()
	}
	return urls, stop
}

func Example() {
	urls, stop := exampleNodes()
	defer stop()

	client, err := redlock.Dial(urls) // e.g. redis://10.0.0.1:6379, one per independent node
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close()

	lease, err := client.Mutex("invoice-42").Lock(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	// Work under the lock; stop when lease.Context() is done.
	fmt.Println("held:", lease.Err() == nil)
	if err := lease.Unlock(context.Background()); err != nil {
		fmt.Println(err)
	}
	fmt.Println("after Unlock:", lease.Err())
	// Output:
	// held: true
	// after Unlock: redlock: lease released
}

func ExampleMutex_TryLock() {
	urls, stop := exampleNodes()
	defer stop()
	client, _ := redlock.Dial(urls)
	defer client.Close()

	ctx := context.Background()
	first, _ := client.Mutex("report").Lock(ctx)
	_, err := client.Mutex("report").TryLock(ctx)
	fmt.Println("second owner:", errors.Is(err, redlock.ErrNotAcquired))
	_ = first.Unlock(ctx)
	// Output:
	// second owner: true
}

func ExampleLease_Context_reentrant() {
	urls, stop := exampleNodes()
	defer stop()
	client, _ := redlock.Dial(urls)
	defer client.Close()

	m := client.Mutex("account-7")
	outer, _ := m.Lock(context.Background())
	// Code that receives the lease's context may lock again: it re-enters.
	inner, err := m.Lock(outer.Context())
	fmt.Println("re-entered:", err == nil, inner.Owner() == outer.Owner())
	_ = inner.Unlock(context.Background())
	_ = outer.Unlock(context.Background())
	// Output:
	// re-entered: true true
}

func ExampleWithOwner() {
	urls, stop := exampleNodes()
	defer stop()
	a, _ := redlock.Dial(urls)
	defer a.Close()
	b, _ := redlock.Dial(urls) // another client, as in another process
	defer b.Close()

	ctx := redlock.WithOwner(context.Background(), "request-42")
	first, _ := a.Mutex("cart").Lock(ctx)
	second, err := b.Mutex("cart").Lock(ctx) // same owner: re-enters
	fmt.Println("same owner re-enters:", err == nil)
	_ = second.Unlock(ctx)
	_ = first.Unlock(ctx)
	// Output:
	// same owner re-enters: true
}

func ExampleLease_Extend() {
	urls, stop := exampleNodes()
	defer stop()
	client, _ := redlock.Dial(urls, redlock.WithTTL(time.Second), redlock.WithWatchdog(false))
	defer client.Close()

	lease, _ := client.Mutex("batch").Lock(context.Background())
	before := lease.Until()
	time.Sleep(100 * time.Millisecond)
	err := lease.Extend(context.Background())
	fmt.Println("extended:", err == nil, lease.Until().After(before))
	_ = lease.Unlock(context.Background())
	// Output:
	// extended: true true
}

func ExampleClient_Inspect() {
	urls, stop := exampleNodes()
	defer stop()
	client, _ := redlock.Dial(urls)
	defer client.Close()

	ctx := context.Background()
	lease, _ := client.Mutex("nightly-backup").Lock(ctx)
	info, _ := client.Inspect(ctx, "nightly-backup")
	fmt.Println("held:", info.Held, "by me:", info.Owner == node.Fingerprint(lease.Owner()), "holds:", info.Holds)

	// An operator takes it from a stuck holder; the holder's lease ends
	// at its next renewal.
	_ = client.ForceUnlock(ctx, "nightly-backup")
	info, _ = client.Inspect(ctx, "nightly-backup")
	fmt.Println("held after ForceUnlock:", info.Held)
	// Output:
	// held: true by me: true holds: 1
	// held after ForceUnlock: false
}

// Many readers at once or one writer, across every process; a reader
// cannot turn its read hold into a write hold (it would deadlock with
// another reader doing the same), it gets an error at once instead.
func ExampleRWMutex() {
	urls, stop := exampleNodes()
	defer stop()
	client, _ := redlock.Dial(urls)
	defer client.Close()

	ctx := context.Background()
	config := client.RWMutex("config")
	a, _ := config.RLock(ctx)
	b, _ := config.RLock(ctx) // readers share it
	_, err := config.TryLock(ctx)
	fmt.Println("writer while read:", errors.Is(err, redlock.ErrNotAcquired))
	_, err = config.Lock(a.Context()) // upgrade: refused at once
	fmt.Println("upgrade:", errors.Is(err, redlock.ErrNotAcquired))

	_ = a.Unlock(ctx)
	_ = b.Unlock(ctx)
	w, err := config.TryLock(ctx)
	fmt.Println("writer after the reads:", err == nil)
	_ = w.Unlock(ctx)
	// Output:
	// writer while read: true
	// upgrade: true
	// writer after the reads: true
}

// At most two exports run at once, across every process that uses the
// semaphore; a third waits, or with TryAcquire gives up at once.
func ExampleSemaphore() {
	urls, stop := exampleNodes()
	defer stop()
	client, _ := redlock.Dial(urls)
	defer client.Close()

	ctx := context.Background()
	exports := client.Semaphore("exports", 2)
	first, _ := exports.Acquire(ctx)
	second, _ := exports.Acquire(ctx)
	_, err := exports.TryAcquire(ctx)
	fmt.Println("third:", errors.Is(err, redlock.ErrNotAcquired))

	_ = first.Unlock(ctx)
	third, err := exports.TryAcquire(ctx)
	fmt.Println("after an Unlock:", err == nil)
	_ = second.Unlock(ctx)
	_ = third.Unlock(ctx)
	// Output:
	// third: true
	// after an Unlock: true
}

// One scheduler leads at a time; its term fences what it writes, and
// Unlock resigns.
func ExampleElection() {
	urls, stop := exampleNodes()
	defer stop()
	client, _ := redlock.Dial(urls)
	defer client.Close()

	ctx := context.Background()
	election := client.Election("scheduler")
	leadership, _ := election.Campaign(ctx, "host-a")
	leader, _ := election.Leader(ctx)
	fmt.Println("leader:", leader.Value, "term is the token:", leader.Term == leadership.Token())

	_ = leadership.Unlock(ctx)
	_, err := election.Leader(ctx)
	fmt.Println("after resigning:", errors.Is(err, redlock.ErrNoLeader))
	// Output:
	// leader: host-a term is the token: true
	// after resigning: true
}

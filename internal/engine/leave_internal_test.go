package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/quorumlock/redlock/internal/core"
	"github.com/quorumlock/redlock/internal/leases"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/quorum"
	"github.com/quorumlock/redlock/redlocktest"
)

// node2Rig is a Client on three real nodes whose node 2 another owner
// holds (only there), and a look at node 2's queue of the lock name. Its
// queue timeout is far above the tests' waits: a place left behind is not
// evicted by its heartbeat deadline while a test looks.
type node2Rig struct {
	ctx    context.Context
	client *Client
	admin  *redis.Client // node 2's
	key    string        // the lock's key
}

func newNode2Rig(t *testing.T, name string) *node2Rig {
	t.Helper()
	cluster := redlocktest.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	c, err := New(cluster.Clients(t), core.WithQueueTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	r := &node2Rig{ctx: ctx, client: c, admin: cluster.Admin(t, 2), key: "redlock:{" + name + "}"}
	if err := r.admin.HSet(ctx, r.key, "owner", "someone-else", "their-hold", 1).Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.admin.PExpire(ctx, r.key, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	return r
}

// queued is node 2's queue.
func (r *node2Rig) queued(t *testing.T) []string {
	t.Helper()
	members, err := r.admin.ZRange(r.ctx, r.key+":queue", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	return members
}

// A lease whose acquire on one node timed out may see that acquire run
// there late, after the call had left that node's queue (the leave goes on
// a fresh connection and can overtake it). Refused there (another owner
// holds that node), the late acquire queues the owner again: a place that
// nobody heartbeats, which the node would hand the lock to until its
// deadline. The lease's release, which leaves a tombstone there, leaves
// that queue once the tombstone is in place.
//
// The late acquire is made here by hand, after the leave, on a node the
// lease counts as unsure, as a timed-out acquire would have left it: the
// order of two calls on two connections cannot be forced over the network.
func TestLease_releaseLeavesTheQueueALateAcquireJoined(t *testing.T) {
	r := newNode2Rig(t, "late-queued")
	ctx := r.ctx
	queued := func() []string { return r.queued(t) }
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}

	m := r.client.Mutex("late-queued")
	held, err := m.Lock(ctx) // nodes 0 and 1 grant; node 2 refuses, and the call leaves its queue
	if err != nil {
		t.Fatal(err)
	}
	l := held.held.(*leases.Lease)
	// Lock returns at the quorum of nodes 0 and 1: on a loaded machine node
	// 2's acquire can run only after that, and the leave that answers its
	// refusal later still. Wait for both (the Client's background work),
	// or the leave would take away the place made by hand below.
	r.client.runtime.Background.Wait()
	waitUntil("the call to leave node 2's queue", func() bool { return len(queued()) == 0 })

	// Node 2's acquire, as if it had timed out and run only now.
	l.Called(2, context.DeadlineExceeded)
	if _, err := m.target.Queue.Acquire(ctx, nil, 2, l.Owner(), l.Hold, 1); err != nil {
		t.Fatal(err)
	}
	if got := queued(); !slices.Equal(got, []string{l.Owner()}) {
		t.Fatalf("node 2's queue after the late acquire: %v, want the lease's owner", got)
	}

	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	waitUntil("node 2's queue to empty after the release", func() bool { return len(queued()) == 0 })
	// The tombstone keeps it so: the same acquire, later still, is refused
	// without queueing the owner.
	if _, err := m.target.Queue.Acquire(ctx, nil, 2, l.Owner(), l.Hold, 1); err != nil {
		t.Fatal(err)
	}
	if got := queued(); len(got) != 0 {
		t.Fatalf("node 2's queue after a later copy of the acquire: %v", got)
	}
}

// The undo of an attempt whose acquire timed out releases it with a
// tombstone; if that acquire ran and queued the owner, the place stays
// while the call still waits (it is the call's own), and goes once the
// call has ended: the release that lands then (retried by the sweeper, or
// late) is followed by a leave.
func TestUndo_leavesTheQueueOnlyOnceTheCallEnded(t *testing.T) {
	r := newNode2Rig(t, "undo-queued")
	ctx, m := r.ctx, r.client.Mutex("undo-queued")
	queued := func() []string { return r.queued(t) }
	for _, ended := range []bool{false, true} {
		// A call and owner of each pass's own: the first pass's
		// tombstone and place must not speak for the second.
		k := &lockCall{m: m, owner: fmt.Sprint("waiter-", ended), id: fmt.Sprint("call-", ended), wait: true}
		k.ended.Store(ended)
		hold := k.nextHold()
		// The attempt's acquire, run on node 2 after its call timed out:
		// refused, it queues the owner.
		got, err := m.target.Queue.Acquire(ctx, nil, 2, k.owner, hold, 1)
		if err != nil || got.Granted || !slices.Contains(queued(), k.owner) {
			t.Fatalf("call ended %v: the late acquire: %+v, %v, queue %v; want refused, the owner queued", ended, got, err, queued())
		}
		m.target.ReleaseNode(ctx, 2, k.owner, hold, true, k.ended.Load)
		if got, want := slices.Contains(queued(), k.owner), !ended; got != want {
			t.Errorf("call ended %v: owner queued on node 2 after the undo: %v, want %v", ended, got, want)
		}
	}
}

// A refusal that arrives after Lock returned (the node queued the owner,
// and may hand it the lock later) is answered with a leave that passes on
// only a lock handed naming the lease's own hold: the call may have given
// that lease back and gone on waiting, and a lock handed for a later
// attempt of it may be part of a lease taken from the notices.
func TestLease_lateRefusalPassesOnOnlyItsOwnHanding(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := New(cluster.Clients(t))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	const name = "late-refusal"
	key := "redlock:{" + name + "}"
	held, err := c.Mutex(name).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l := held.held.(*leases.Lease)
	c.runtime.Background.Wait() // a request of Lock's still on its way lands first
	admin := cluster.Admin(t, 2)
	handTo := func(named string) {
		t.Helper()
		if err := admin.Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
		if err := admin.HSet(ctx, key, "owner", l.Owner(), "handed", named).Err(); err != nil {
			t.Fatal(err)
		}
	}
	handing := func() string {
		t.Helper()
		named, _ := admin.HGet(ctx, key, "handed").Result()
		return named
	}
	later := node.CallOf(l.Hold) + ".9" // a later attempt of the same call
	handTo(later)
	l.LateAcquire(2, quorum.Reply[node.Acquired]{Vote: quorum.No})
	if got := handing(); got != later {
		t.Fatalf("a lock handed for a later attempt after the late refusal: handed %q, want %q kept", got, later)
	}
	handTo(l.Hold)
	l.LateAcquire(2, quorum.Reply[node.Acquired]{Vote: quorum.No})
	if n, _ := admin.Exists(ctx, key).Result(); n != 0 {
		t.Fatalf("a lock handed naming the lease's hold after the late refusal: still there (%q)", handing())
	}
	if err := held.Unlock(ctx); err != nil && !errors.Is(err, core.ErrNotHeld) {
		t.Fatal(err)
	}
}

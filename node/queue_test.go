package node_test

import (
	"context"
	"testing"
	"time"

	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/redis/go-redis/v9"
)

// fairWaiter queues with ticket, its notices on channel "c".
func fairWaiter(ticket int64, lifetime time.Duration) node.Waiter {
	return node.Waiter{Ticket: ticket, Lifetime: lifetime, Channel: "c", Fair: true}
}

// inOrder has each owner acquire (hold "<owner>.1": call <owner>'s first attempt) in turn, tickets 1, 2,
// …: the first takes the lock, the others queue behind it in that order.
func inOrder(t *testing.T, n *node.Node, keys node.Keys, window time.Duration, owners ...string) {
	t.Helper()
	for i, owner := range owners {
		w := fairWaiter(int64(i+1), time.Minute)
		w.Span = window // a lock handed to it lapses after window
		if _, err := n.AcquireQueued(context.Background(), nil, keys, owner, owner+".1", time.Minute, w, window); err != nil {
			t.Fatal(err)
		}
	}
}

// Nodes that received the waiters' enqueues in different orders still
// agree on the head, because the queue is ordered by the ticket each
// waiter chose once, not by arrival: every node hands the lock to the
// same waiter, so the quorum cannot split between heads.
func TestAcquireQueued_headByTicketWhateverTheArrivalOrder(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	clients := cluster.Clients(t)
	ctx := context.Background()
	keys := keysOf("redlock:{q}")
	const ttl, lifetime, window = 10 * time.Second, 10 * time.Second, 5 * time.Second
	tickets := map[string]int64{"w1": 100, "w2": 200, "w3": 300}
	arrival := [][]string{{"w1", "w2", "w3"}, {"w3", "w2", "w1"}, {"w2", "w3", "w1"}}
	nodes := make([]*node.Node, 3)
	for i := range nodes {
		nodes[i] = node.New(i, cluster.Addrs()[i], clients[i])
		if got, err := nodes[i].AcquireQueued(ctx, nil, keys, "holder", "h0", ttl, fairWaiter(1, lifetime), window); err != nil || !got.Granted {
			t.Fatalf("node %d: holder: %+v, %v", i, got, err)
		}
		for _, waiter := range arrival[i] {
			got, err := nodes[i].AcquireQueued(ctx, nil, keys, waiter, waiter+".1", ttl, fairWaiter(tickets[waiter], lifetime), window)
			if err != nil || got.Granted || got.PTTL < 0 {
				t.Fatalf("node %d: %s queued: %+v, %v", i, waiter, got, err)
			}
		}
	}
	for i, n := range nodes {
		admin := cluster.Admin(t, i)
		released, head, err := n.Release(ctx, keys, "holder", "h0", 0, window)
		if err != nil || released != node.LockDeleted || head != node.Fingerprint("w1") {
			t.Fatalf("node %d: release = %v, head %q, %v; want the lock handed to w1", i, released, head, err)
		}
		// Handed, not free: no one else can take it, and it is never
		// handed for longer than the waiter's heartbeat deadline (its span
		// is zero here: the deadline), naming the hold that queued it.
		if fields, _ := admin.HMGet(ctx, keys.Lock, "owner", "handed").Result(); fields[0] != "w1" || fields[1] != "w1.1" {
			t.Fatalf("node %d: owner and handed after the release %v, want w1, w1.1", i, fields)
		}
		if pttl, _ := admin.PTTL(ctx, keys.Lock).Result(); pttl <= 0 || pttl > lifetime {
			t.Fatalf("node %d: a handed lock lives %v, want (0, %v]", i, pttl, lifetime)
		}
		got, err := n.AcquireQueued(ctx, nil, keys, "w3", "w3.1", ttl, fairWaiter(tickets["w3"], lifetime), window)
		if err != nil || got.Granted || got.Holder != node.Fingerprint("w1") {
			t.Fatalf("node %d: w3 out of turn: %+v, %v; want refused, held by w1", i, got, err)
		}
		got, err = n.AcquireQueued(ctx, nil, keys, "w1", "w1.2", ttl, fairWaiter(tickets["w1"], lifetime), window)
		if err != nil || !got.Granted || got.Holds != 1 {
			t.Fatalf("node %d: w1's claim: %+v, %v; want granted, one hold", i, got, err)
		}
		fields, _ := admin.HGetAll(ctx, keys.Lock).Result()
		if len(fields) != 2 || fields["owner"] != "w1" || fields["w1.2"] != "1" {
			t.Fatalf("node %d: lock after the claim %v, want owner w1 and its hold", i, fields)
		}
		if pttl, _ := admin.PTTL(ctx, keys.Lock).Result(); pttl <= window || pttl > ttl {
			t.Fatalf("node %d: a claimed lock lives %v, want the ttl %v", i, pttl, ttl)
		}
	}
	for i := range nodes {
		queue, _ := cluster.Admin(t, i).ZRange(ctx, keys.Queue, 0, -1).Result()
		if len(queue) != 2 || queue[0] != "w2" || queue[1] != "w3" {
			t.Fatalf("node %d queue after w1's claim: %v, want [w2 w3]", i, queue)
		}
	}
}

// Only the waiter the lock went to is told, on its own channel.
func TestQueue_releaseTellsOnlyTheWaiterItHandsTo(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	keys := keysOf("redlock:{t}")
	sub := cluster.Clients(t)[0].Subscribe(ctx, "chan-a", "chan-b")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	waiter := func(ticket int64, channel string) node.Waiter {
		return node.Waiter{Ticket: ticket, Lifetime: time.Minute, Channel: channel}
	}
	if got, err := n.AcquireQueued(ctx, nil, keys, "holder", "h", time.Minute, waiter(1, "chan-a"), time.Second); err != nil || !got.Granted {
		t.Fatalf("holder: %+v, %v", got, err)
	}
	for _, w := range []struct {
		owner, channel string
		ticket         int64
	}{{"a", "chan-a", 10}, {"b", "chan-b", 5}} {
		if got, err := n.AcquireQueued(ctx, nil, keys, w.owner, w.owner+"-1", time.Minute, waiter(w.ticket, w.channel), time.Second); err != nil || got.Granted {
			t.Fatalf("%s: %+v, %v; want queued", w.owner, got, err)
		}
	}
	if _, head, err := n.Release(ctx, keys, "holder", "h", 0, time.Second); err != nil || head != node.Fingerprint("b") {
		t.Fatalf("release: head %q, %v; want b (the lower ticket)", head, err)
	}
	msg, err := sub.ReceiveMessage(ctx)
	if err != nil || msg.Channel != "chan-b" || msg.Payload != "h "+node.Fingerprint("b")+" b-1" {
		t.Fatalf("notice %+v, %v; want \"h <b> b-1\" on chan-b (b-1 queued b)", msg, err)
	}
	if notice := node.ParseNotice(msg.Payload); notice.ID != "h" || notice.Who != node.Fingerprint("b") || notice.Hold != "b-1" {
		t.Fatalf("ParseNotice(%q) = %+v", msg.Payload, notice)
	}
	select {
	case msg := <-sub.Channel():
		t.Fatalf("a second notice: %+v", msg)
	case <-time.After(100 * time.Millisecond):
	}
}

// A plain newcomer takes a free lock in one call even with waiters queued
// (a free lock with waiters is one whose handoff lapsed); a fair one
// queues, and the lock goes to the first waiter.
func TestAcquireQueued_plainTakesAFreeLockFairQueues(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	admin := cluster.Admin(t, 0)
	for _, fair := range []bool{false, true} {
		keys := keysOf("redlock:{free}")
		if err := admin.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if err := admin.ZAdd(ctx, keys.Queue, redis.Z{Score: 1, Member: "first"}).Err(); err != nil {
			t.Fatal(err)
		}
		if err := admin.ZAdd(ctx, keys.Alive, redis.Z{Score: float64(time.Now().Add(time.Hour).UnixMilli()), Member: "first"}).Err(); err != nil {
			t.Fatal(err)
		}
		w := node.Waiter{Ticket: 2, Lifetime: time.Minute, Channel: "c", Fair: fair}
		got, err := n.AcquireQueued(ctx, nil, keys, "newcomer", "n1", time.Minute, w, time.Second)
		if err != nil || got.Granted == fair {
			t.Fatalf("fair=%v: newcomer %+v, %v", fair, got, err)
		}
		if fair {
			if owner, _ := admin.HGet(ctx, keys.Lock, "owner").Result(); !got.Behind || owner != "first" {
				t.Fatalf("fair: %+v, owner %q; want behind, the lock handed to the first waiter", got, owner)
			}
		}
	}
}

// A waiter whose heartbeat lapsed is evicted: the lock goes to the next.
func TestQueue_releasePassesOverWaitersWithoutHeartbeat(t *testing.T) {
	n, _ := oneNode(t)
	ctx := context.Background()
	keys := keysOf("l")
	if _, err := n.AcquireQueued(ctx, nil, keys, "holder", "h", time.Minute, fairWaiter(1, time.Minute), time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := n.AcquireQueued(ctx, nil, keys, "ghost", "g", time.Minute, fairWaiter(2, 50*time.Millisecond), time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := n.AcquireQueued(ctx, nil, keys, "late", "l1", time.Minute, fairWaiter(3, time.Minute), time.Second); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, head, err := n.Release(ctx, keys, "holder", "h", 0, time.Second); err != nil || head != node.Fingerprint("late") {
		t.Fatalf("release: head %q, %v; want late (ghost's heartbeat lapsed)", head, err)
	}
	if got, err := n.AcquireQueued(ctx, nil, keys, "late", "l2", time.Minute, fairWaiter(3, time.Minute), time.Second); err != nil || !got.Granted {
		t.Fatalf("late's claim: %+v, %v; want granted", got, err)
	}
}

// A lock handed to a waiter that gives up goes on to the next waiter; one
// handed to a waiter that never claims it is passed over after the window.
func TestHandoff_leaveAndWindowPassItOn(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	admin := cluster.Admin(t, 0)
	keys := keysOf("redlock:{h}")
	const window = 200 * time.Millisecond
	inOrder(t, n, keys, window, "holder", "w1", "w2", "w3")
	if _, head, err := n.Release(ctx, keys, "holder", "holder.1", 0, window); err != nil || head != node.Fingerprint("w1") {
		t.Fatalf("release: %q, %v", head, err)
	}
	if err := n.Leave(ctx, nil, keys, "w1", "w1", "notice", window); err != nil {
		t.Fatal(err)
	}
	if owner, _ := admin.HGet(ctx, keys.Lock, "owner").Result(); owner != "w2" {
		t.Fatalf("after w1 left, the lock is %q's, want w2's", owner)
	}
	time.Sleep(window + 50*time.Millisecond)
	if exists, _ := admin.Exists(ctx, keys.Lock).Result(); exists != 0 {
		t.Fatal("a handed lock outlived its window")
	}
	// w2 did not claim it in time and is off the queue: w3 is first now.
	got, err := n.AcquireQueued(ctx, nil, keys, "w3", "w3-2", time.Minute, fairWaiter(4, time.Minute), window)
	if err != nil || !got.Granted {
		t.Fatalf("w3 after the lapsed handoff: %+v, %v; want granted", got, err)
	}
}

// A lease's renewal on a node that handed the lock to its owner claims it
// there; its release on such a node passes it on.
func TestHandoff_renewClaimsReleasePassesOn(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	admin := cluster.Admin(t, 0)
	keys := keysOf("redlock:{r}")
	inOrder(t, n, keys, time.Second, "holder", "w1", "w2")
	if _, _, err := n.Release(ctx, keys, "holder", "holder.1", 0, time.Second); err != nil {
		t.Fatal(err)
	}
	// The lease of w1's second attempt (the claim round won elsewhere).
	renewed, err := n.Renew(ctx, []node.Renewal{{Keys: keys, Owner: "w1", Hold: "w1.2", TTL: time.Minute}})
	if err != nil || renewed[0] != node.Refreshed {
		t.Fatalf("renew on a lock handed to its owner: %v, %v", renewed, err)
	}
	if fields, _ := admin.HGetAll(ctx, keys.Lock).Result(); len(fields) != 2 || fields["w1.2"] != "1" {
		t.Fatalf("after the renewal: %v, want owner and the lease's hold only", fields)
	}
	if _, err := release(ctx, n, keys, "w1", "w1.2", 0); err != nil {
		t.Fatal(err)
	}
	// Handed to w2 now, naming w2.1 (the call that queued it). A release
	// of another hold of w2's (the undo of an attempt, sent again or
	// late) leaves it: w2 may have taken the lease from the notices.
	for _, tombstone := range []time.Duration{0, time.Minute} {
		if got, err := release(ctx, n, keys, "w2", "other", tombstone); err != nil || got != node.HoldAbsent {
			t.Fatalf("w2's release of another hold = %v, %v", got, err)
		}
		if owner, _ := admin.HGet(ctx, keys.Lock, "owner").Result(); owner != "w2" {
			t.Fatalf("after w2 released another hold, the lock is %q's, want still w2's", owner)
		}
	}
	// The release of the named hold (the lease taken from the notices)
	// frees it: it went to no one (nobody else waits).
	if got, err := release(ctx, n, keys, "w2", "w2.1", 0); err != nil || got != node.LockDeleted {
		t.Fatalf("w2's release of the named hold = %v, %v; want the lock deleted", got, err)
	}
	if exists, _ := admin.Exists(ctx, keys.Lock).Result(); exists != 0 {
		t.Fatal("a lock handed to an owner that released it stayed")
	}
}

// The undo of a failed attempt puts the waiter back in the queue with its
// ticket: the grant had taken it off this node's queue, and without its
// place the nodes would name different heads. Back at the head, it finds
// the lock free for its next attempt.
func TestQueue_releaseKeepingPlacePutsTheWaiterBack(t *testing.T) {
	n, cluster := oneNode(t)
	admin := cluster.Admin(t, 0)
	ctx := context.Background()
	keys := keysOf("redlock:{k}")
	const ttl = time.Minute
	if got, err := n.AcquireQueued(ctx, nil, keys, "w1", "w1-a", ttl, fairWaiter(100, time.Minute), time.Second); err != nil || !got.Granted {
		t.Fatalf("w1: %+v, %v", got, err)
	}
	if got, err := n.AcquireQueued(ctx, nil, keys, "w2", "w2-a", ttl, fairWaiter(200, time.Minute), time.Second); err != nil || got.Granted {
		t.Fatalf("w2: %+v, %v", got, err)
	}
	released, head, err := n.ReleaseKeepingPlace(ctx, keys, "w1", "w1-a", fairWaiter(100, time.Minute), time.Second)
	if err != nil || released != node.LockDeleted || head != "" {
		t.Fatalf("undo = %v, head %q, %v; want deleted, handed to no one (w1 heads again)", released, head, err)
	}
	queue, err := admin.ZRangeWithScores(ctx, keys.Queue, 0, -1).Result()
	if err != nil || len(queue) != 2 || queue[0].Member != "w1" || queue[0].Score != 100 || queue[1].Member != "w2" {
		t.Fatalf("queue after the undo: %v, %v; want w1 (100) then w2", queue, err)
	}
	if got, err := n.AcquireQueued(ctx, nil, keys, "w1", "w1-b", ttl, fairWaiter(100, time.Minute), time.Second); err != nil || !got.Granted {
		t.Fatalf("w1 again: %+v, %v", got, err)
	}
}

// A waiter's entry written by an older client (its channel only) is still
// handed the lock, for at most the window, with a notice that names no
// hold: a lease is never taken from it.
func TestHandoff_olderEntryGetsTheWindow(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	admin := cluster.Admin(t, 0)
	keys := keysOf("redlock:{o}")
	const window = 300 * time.Millisecond
	inOrder(t, n, keys, window, "holder", "w1")
	if err := admin.HSet(ctx, keys.Wake, "w1", "chan-old").Err(); err != nil {
		t.Fatal(err)
	}
	sub := cluster.Clients(t)[0].Subscribe(ctx, "chan-old")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if _, head, err := n.Release(ctx, keys, "holder", "holder.1", 0, window); err != nil || head != node.Fingerprint("w1") {
		t.Fatalf("release: %q, %v", head, err)
	}
	msg, err := sub.ReceiveMessage(ctx)
	if err != nil || msg.Payload != "holder.1 "+node.Fingerprint("w1") || node.ParseNotice(msg.Payload).Hold != "" {
		t.Fatalf("notice %+v, %v; want one naming no hold", msg, err)
	}
	if handed, _ := admin.HGet(ctx, keys.Lock, "handed").Result(); handed != "1" {
		t.Fatalf("handed = %q, want 1", handed)
	}
	if pttl, _ := admin.PTTL(ctx, keys.Lock).Result(); pttl <= 0 || pttl > window {
		t.Fatalf("handed for %v, want (0, %v]", pttl, window)
	}
	// Any release of w1's passes such a handing on, as before.
	if got, err := release(ctx, n, keys, "w1", "any", 0); err != nil || got != node.HoldAbsent {
		t.Fatalf("w1's release = %v, %v", got, err)
	}
	if exists, _ := admin.Exists(ctx, keys.Lock).Result(); exists != 0 {
		t.Fatal("an older handing stayed after its owner's release")
	}
}

// A handed lock lives min(span, heartbeat deadline) from the handing: the
// deadline set by the call the handing names, so at least span past that
// call's start when the span is the shorter.
func TestHandoff_handedForTheSpanOrTheDeadline(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	admin := cluster.Admin(t, 0)
	for _, c := range []struct {
		name           string
		span, lifetime time.Duration
		want           time.Duration
	}{
		{"span shorter", 2 * time.Second, time.Minute, 2 * time.Second},
		{"deadline sooner", time.Minute, 3 * time.Second, 3 * time.Second},
	} {
		keys := keysOf("redlock:{" + c.name + "}")
		if _, err := n.AcquireQueued(ctx, nil, keys, "holder", "h", time.Minute, fairWaiter(1, time.Minute), time.Second); err != nil {
			t.Fatal(err)
		}
		w := fairWaiter(2, c.lifetime)
		w.Span = c.span
		if got, err := n.AcquireQueued(ctx, nil, keys, "w", "w-1", time.Minute, w, time.Second); err != nil || got.Granted {
			t.Fatalf("%s: queue w: %+v, %v", c.name, got, err)
		}
		if _, err := release(ctx, n, keys, "holder", "h", 0); err != nil {
			t.Fatal(err)
		}
		pttl, _ := admin.PTTL(ctx, keys.Lock).Result()
		if pttl > c.want || pttl < c.want-500*time.Millisecond {
			t.Fatalf("%s: handed for %v, want about %v", c.name, pttl, c.want)
		}
	}
}

// A key handed to an owner naming an attempt hold ("<call>.<n>") is that
// owner's lease if it took it from the notices. A request of the same
// owner from another call (a re-entry into that lease) keeps the named
// hold beside its own; a later attempt of the same call claims it; an
// earlier one, arriving late, is refused; a leave by another call does
// not pass it on; ForceUnlock removes it as a hold.
func TestHandoff_handedKeyAndOtherCallsOfItsOwner(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	admin := cluster.Admin(t, 0)
	handed := func(name string) node.Keys {
		keys := keysOf("redlock:{" + name + "}")
		inOrder(t, n, keys, time.Minute, "holder", "w")
		if _, err := release(ctx, n, keys, "holder", "holder.1", 0); err != nil {
			t.Fatal(err)
		}
		if named, _ := admin.HGet(ctx, keys.Lock, "handed").Result(); named != "w.1" {
			t.Fatalf("%s: handed %q, want w.1", name, named)
		}
		return keys
	}
	fields := func(keys node.Keys) map[string]string {
		f, _ := admin.HGetAll(ctx, keys.Lock).Result()
		return f
	}
	w := fairWaiter(2, time.Minute)

	keys := handed("reentry")
	if got, err := n.AcquireQueued(ctx, nil, keys, "w", "inner.1", time.Minute, w, time.Second); err != nil || !got.Granted || got.Holds != 2 {
		t.Fatalf("re-entry by another call: %+v, %v; want granted, two holds", got, err)
	}
	if f := fields(keys); f["w.1"] != "1" || f["inner.1"] != "1" || f["handed"] != "" {
		t.Fatalf("after the re-entry: %v; want the named hold kept beside the new one", f)
	}
	if got, err := release(ctx, n, keys, "w", "inner.1", 0); err != nil || got != node.HoldDropped {
		t.Fatalf("inner release: %v, %v; want one hold removed, the lock still held", got, err)
	}
	if f := fields(keys); f["owner"] != "w" || f["w.1"] != "1" {
		t.Fatalf("after the inner release: %v; want still w's, hold w.1", f)
	}

	keys = handed("plain-reentry")
	if got, err := n.Acquire(ctx, nil, keys, "w", "inner.1", time.Minute); err != nil || !got.Granted || got.Holds != 2 {
		t.Fatalf("plain re-entry by another call: %+v, %v; want granted, two holds", got, err)
	}

	keys = handed("renewal")
	if renewed, err := n.Renew(ctx, []node.Renewal{{Keys: keys, Owner: "w", Hold: "inner.1", TTL: time.Minute}}); err != nil || renewed[0] != node.Refreshed {
		t.Fatalf("renewal by another call's lease: %v, %v", renewed, err)
	}
	if f := fields(keys); f["w.1"] != "1" || f["inner.1"] != "1" {
		t.Fatalf("after another call's renewal: %v; want both holds", f)
	}

	keys = handed("stale")
	if got, err := n.AcquireQueued(ctx, nil, keys, "w", "w.0", time.Minute, w, time.Second); err != nil || got.Granted {
		t.Fatalf("an earlier attempt arriving late: %+v, %v; want refused", got, err)
	}
	if f := fields(keys); f["handed"] != "w.1" || len(f) != 2 {
		t.Fatalf("after the late attempt: %v; want the handing unchanged", f)
	}

	keys = handed("leave")
	if err := n.Leave(ctx, nil, keys, "w", "inner", "notice", time.Second); err != nil {
		t.Fatal(err)
	}
	if f := fields(keys); f["handed"] != "w.1" {
		t.Fatalf("after another call's leave: %v; want the handing kept", f)
	}
	if err := n.Leave(ctx, nil, keys, "w", "w", "notice", time.Second); err != nil {
		t.Fatal(err)
	}
	if f := fields(keys); len(f) != 0 {
		t.Fatalf("after the call's own leave: %v; want passed on (no one waits: free)", f)
	}

	keys = handed("force")
	forced, err := n.ForceRelease(ctx, keys, time.Minute, time.Second, "notice")
	if err != nil || forced.Removed != 1 {
		t.Fatalf("ForceRelease of a handed key: %+v, %v; want its named hold removed", forced, err)
	}
	if renewed, err := n.Renew(ctx, []node.Renewal{{Keys: keys, Owner: "w", Hold: "w.1", TTL: time.Minute}}); err != nil || renewed[0] != node.Revoked {
		t.Fatalf("renewal of the forced hold: %v, %v; want revoked", renewed, err)
	}
}

// The leave after the release of one hold (LeaveAfter) takes the owner
// off the queue, but passes on a lock handed to it only when the handing
// names that very hold: the call may have gone on waiting, and a later
// attempt of it may hold the lock here, taken from the notices.
func TestLeaveAfter_passesOnOnlyAHandingOfThatHold(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	admin := cluster.Admin(t, 0)
	handedTo := func(name string, waiter string) node.Keys {
		keys := keysOf("redlock:{" + name + "}")
		inOrder(t, n, keys, time.Minute, "holder", waiter)
		if _, err := release(ctx, n, keys, "holder", "holder.1", 0); err != nil {
			t.Fatal(err)
		}
		if named, _ := admin.HGet(ctx, keys.Lock, "handed").Result(); named != waiter+".1" {
			t.Fatalf("%s: handed %q, want %s.1", name, named, waiter)
		}
		return keys
	}
	fields := func(keys node.Keys) map[string]string {
		f, _ := admin.HGetAll(ctx, keys.Lock).Result()
		return f
	}

	// Handed naming attempt 1 of call w; the leave after attempt 0's
	// release keeps it, where the call's leave would pass it on.
	keys := handedTo("other-attempt", "w")
	if err := n.LeaveAfter(ctx, keys, "w", "w.0", "notice", time.Second); err != nil {
		t.Fatal(err)
	}
	if f := fields(keys); f["owner"] != "w" || f["handed"] != "w.1" {
		t.Fatalf("after the leave of another attempt's hold: %v; want the handing kept", f)
	}
	if err := n.LeaveAfter(ctx, keys, "w", "w.1", "notice", time.Second); err != nil {
		t.Fatal(err)
	}
	if f := fields(keys); len(f) != 0 {
		t.Fatalf("after the leave of the named hold: %v; want passed on (no one waits: free)", f)
	}

	// A handing of an older client's ("1", naming no hold) goes on at a
	// call's leave, but not at the leave after one hold's release.
	keys = handedTo("older", "v")
	if err := admin.HSet(ctx, keys.Lock, "handed", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if err := n.LeaveAfter(ctx, keys, "v", "v.1", "notice", time.Second); err != nil {
		t.Fatal(err)
	}
	if f := fields(keys); f["handed"] != "1" {
		t.Fatalf("after the leave of one hold: %v; want the older handing kept", f)
	}
	if err := n.Leave(ctx, nil, keys, "v", "v", "notice", time.Second); err != nil {
		t.Fatal(err)
	}
	if f := fields(keys); len(f) != 0 {
		t.Fatalf("after the call's leave: %v; want the older handing passed on", f)
	}

	// Queued, and not handed: the leave takes it off the queue.
	keys = keysOf("redlock:{queued}")
	inOrder(t, n, keys, time.Minute, "holder", "w")
	if err := n.LeaveAfter(ctx, keys, "w", "w.0", "notice", time.Second); err != nil {
		t.Fatal(err)
	}
	if queued, _ := admin.ZRange(ctx, keys.Queue, 0, -1).Result(); len(queued) != 0 {
		t.Fatalf("queue after the leave: %v; want empty", queued)
	}
	if f := fields(keys); f["owner"] != "holder" {
		t.Fatalf("lock after the waiter's leave: %v; want the holder's still", f)
	}
}

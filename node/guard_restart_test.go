package node_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/redis/go-redis/v9"
)

// runID is the run_id of the node's process.
func runID(t *testing.T, admin *redis.Client) string {
	t.Helper()
	info, err := admin.Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return id
		}
	}
	t.Fatalf("no run_id in INFO server: %q", info)
	return ""
}

// replID is the replication id of the node's data (it changes on a
// restart and on a promotion).
func replID(t *testing.T, admin *redis.Client) string {
	t.Helper()
	info, err := admin.Info(context.Background(), "replication").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "master_replid:"); ok {
			return id
		}
	}
	t.Fatalf("no master_replid in INFO replication: %q", info)
	return ""
}

// shortenLongest sets the longest guard the marker records to a second,
// as on a node where no call asked a longer one.
func shortenLongest(t *testing.T, admin *redis.Client, marker string) {
	t.Helper()
	ctx := context.Background()
	value, err := admin.Get(ctx, marker).Result()
	fields := strings.Fields(value)
	if err != nil || len(fields) != 9 {
		t.Fatalf("marker %q, %v; want nine fields", value, err)
	}
	fields[3] = "1000"
	if err := admin.Set(ctx, marker, strings.Join(fields, " "), 0).Err(); err != nil {
		t.Fatal(err)
	}
}

// quarantineOf calls Acquire and returns its *Quarantine, failing the test
// on any other answer.
func quarantineOf(t *testing.T, n *node.Node, keys node.Keys, hold string) *node.Quarantine {
	t.Helper()
	got, err := n.Acquire(context.Background(), nil, keys, "other", hold, time.Minute)
	var q *node.Quarantine
	if !errors.As(err, &q) {
		t.Fatalf("Acquire = %+v, %v; want a *Quarantine", got, err)
	}
	return q
}

// within fails the test unless at is within slack of want.
func within(t *testing.T, what string, at, want time.Time, slack time.Duration) {
	t.Helper()
	if d := at.Sub(want); d < -slack || d > slack {
		t.Fatalf("%s %v, %v from %v; want within %v", what, at, d, want, slack)
	}
}

// A node without a marker and dropped nothing since it started (new, or
// restarted empty): its quarantine counts from its start, not from the
// first call that finds the marker missing, and it votes from then on.
func TestGuard_missingMarkerCountsFromTheStart(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	admin := cluster.Admin(t, 0)
	if err := cluster.Servers[0].Restart(false); err != nil { // empty, as after a crash
		t.Fatal(err)
	}
	restarted := time.Now()
	time.Sleep(1500 * time.Millisecond)
	keys := keysOf("redlock:{start}")
	keys.Guard = 4 * time.Second
	q := quarantineOf(t, n, keys, "h1")
	if q.Why != node.WhyNew || !strings.Contains(q.Error(), "redlock init") {
		t.Fatalf("quarantine %q (%s); want the rule for a node without a marker, naming the remedy", q.Why, q)
	}
	// The start is known to the second, rounded up: never before it.
	within(t, "since", q.Since, restarted.Add(500*time.Millisecond), 600*time.Millisecond)
	if q.Until.Sub(q.Since) != keys.Guard {
		t.Fatalf("quarantine %v..%v; want the guard from the start", q.Since, q.Until)
	}
	waitGranted(t, n, keys, q.Until)
	// The marker names the process that made it: that one needs no more
	// than the marker's own wait (a restart brings another).
	if marker, _ := admin.Get(ctx, keys.Marker).Result(); !strings.Contains(marker, " new "+replID(t, admin)+" 4000 ") || !strings.Contains(marker, " "+runID(t, admin)+" 0 ") {
		t.Fatalf("marker %q; want the start, the rule and the process", marker)
	}
}

// waitGranted polls Acquire until it is granted, and fails unless that
// happens within half a second of until.
func waitGranted(t *testing.T, n *node.Node, keys node.Keys, until time.Time) {
	t.Helper()
	for {
		got, err := n.Acquire(context.Background(), nil, keys, "o", "h-wait", time.Minute)
		if err == nil && got.Granted {
			within(t, "granted at", time.Now(), until, 500*time.Millisecond)
			return
		}
		if !errors.Is(err, node.ErrQuarantined) {
			t.Fatalf("Acquire = %+v, %v", got, err)
		}
		if time.Now().After(until.Add(time.Second)) {
			t.Fatalf("still quarantined at %v, past %v: %v", time.Now(), until, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A node up longer than the guard, whose marker is missing though nothing
// dropped its data (a node nobody declared): it votes at the first call.
func TestGuard_nodeUpLongerThanTheGuardVotesAtOnce(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	admin := cluster.Admin(t, 0)
	if err := admin.Del(ctx, "redlock:node").Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2500 * time.Millisecond)
	keys := keysOf("redlock:{up}")
	keys.Guard = time.Second
	if got, err := n.Acquire(ctx, nil, keys, "o", "h1", time.Minute); err != nil || !got.Granted {
		t.Fatalf("Acquire on a node up longer than the guard = %+v, %v", got, err)
	}
}

// A node restarted from a snapshot keeps its marker, but not the leases
// granted since the snapshot: it does not vote until its start + guard.
// With an append-only file, fsynced on every write or not, it waits too:
// the file may have been switched off at run time (CONFIG SET appendonly
// no) and loaded as it was then, which nothing in it shows.
func TestGuard_everyRestartWaitsAppendOnlyOrNot(t *testing.T) {
	for _, fsync := range []string{"", "always", "everysec"} {
		var args []string
		if fsync != "" {
			args = []string{"--appendonly", "yes", "--appendfsync", fsync}
		}
		cluster := redlocktest.Start(t, 1, args...)
		n := node.New(0, cluster.Addrs()[0], cluster.Clients(t)[0])
		t.Cleanup(n.Wait)
		ctx := context.Background()
		admin := cluster.Admin(t, 0)
		keys := keysOf("redlock:{snap}")
		keys.Guard = time.Minute
		if err := admin.Save(ctx).Err(); err != nil { // the snapshot: marker, no lease
			t.Fatal(err)
		}
		if got, err := n.Acquire(ctx, nil, keys, "a", "h1", time.Minute); err != nil || !got.Granted {
			t.Fatalf("appendfsync %q: Acquire by a = %+v, %v", fsync, got, err)
		}
		if err := cluster.Servers[0].Restart(true); err != nil {
			t.Fatal(err)
		}
		restarted := time.Now()
		got, err := n.Acquire(ctx, nil, keys, "b", "h2", time.Minute)
		var q *node.Quarantine
		if !errors.As(err, &q) || q.Why != node.WhyRestarted {
			t.Fatalf("appendfsync %q: Acquire by b = %+v, %v; want the restart rule", fsync, got, err)
		}
		within(t, "since", q.Since, restarted, 1100*time.Millisecond)
	}
}

// FLUSHALL on a node up longer than the guard: the marker is gone, and the
// quarantine counts from now; CONFIG RESETSTAT, which hides the flush from
// INFO, counts as one too.
func TestGuard_flushOnALongRunningNodeCountsFromNow(t *testing.T) {
	for _, reset := range []bool{false, true} {
		n, cluster := oneNode(t)
		ctx := context.Background()
		admin := cluster.Admin(t, 0)
		time.Sleep(2500 * time.Millisecond)
		keys := keysOf("redlock:{flush}")
		keys.Guard = time.Second
		if err := admin.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if reset {
			if err := admin.ConfigResetStat(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		flushed := time.Now()
		q := quarantineOf(t, n, keys, "h1")
		if q.Why != node.WhyFlushed {
			t.Fatalf("reset=%v: quarantine %q (%s); want the flush rule", reset, q.Why, q)
		}
		within(t, "since", q.Since, flushed, 300*time.Millisecond)
		waitGranted(t, n, keys, q.Until)
	}
}

// A user whose ACL refuses INFO and LASTSAVE: the node refuses to vote,
// naming the remedy, and writes nothing; with RiskNoInfo accepted a
// missing marker counts from now (the node cannot tell why it is missing).
func TestGuard_infoRefusedCountsFromNow(t *testing.T) {
	_, cluster := oneNode(t)
	ctx := context.Background()
	admin := cluster.Admin(t, 0)
	if err := admin.Do(ctx, "ACL", "SETUSER", "locker", "on", ">pw", "~*", "&*", "+@all", "-info", "-lastsave").Err(); err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(&redis.Options{Addr: cluster.Addrs()[0], Username: "locker", Password: "pw"})
	t.Cleanup(func() { _ = client.Close() })
	n := node.New(0, cluster.Addrs()[0], client)
	t.Cleanup(n.Wait)
	if err := admin.Del(ctx, "redlock:node").Err(); err != nil {
		t.Fatal(err)
	}
	keys := keysOf("redlock:{acl}")
	keys.Guard = time.Minute
	var blind *node.Unguarded
	if _, err := n.Acquire(ctx, nil, keys, "o", "h0", time.Minute); !errors.As(err, &blind) || blind.Why != "noinfo" ||
		!strings.Contains(err.Error(), "+info") || !errors.Is(err, node.ErrQuarantined) {
		t.Fatalf("Acquire without INFO = %v; want refused, naming the remedy", err)
	}
	if exists, err := admin.Exists(ctx, "redlock:node", keys.Lock).Result(); err != nil || exists != 0 {
		t.Fatalf("%d keys written by a refused call (%v); want none", exists, err)
	}
	keys.Risks = node.RiskNoInfo
	deleted := time.Now()
	q := quarantineOf(t, n, keys, "h1")
	if q.Why != node.WhyUnknown || !strings.Contains(q.Error(), "INFO") {
		t.Fatalf("quarantine %q (%s); want the rule for a node that cannot tell", q.Why, q)
	}
	within(t, "since", q.Since, deleted, 300*time.Millisecond)
}

// AOF switched on at run time after a restart from a snapshot does not
// make the node's data complete: it still waits out the restart rule.
func TestGuard_aofSwitchedOnAfterASnapshotRestartStillWaits(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	admin := cluster.Admin(t, 0)
	keys := keysOf("redlock:{aof}")
	keys.Guard = time.Minute
	if err := admin.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := n.Acquire(ctx, nil, keys, "a", "h1", time.Minute); err != nil || !got.Granted {
		t.Fatalf("Acquire by a = %+v, %v", got, err)
	}
	if err := cluster.Servers[0].Restart(true); err != nil {
		t.Fatal(err)
	}
	if err := admin.ConfigSet(ctx, "appendonly", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		info, _ := admin.Info(ctx, "persistence").Result()
		if strings.Contains(info, "aof_enabled:1") && strings.Contains(info, "aof_rewrite_in_progress:0") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("AOF not on: %s", info)
		}
	}
	if q := quarantineOf(t, n, keys, "h2"); q.Why != node.WhyRestarted {
		t.Fatalf("after AOF switched on: %s; want the restart rule", q)
	}
}

// A node restarted from a snapshot that holds a queued waiter (its
// heartbeat deadline still ahead) may have forgotten a lease granted after
// the snapshot: the guard keeps it from voting, and it must not hand the
// lock on either, for a waiter that hears notices from a quorum of nodes
// takes the lock from them (a notice counts as its node's vote). A
// release, a leave and a ForceRelease there free the lock as usual, but
// hand it to no one and tell no one; the waiter stays queued, refused
// until the node votes again. On a node that votes the same calls hand
// the lock to the waiter and tell it.
func TestGuard_nodeThatMayNotVoteHandsNothing(t *testing.T) {
	for _, restarted := range []bool{false, true} {
		n, cluster := oneNode(t)
		ctx := context.Background()
		admin := cluster.Admin(t, 0)
		const window = time.Minute
		lock := func(name string) node.Keys {
			keys := keysOf("redlock:{" + name + "}")
			keys.Guard = time.Minute
			return keys
		}
		channel := func(keys node.Keys, owner string) string { return keys.Lock + ":" + owner }
		queue := func(keys node.Keys, owner string, ticket int64) {
			w := node.Waiter{Ticket: ticket, Lifetime: time.Minute, Channel: channel(keys, owner), Fair: true, Span: window}
			if _, err := n.AcquireQueued(ctx, nil, keys, owner, owner+".1", time.Minute, w, window); err != nil {
				t.Fatalf("%s by %s: %v", keys.Lock, owner, err)
			}
		}
		// Each lock: holder holds it, w1 waits behind it (and w2 behind w1
		// for the leave).
		released, left, forced := lock("released"), lock("left"), lock("forced")
		all := []node.Keys{released, left, forced}
		for _, keys := range all {
			queue(keys, "holder", 1)
			queue(keys, "w1", 2)
		}
		queue(left, "w2", 3)
		if restarted {
			if err := admin.Save(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			if err := cluster.Servers[0].Restart(true); err != nil {
				t.Fatal(err)
			}
			if q := quarantineOf(t, n, released, "probe"); q.Why != node.WhyRestarted {
				t.Fatalf("after the restart: %s; want the restart rule", q)
			}
		}
		sub := admin.Subscribe(ctx, channel(released, "w1"), channel(left, "w1"), channel(forced, "w1"))
		for range all {
			if _, err := sub.Receive(ctx); err != nil {
				t.Fatal(err)
			}
		}

		rel, head, err := n.Release(ctx, released, "holder", "holder.1", 0, window)
		if want := map[bool]string{false: node.Fingerprint("w1"), true: ""}[restarted]; err != nil || rel != node.LockDeleted || head != want {
			t.Fatalf("restarted=%v: Release = %v, %q, %v; want the lock deleted, handed to %q", restarted, rel, head, err, want)
		}
		// The holder's key expired (the leases after the snapshot are
		// forgotten, this one's too); then w2 gives up its place.
		if err := admin.Del(ctx, left.Lock).Err(); err != nil {
			t.Fatal(err)
		}
		if err := n.Leave(ctx, nil, left, "w2", "w2", "notice-left", window); err != nil {
			t.Fatalf("restarted=%v: Leave: %v", restarted, err)
		}
		got, err := n.ForceRelease(ctx, forced, time.Minute, window, "notice-forced")
		if want := map[bool]string{false: node.Fingerprint("w1"), true: ""}[restarted]; err != nil || got.Removed != 1 || got.Next != want {
			t.Fatalf("restarted=%v: ForceRelease = %+v, %v; want one hold removed, handed to %q", restarted, got, err, want)
		}

		for _, keys := range all {
			owner, _ := admin.HGet(ctx, keys.Lock, "owner").Result()
			_, queued := admin.ZScore(ctx, keys.Queue, "w1").Result()
			switch {
			case !restarted && (owner != "w1" || queued == nil):
				t.Fatalf("voting node: %s owner %q, w1 queued %v; want handed to w1, off the queue", keys.Lock, owner, queued == nil)
			case restarted && (owner != "" || queued != nil):
				t.Fatalf("quarantined node: %s owner %q, w1 queued %v; want free, w1 still queued", keys.Lock, owner, queued == nil)
			}
		}
		notices := map[string]string{}
		for wait := time.After(300 * time.Millisecond); len(notices) < len(all); {
			select {
			case msg := <-sub.Channel():
				notices[msg.Channel] = msg.Payload
				continue
			case <-wait:
			}
			break
		}
		if err := sub.Close(); err != nil {
			t.Fatal(err)
		}
		if restarted {
			if len(notices) != 0 {
				t.Fatalf("quarantined node published %v; want no notice", notices)
			}
			// The waiter's own acquire is refused as any vote; once the
			// node votes (here with a guard of a second, not to wait a
			// minute) it takes the free lock: it heads the queue.
			if _, err := n.AcquireQueued(ctx, nil, released, "w1", "w1.2", time.Minute, fairWaiter(2, time.Minute), window); !errors.Is(err, node.ErrQuarantined) {
				t.Fatalf("w1's acquire on the quarantined node: %v; want ErrQuarantined", err)
			}
			short := released
			short.Guard = time.Second
			shortenLongest(t, admin, short.Marker)
			unlearned := node.New(0, cluster.Addrs()[0], admin) // n learned the minute from the marker
			t.Cleanup(unlearned.Wait)
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				got, err := unlearned.AcquireQueued(ctx, nil, short, "w1", "w1.3", time.Minute, fairWaiter(2, time.Minute), window)
				if errors.Is(err, node.ErrQuarantined) && time.Now().Before(deadline) {
					continue
				}
				if err != nil || !got.Granted {
					t.Fatalf("w1's acquire once the node votes: %+v, %v; want granted", got, err)
				}
				break
			}
			continue
		}
		for _, keys := range all {
			if notice := node.ParseNotice(notices[channel(keys, "w1")]); notice.Who != node.Fingerprint("w1") || notice.Hold != "w1.1" {
				t.Fatalf("voting node: notice for %s %+v (all: %v); want w1's, naming w1.1", keys.Lock, notice, notices)
			}
		}
	}
}

package node_test

// The restart guard, second pass (issue 40): each test is a row of the
// issue's table, a way data comes back without its leases (or moves)
// while a marker that says "in order" survives or is brought back. A
// holds x; b asks for x while a's lease lives; each test asserts the
// behaviour the fix gives (a refusal, never a grant) and failed on the
// guard before it (guard.lua at fd73898), on Redis and on Valkey.

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/quorumlock/redlock/redlocktest/faultproxy"
)

// Row 1: an append-only file fsynced on every write, switched off at run
// time (CONFIG SET appendonly no); a's grant is not in the file; the node
// is killed and restarts with appendonly yes from its command line,
// loading the file as it was when switched off. The Client read
// appendfsync always, which used to exempt the restart: no more, every
// restart waits the guard from the start.
func TestGuard2_row1_aofSwitchedOffThenRestartedWaits(t *testing.T) {
	n, cluster, admin := g2Start(t, "--appendonly", "yes", "--appendfsync", "always")
	ctx := context.Background()
	if err := n.Warm(ctx, node.ClockCheck{}); err != nil { // reads appendfsync always
		t.Fatal(err)
	}
	keys := g2Keys("aofoff", 3*time.Second)
	if err := admin.ConfigSet(ctx, "appendonly", "no").Err(); err != nil {
		t.Fatal(err)
	}
	leaseEnd := g2Grant(t, n, keys, "a", 3*time.Second)      // not in the file
	if err := cluster.Servers[0].Restart(true); err != nil { // kill -9; appendonly yes from the command line
		t.Fatal(err)
	}
	restarted := time.Now()
	if g2Info(t, admin, "persistence", "aof_enabled") != "1" || admin.Exists(ctx, "redlock:node").Val() != 1 {
		t.Fatal("the restarted node did not load its append-only file with the marker: the test no longer shows the case")
	}
	q := g2Refused(t, n, keys, leaseEnd, node.WhyRestarted)
	// Until is start + guard; the start is known to the second.
	within(t, "until", q.Until, restarted.Add(keys.Guard), 1100*time.Millisecond)
}

// Row 2: a replica keeping an append-only file fsynced on every write
// misses a's grant, then serves as a primary after a restart without
// replicaof: (noOne) REPLICAOF NO ONE, as Sentinel runs (its CONFIG
// REWRITE drops replicaof), then a restart before any lock call, which
// erases the count of the promotion; (linkCut) its link is cut and it
// restarts without replicaof (as when it takes its dead primary's
// address). Either way it must not vote: a's lease may live.
func TestGuard2_row2_replicaThatMissedAGrantRestartedAsPrimary(t *testing.T) {
	for _, variant := range []string{"noOne", "linkCut"} {
		t.Run(variant, func(t *testing.T) {
			primary, _, primaryAdmin := g2Start(t)
			ctx := context.Background()
			keys := g2Keys("promoted", 3*time.Second)
			g2Grant(t, primary, g2Keys("warm", 3*time.Second), "w", time.Second) // the node votes
			if err := primaryAdmin.ConfigSet(ctx, "repl-diskless-sync-delay", "0").Err(); err != nil {
				t.Fatal(err)
			}
			replica, replicaAdmin := g2StartServer(t, "replica", nil, "--appendonly", "yes", "--appendfsync", "always")
			at := primaryAdmin.Options().Addr
			var link *faultproxy.Proxy
			if variant == "linkCut" {
				var err error
				if link, err = faultproxy.New(at); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = link.Close() })
				at = link.Addr()
			}
			host, port, _ := strings.Cut(at, ":")
			if err := replicaAdmin.Do(ctx, "REPLICAOF", host, port).Err(); err != nil { // at run time: not in its config
				t.Fatal(err)
			}
			g2WaitSynced(t, replicaAdmin)
			g2WaitAOF(t, replicaAdmin) // the sync's data (the marker) is in its file
			if variant == "noOne" {
				if err := replicaAdmin.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
					t.Fatal(err)
				}
			} else {
				link.Cut()
			}
			leaseEnd := g2Grant(t, primary, keys, "a", 3*time.Second) // the replica misses it
			if err := replica.Restart(true); err != nil {             // no replicaof in its config
				t.Fatal(err)
			}
			if role := g2Info(t, replicaAdmin, "replication", "role"); role != "master" ||
				replicaAdmin.Exists(ctx, "redlock:node").Val() != 1 {
				t.Fatalf("restarted replica: role %q, marker kept %v; want a primary with its file's marker",
					role, replicaAdmin.Exists(ctx, "redlock:node").Val() == 1)
			}
			promoted := node.New(1, replica.Addr(), g2Client(t, replica.Addr(), 0))
			t.Cleanup(promoted.Wait)
			if err := promoted.Warm(ctx, node.ClockCheck{}); err != nil { // reads appendfsync always
				t.Fatal(err)
			}
			g2Refused(t, promoted, keys, leaseEnd, node.WhyRestarted, node.WhyFailover)
		})
	}
}

// Row 3a: a key-level backup (DUMP of every key, the marker among them)
// restored into the running node (FLUSHALL, then RESTORE of every key)
// while a's lease, granted after the backup, lives: the marker comes back
// "in order", a's key does not.
func TestGuard2_row3a_keyBackupRestoredAfterFlushall(t *testing.T) {
	n, _, admin := g2Start(t)
	ctx := context.Background()
	keys := g2Keys("backup", 3*time.Second)
	g2Grant(t, n, g2Keys("warm", 3*time.Second), "w", time.Second) // the node votes: the backup's marker says so
	admin.Set(ctx, "tenant:1", "v", 0)
	backup := g2Backup(t, admin)
	leaseEnd := g2Grant(t, n, keys, "a", 3*time.Second)
	// The guard's hot path trusts a marker for up to a second after the
	// vote it records (guard.lua refreshes it once a second while the
	// node votes): past that second the restored marker is judged on the
	// slow path, which is what this row is about. The backup's marker
	// records the warm-up's vote.
	time.Sleep(1100 * time.Millisecond)
	if err := admin.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	g2Restore(t, admin, backup)
	g2Refused(t, n, keys, leaseEnd, node.WhyFlushed)
}

// Row 3b: a key-level backup of the node's previous process restored
// (FLUSHALL, RESTORE) into the node, up longer than the guard, while a's
// lease, granted by the new process, lives.
func TestGuard2_row3b_previousProcessBackupRestored(t *testing.T) {
	n, cluster, admin := g2Start(t)
	ctx := context.Background()
	keys := g2Keys("previous", 2*time.Second)
	g2Grant(t, n, g2Keys("warm", 2*time.Second), "w", time.Second)
	backup := g2Backup(t, admin)
	if err := cluster.Servers[0].Restart(false); err != nil { // a crash: the data is gone
		t.Fatal(err)
	}
	// The new process has no marker: it votes from its start + guard. Up
	// longer than that (the start is known to the second, rounded up), it
	// grants a's lease at once.
	time.Sleep(keys.Guard + 1500*time.Millisecond)
	leaseEnd := g2Grant(t, n, keys, "a", 3*time.Second)
	// The restored marker records the previous process's last vote, more
	// than a second ago: the hot path does not trust it (see row 3a).
	if err := admin.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	g2Restore(t, admin, backup)
	g2Refused(t, n, keys, leaseEnd, node.WhyFlushed)
}

// Row 3c: a lock call between the FLUSHALL (which stamps a quarantine in
// the marker) and the RESTORE (which overwrites that marker with the
// backup's, "in order").
func TestGuard2_row3c_lockCallBetweenFlushAndRestore(t *testing.T) {
	n, _, admin := g2Start(t)
	ctx := context.Background()
	keys := g2Keys("between", 3*time.Second)
	g2Grant(t, n, g2Keys("warm", 3*time.Second), "w", time.Second)
	backup := g2Backup(t, admin)
	leaseEnd := g2Grant(t, n, keys, "a", 3*time.Second)
	// Past the second in which the hot path trusts the backup's marker
	// (its vote is the warm-up's): see row 3a.
	time.Sleep(1100 * time.Millisecond)
	if err := admin.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	// A lock call now sees the flush and stamps it in the marker.
	if _, err := n.Acquire(ctx, nil, g2Keys("other", 3*time.Second), "c", "c.1", time.Second); !errors.Is(err, node.ErrQuarantined) {
		t.Fatalf("Acquire after FLUSHALL: %v; want quarantined (the test's premise)", err)
	}
	g2Restore(t, admin, backup) // overwrites the stamped marker
	g2Refused(t, n, keys, leaseEnd, node.WhyFlushed)
}

// Row 4: SWAPDB 0 1 where db 1 was declared (`redlock init`, node.Declare)
// by another application: db 0 now holds a marker "in order" and none of
// a's keys.
func TestGuard2_row4_swapdbWithADeclaredDB(t *testing.T) {
	n, cluster, admin := g2Start(t)
	ctx := context.Background()
	if err := node.Declare(ctx, g2Client(t, cluster.Servers[0].Addr(), 1), "redlock:"); err != nil {
		t.Fatalf("declaring db 1: %v", err)
	}
	keys := g2Keys("swapped", 3*time.Second)
	leaseEnd := g2Grant(t, n, keys, "a", 3*time.Second)
	if err := admin.Do(ctx, "SWAPDB", 0, 1).Err(); err != nil {
		t.Fatal(err)
	}
	g2Refused(t, n, keys, leaseEnd, node.WhyFlushed)
}

// Row 5: DEBUG RELOAD NOSAVE (enable-debug-command yes) loads a snapshot
// taken before a's grant into the running process.
func TestGuard2_row5_debugReloadOfAnOlderSnapshot(t *testing.T) {
	n, _, admin := g2Start(t, "--enable-debug-command", "yes")
	ctx := context.Background()
	keys := g2Keys("reload", 3*time.Second)
	g2Grant(t, n, g2Keys("warm", 3*time.Second), "w", time.Second)
	if err := admin.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	leaseEnd := g2Grant(t, n, keys, "a", 3*time.Second)
	// Past the second in which the hot path trusts the snapshot's marker
	// (its vote is the warm-up's): see row 3a.
	time.Sleep(1100 * time.Millisecond)
	if err := admin.Do(ctx, "DEBUG", "RELOAD", "NOSAVE").Err(); err != nil {
		t.Fatal(err)
	}
	if admin.Exists(ctx, keys.Lock).Val() != 0 {
		t.Fatal("a's key survived DEBUG RELOAD NOSAVE: the test no longer shows the case")
	}
	g2Refused(t, n, keys, leaseEnd, node.WhyFlushed)
}

// Row 8: the node votes with its clock an hour ahead (the marker records
// a vote an hour from now), the clock is stepped back, then an evicting
// policy set at run time evicts a's key. A marker's vote in the future of
// the node's clock is a clock step, to be judged again: the node then
// sees the evicting policy and refuses as unguarded, not "voted within
// the second".
func TestGuard2_row8_clockSteppedBackThenEviction(t *testing.T) {
	clock, env := g2SteppedClock(t, time.Hour)
	server, admin := g2StartServer(t, "ahead", env)
	ctx := context.Background()
	if err := node.Declare(ctx, admin, "redlock:"); err != nil { // as redisproc does for a new node
		t.Fatal(err)
	}
	g2ClockAt(t, admin, time.Hour)
	n := node.New(0, server.Addr(), g2Client(t, server.Addr(), 0))
	t.Cleanup(n.Wait)
	keys := g2Keys("stepped", 3*time.Second)
	leaseEnd := g2Grant(t, n, keys, "a", 3*time.Second) // the marker records a vote an hour ahead
	clock.step(t, 0)
	g2ClockAt(t, admin, 0)
	g2Evict(t, admin, keys.Lock)
	// Room to write again, the policy still evicting: b's script runs.
	if err := admin.ConfigSet(ctx, "maxmemory", strconv.Itoa(256<<20)).Err(); err != nil {
		t.Fatal(err)
	}
	asked := time.Now()
	got, err := n.Acquire(ctx, nil, keys, "b", "b.1", time.Minute)
	var u *node.Unguarded
	switch {
	case !asked.Before(leaseEnd):
		t.Fatalf("the test is too slow: a's lease ended at %v, before b asked (%v)", leaseEnd, asked)
	case err == nil && got.Granted:
		t.Fatalf("Acquire of %s by b = %+v, %v: GRANTED while a's lease lives %v more (its key evicted): two owners; "+
			"want a *node.Unguarded (Why evicts)", keys.Lock, got, err, leaseEnd.Sub(asked).Round(time.Millisecond))
	case !errors.As(err, &u) || u.Why != "evicts" || !errors.Is(err, node.ErrUnguarded):
		t.Fatalf("Acquire of %s by b = %+v, %v; want a *node.Unguarded (Why evicts)", keys.Lock, got, err)
	}
}

// Row 9: an evicting policy set at run time evicts a's key and is set
// back to noeviction; before any lock call sees the eviction the node's
// first replica attaches (master_replid changes, master_replid2 stays
// zero), the case in which the guard restamps the marker its process
// stamped: the eviction must be counted then too.
func TestGuard2_row9_evictionThenFirstReplica(t *testing.T) {
	n, _, admin := g2Start(t)
	ctx := context.Background()
	keys := g2Keys("evicted", 3*time.Second)
	leaseEnd := g2Grant(t, n, keys, "a", 3*time.Second)
	g2Evict(t, admin, keys.Lock)
	for _, kv := range [][2]string{{"maxmemory", "0"}, {"maxmemory-policy", "noeviction"}} {
		if err := admin.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	before := g2Info(t, admin, "replication", "master_replid")
	redlocktest.StartReplica(t, admin)
	if after, replid2 := g2Info(t, admin, "replication", "master_replid"), g2Info(t, admin, "replication", "master_replid2"); after == before ||
		strings.Trim(replid2, "0") != "" {
		t.Fatalf("master_replid %s -> %s, master_replid2 %s; want a new id and replid2 zero: the test no longer shows the case",
			before, after, replid2)
	}
	g2Refused(t, n, keys, leaseEnd, node.WhyFlushed)
}

// Row 11: a replica started with replica-read-only no takes writes, and a
// full resync drops them: whatever its marker says, a node whose role is
// not master never votes (a new Unguarded reason, "replica"). Its primary
// votes as before.
func TestGuard2_row11_writableReplicaNeverVotes(t *testing.T) {
	primary, _, primaryAdmin := g2Start(t)
	ctx := context.Background()
	g2Grant(t, primary, g2Keys("warm", 3*time.Second), "w", time.Second)
	if err := primaryAdmin.ConfigSet(ctx, "repl-diskless-sync-delay", "0").Err(); err != nil {
		t.Fatal(err)
	}
	_, port, _ := strings.Cut(primaryAdmin.Options().Addr, ":")
	replica, replicaAdmin := g2StartServer(t, "replica", nil, "--replicaof", "127.0.0.1", port, "--replica-read-only", "no")
	g2WaitSynced(t, replicaAdmin)
	// The primary votes after its first replica attached: it restamps its
	// marker with the new replication id, which the replica shares.
	g2Grant(t, primary, g2Keys("warm2", 3*time.Second), "w", time.Second)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		want, _ := primaryAdmin.Get(ctx, "redlock:node").Result()
		marker, _ := replicaAdmin.Get(ctx, "redlock:node").Result()
		replid := g2Info(t, replicaAdmin, "replication", "master_replid")
		if marker == want && strings.Contains(marker, " "+replid+" ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica's marker %q (the primary's %q) is not stamped with the replication id it shares (%s): "+
				"the test no longer shows the case", marker, want, replid)
		}
	}
	n := node.New(1, replica.Addr(), g2Client(t, replica.Addr(), 0))
	t.Cleanup(n.Wait)
	keys := g2Keys("replica", 3*time.Second)
	got, err := n.Acquire(ctx, nil, keys, "a", "a.1", 3*time.Second)
	var u *node.Unguarded
	switch {
	case err == nil && got.Granted:
		t.Fatalf("Acquire on a writable replica = %+v, %v: GRANTED (a full resync drops it); want a *node.Unguarded (Why replica)",
			got, err)
	case !errors.Is(err, node.ErrUnguarded) || !errors.As(err, &u) || u.Why != "replica":
		t.Fatalf("Acquire on a writable replica = %+v, %v; want a *node.Unguarded (Why replica)", got, err)
	}
	g2Grant(t, primary, keys, "a", 3*time.Second)
}

// Row L1: a node restarted with its clock an hour ahead stamps its
// restart quarantine (since = its start, an hour ahead); then the clock
// is stepped back to the real time. A marker's since in the future of the
// node's clock is a clock step, judged again: the node votes within about
// the guard, not in an hour.
func TestGuard2_rowL1_quarantineStampedAheadIsRejudged(t *testing.T) {
	clock, env := g2SteppedClock(t, 0)
	server, admin := g2StartServer(t, "ahead", env)
	ctx := context.Background()
	if err := node.Declare(ctx, admin, "redlock:"); err != nil {
		t.Fatal(err)
	}
	n := node.New(0, server.Addr(), g2Client(t, server.Addr(), 0))
	t.Cleanup(n.Wait)
	keys := g2Keys("ahead", 3*time.Second)
	g2Grant(t, n, keys, "a", time.Second)
	if err := admin.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	clock.step(t, time.Hour)
	if err := server.Restart(true); err != nil { // from the snapshot, the clock an hour ahead
		t.Fatal(err)
	}
	g2ClockAt(t, admin, time.Hour)
	got, err := n.Acquire(ctx, nil, keys, "b", "b.1", time.Second)
	var q *node.Quarantine
	if !errors.As(err, &q) || q.Until.Before(time.Now().Add(50*time.Minute)) {
		t.Fatalf("Acquire after the restart = %+v, %v; want the restart quarantine, until an hour ahead (the test's premise)", got, err)
	}
	clock.step(t, 0)
	g2ClockAt(t, admin, 0)
	asked := time.Now()
	got, err = n.Acquire(ctx, nil, keys, "b", "b.2", time.Second)
	switch {
	case err == nil && got.Granted:
		// Granted at once: the restart was less than the guard ago.
		t.Fatalf("Acquire after the clock stepped back = %+v; want quarantined until about the guard from now", got)
	case !errors.As(err, &q):
		t.Fatalf("Acquire after the clock stepped back = %+v, %v; want a *node.Quarantine", got, err)
	case q.Until.After(asked.Add(keys.Guard + 1500*time.Millisecond)):
		t.Fatalf("quarantined until %v, %v from now (%s); want within about the guard (%v) of now: the stamp of the clock "+
			"an hour ahead is never judged again", q.Until, q.Until.Sub(asked).Round(time.Second), q.Why, keys.Guard)
	}
}

// Row P: a Redis Cluster shard up longer than the guard, whose slot
// receives keys by MIGRATE (which runs RESTORE-ASKING on the target), here
// from another cluster, without the slot's marker: the first lock call on
// that slot must wait the guard (Why cluster). guard.lua lists
// 'restore-asking' as a Lua pattern, where '-' is a quantifier: the count
// never matches, and the shard voted at once.
func TestGuard2_rowP_restoreAskingCountsAsASlotThatCame(t *testing.T) {
	rc := redlocktest.StartRedisCluster(t, 2)
	ctx := context.Background()
	const tag = "p"
	keys := g2Keys(tag, 2*time.Second)
	slot, err := rc.Admin(t, 0).ClusterKeySlot(ctx, keys.Lock).Result()
	if err != nil {
		t.Fatal(err)
	}
	target := rc.ShardOf(int(slot))
	// A lock of another slot of the same shard: the control.
	var control node.Keys
	for i := 0; control.Lock == ""; i++ {
		k := g2Keys("c"+strconv.Itoa(i), keys.Guard)
		if s, _ := rc.Admin(t, 0).ClusterKeySlot(ctx, k.Lock).Result(); s != slot && rc.ShardOf(int(s)) == target {
			control = k
		}
	}
	// A restart clears the count of the CLUSTER ADDSLOTSRANGE that made
	// the cluster (nodes.conf keeps the shard's slots).
	if err := rc.Shards[target].Restart(false); err != nil {
		t.Fatal(err)
	}
	rc.WaitOK(t)
	n := node.New(0, rc.Addrs()[0], rc.Client(t))
	t.Cleanup(n.Wait)
	// The shard votes for a slot of its own once up longer than the guard.
	for deadline := time.Now().Add(keys.Guard + 4*time.Second); ; time.Sleep(100 * time.Millisecond) {
		got, err := n.Acquire(ctx, nil, control, "c", "c.1", time.Second)
		if err == nil && got.Granted {
			break
		}
		if !errors.Is(err, node.ErrQuarantined) || time.Now().After(deadline) {
			t.Fatalf("Acquire on the control slot = %+v, %v; want granted once the shard is up longer than the guard", got, err)
		}
	}
	// Keys of the slot migrate in from elsewhere (another cluster: a
	// cluster node's MIGRATE sends RESTORE-ASKING), without the marker.
	source := redlocktest.StartRedisCluster(t, 1).Admin(t, 0)
	data := "{" + tag + "}:data"
	if err := source.Set(ctx, data, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := source.Do(ctx, "MIGRATE", "127.0.0.1", rc.Shards[target].Port(), "", 0, 5000, "KEYS", data).Err(); err != nil {
		t.Fatal(err)
	}
	targetAdmin := rc.Admin(t, target)
	stats, _ := targetAdmin.Info(ctx, "commandstats").Result()
	if !strings.Contains(stats, "cmdstat_restore-asking:calls=1") || targetAdmin.Exists(ctx, data).Val() != 1 {
		t.Fatalf("the target did not count one RESTORE-ASKING, or lacks the key: %s", stats)
	}
	asked := time.Now()
	got, err := n.Acquire(ctx, nil, keys, "b", "b.1", time.Second)
	var q *node.Quarantine
	switch {
	case err == nil && got.Granted:
		t.Fatalf("first Acquire on the slot migrated in = %+v, %v: GRANTED; want a *node.Quarantine (Why cluster) "+
			"from now: the slot's leases may live elsewhere", got, err)
	case !errors.As(err, &q) || q.Why != node.WhyCluster:
		t.Fatalf("first Acquire on the slot migrated in = %+v, %v; want a *node.Quarantine (Why cluster)", got, err)
	}
	within(t, "since", q.Since, asked, time.Second)
}

// Row 7: a node restarts from its snapshot with its clock 120 s behind (a
// clock read from the RTC before NTP), then the clock is stepped forward
// before any call. Redis's uptime follows the wall clock, so the start
// looks 120 s older; the snapshot's marker, stamped by the earlier process
// after that apparent start, gives the step away: the restart counts from
// now.
func TestGuard2_row7_clockSteppedForwardAfterTheStart(t *testing.T) {
	clock, env := g2SteppedClock(t, 0)
	server, admin := g2StartServer(t, "behind", env)
	ctx := context.Background()
	if err := node.Declare(ctx, admin, "redlock:"); err != nil {
		t.Fatal(err)
	}
	n := node.New(0, server.Addr(), g2Client(t, server.Addr(), 0))
	t.Cleanup(n.Wait)
	keys := g2Keys("behind", 3*time.Second)
	g2Grant(t, n, g2Keys("warm", keys.Guard), "w", time.Second) // a vote the snapshot records
	if err := admin.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	leaseEnd := g2Grant(t, n, keys, "a", keys.Guard) // not in the snapshot
	clock.step(t, -120*time.Second)
	if err := server.Restart(true); err != nil {
		t.Fatal(err)
	}
	clock.step(t, 0)
	g2ClockAt(t, admin, 0)
	asked := time.Now()
	q := g2Refused(t, n, keys, leaseEnd, node.WhyRestarted)
	within(t, "since", q.Since, asked, time.Second)
}

// Row 4 with the other application busy: it voted in db 1 within the
// second before the swap, so a marker it stamped would pass the hot path.
// Each database names its own marker, so db 0 finds none after the swap.
func TestGuard2_row4_swapdbWithABusyDB(t *testing.T) {
	n, cluster, admin := g2Start(t)
	ctx := context.Background()
	other := g2Client(t, cluster.Servers[0].Addr(), 1)
	if err := node.Declare(ctx, other, "redlock:"); err != nil {
		t.Fatalf("declaring db 1: %v", err)
	}
	busy := node.New(1, cluster.Servers[0].Addr(), other)
	t.Cleanup(busy.Wait)
	keys := g2Keys("swapped", 3*time.Second)
	leaseEnd := g2Grant(t, n, keys, "a", 3*time.Second)
	g2Grant(t, busy, g2Keys("busy", keys.Guard), "other", time.Second) // db 1's marker voted now
	if err := admin.Do(ctx, "SWAPDB", 0, 1).Err(); err != nil {
		t.Fatal(err)
	}
	g2Refused(t, n, keys, leaseEnd, node.WhyFlushed)
}

package node_test

// Helpers of guard_second_test.go (issue 40, the restart guard's second
// pass): each test there starts real redis-server (or valkey-server)
// processes with the repository's harness and breaks them as an operator
// or a platform does.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/quorumlock/redlock/redlocktest/redisproc"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// g2Start starts one declared node with args and returns it, with a Node
// on a Client as users make them and an admin client.
func g2Start(t *testing.T, args ...string) (*node.Node, *redlocktest.Nodes, *redis.Client) {
	t.Helper()
	cluster := redlocktest.Start(t, 1, args...)
	n := node.New(0, cluster.Addrs()[0], cluster.Clients(t)[0])
	t.Cleanup(n.Wait)
	return n, cluster, cluster.Admin(t, 0)
}

// g2Client is a plain client of addr (2 s timeouts, no retries), closed
// at cleanup.
func g2Client(t *testing.T, addr string, db int) *redis.Client {
	t.Helper()
	client := redis.NewClient(&redis.Options{Addr: addr, DB: db, DialTimeout: 2 * time.Second,
		ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, MaxRetries: -1,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// g2Keys is the keys of lock name with the given guard.
func g2Keys(name string, guard time.Duration) node.Keys {
	keys := keysOf("redlock:{" + name + "}")
	keys.Guard = guard
	return keys
}

// g2Grant has owner take the lock at keys for ttl, failing the test unless
// the node grants it, and returns when the lease surely ends (the call's
// start + ttl: the lease is valid until then).
func g2Grant(t *testing.T, n *node.Node, keys node.Keys, owner string, ttl time.Duration) time.Time {
	t.Helper()
	start := time.Now()
	got, err := n.Acquire(context.Background(), nil, keys, owner, owner+".1", ttl)
	if err != nil || !got.Granted {
		t.Fatalf("Acquire of %s by %s = %+v, %v; want granted", keys.Lock, owner, got, err)
	}
	return start.Add(ttl)
}

// g2Refused has b ask for the lock at keys while a's lease (ending at
// leaseEnd) lives, and fails the test unless the node refuses with a
// *node.Quarantine whose Why is one of whys. A grant is two owners.
func g2Refused(t *testing.T, n *node.Node, keys node.Keys, leaseEnd time.Time, whys ...string) *node.Quarantine {
	t.Helper()
	asked := time.Now()
	if !asked.Before(leaseEnd) {
		t.Fatalf("the test is too slow: a's lease ended at %v, before b asks (%v)", leaseEnd, asked)
	}
	got, err := n.Acquire(context.Background(), nil, keys, "b", "b.1", time.Minute)
	var q *node.Quarantine
	switch {
	case err == nil && got.Granted:
		t.Fatalf("Acquire of %s by b = %+v, %v: GRANTED while a's lease lives %v more: two owners; "+
			"want refused, a *node.Quarantine (Why %s)", keys.Lock, got, err, leaseEnd.Sub(asked).Round(time.Millisecond),
			strings.Join(whys, " or "))
	case !errors.As(err, &q):
		t.Fatalf("Acquire of %s by b = %+v, %v; want a *node.Quarantine (Why %s)", keys.Lock, got, err, strings.Join(whys, " or "))
	case !slices.Contains(whys, q.Why):
		t.Fatalf("Acquire of %s by b: quarantined with Why %q (%v); want Why %s", keys.Lock, q.Why, q, strings.Join(whys, " or "))
	case !errors.Is(err, node.ErrQuarantined):
		t.Fatalf("Acquire of %s by b: %v does not match ErrQuarantined", keys.Lock, err)
	}
	return q
}

// g2Info is a field of the node's INFO section ("" when absent).
func g2Info(t *testing.T, admin *redis.Client, section, field string) string {
	t.Helper()
	value, _ := infoValue(t, admin, section, field)
	return value
}

// infoValue is a field of the node's INFO section, and whether it is there.
func infoValue(t *testing.T, admin *redis.Client, section, field string) (string, bool) {
	t.Helper()
	info, err := admin.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if value, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return value, true
		}
	}
	return "", false
}

// g2Dumped is one key of a key-level backup: DUMP's payload and its TTL
// (0: none), as a backup tool keeps them.
type g2Dumped struct {
	payload string
	ttl     time.Duration
}

// g2Backup DUMPs every key of the node's db, the marker among them.
func g2Backup(t *testing.T, admin *redis.Client) map[string]g2Dumped {
	t.Helper()
	ctx := context.Background()
	keys, err := admin.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	backup := map[string]g2Dumped{}
	for _, key := range keys {
		payload, err := admin.Dump(ctx, key).Result()
		if err != nil {
			t.Fatalf("DUMP %s: %v", key, err)
		}
		ttl, err := admin.PTTL(ctx, key).Result()
		if err != nil {
			t.Fatalf("PTTL %s: %v", key, err)
		}
		backup[key] = g2Dumped{payload: payload, ttl: max(ttl, 0)}
	}
	if _, ok := backup["redlock:node"]; !ok {
		t.Fatalf("backup of %v holds no marker: the test no longer shows the case", keys)
	}
	return backup
}

// g2Restore RESTOREs every key of backup into the running node (REPLACE:
// an existing key is overwritten, as a restore tool does).
func g2Restore(t *testing.T, admin *redis.Client, backup map[string]g2Dumped) {
	t.Helper()
	ctx := context.Background()
	for key, dumped := range backup {
		if err := admin.RestoreReplace(ctx, key, dumped.ttl, dumped.payload).Err(); err != nil {
			t.Fatalf("RESTORE %s: %v", key, err)
		}
	}
}

// g2Evict sets an evicting policy at run time (volatile-ttl: only keys
// with a TTL, such as a lock's, may go) and a maxmemory just above the
// memory in use, and writes tenant keys without a TTL until key is
// evicted. It leaves the policy and maxmemory as they are then.
func g2Evict(t *testing.T, admin *redis.Client, key string) {
	t.Helper()
	ctx := context.Background()
	used, err := strconv.Atoi(g2Info(t, admin, "memory", "used_memory"))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{{"maxmemory-policy", "volatile-ttl"}, {"maxmemory", strconv.Itoa(used + 200_000)}} {
		if err := admin.ConfigSet(ctx, kv[0], kv[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; admin.Exists(ctx, key).Val() == 1; i++ {
		if i > 20_000 {
			t.Fatalf("%s was never evicted", key)
		}
		admin.Set(ctx, "tenant:"+strconv.Itoa(i), strings.Repeat("x", 1000), 0) // OOM once full: fine
	}
	if evicted := g2Info(t, admin, "stats", "evicted_keys"); evicted == "0" {
		t.Fatalf("%s is gone but evicted_keys is 0", key)
	}
}

// g2WaitAOF waits until the node has no AOF rewrite running or scheduled
// and is not loading, so that its append-only file holds its data.
func g2WaitAOF(t *testing.T, admin *redis.Client) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if g2Info(t, admin, "persistence", "aof_enabled") == "1" &&
			g2Info(t, admin, "persistence", "aof_rewrite_in_progress") == "0" &&
			g2Info(t, admin, "persistence", "aof_rewrite_scheduled") == "0" &&
			g2Info(t, admin, "persistence", "loading") == "0" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the append-only file is still being rewritten")
		}
	}
}

// g2StartServer starts one undeclared server with args and env, killed at
// cleanup.
func g2StartServer(t *testing.T, name string, env []string, args ...string) (*redisproc.Server, *redis.Client) {
	t.Helper()
	redlocktest.RequireRedis(t)
	server, err := redisproc.Start(redisproc.Config{Dir: filepath.Join(t.TempDir(), name), Args: args, Env: env, Undeclared: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Kill() })
	return server, g2Client(t, server.Addr(), 0)
}

// g2WaitSynced waits until the replica at admin is linked to its primary
// and in sync.
func g2WaitSynced(t *testing.T, admin *redis.Client) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if g2Info(t, admin, "replication", "master_link_status") == "up" &&
			g2Info(t, admin, "replication", "master_sync_in_progress") == "0" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica not in sync")
		}
	}
}

// g2Clock is a libfaketime clock that the test steps while the server
// runs: libfaketime reads its offset from a file on every call
// (FAKETIME_TIMESTAMP_FILE with FAKETIME_NO_CACHE=1), so rewriting the
// file steps the server's wall clock at once. The monotonic clock (the
// event loop's timers) is left alone, as in redlocktest.FastClock.
type g2Clock struct{ spec string }

// g2SteppedClock returns a clock offset by offset from the real one and
// the environment (redisproc.Config.Env) of a server that runs on it.
// It skips the test as the harness does when libfaketime is missing.
func g2SteppedClock(t *testing.T, offset time.Duration) (*g2Clock, []string) {
	t.Helper()
	libfaketime := redlocktest.RequireFaketime(t)
	clock := &g2Clock{spec: filepath.Join(t.TempDir(), "faketime")}
	clock.step(t, offset)
	return clock, []string{
		"LD_PRELOAD=" + libfaketime + " libc.so.6", // glibc's malloc: see redlocktest.FastClock
		"FAKETIME_TIMESTAMP_FILE=" + clock.spec,
		"FAKETIME_NO_CACHE=1",
		"FAKETIME_DONT_FAKE_MONOTONIC=1",
	}
}

// step sets the clock to offset from the real one (atomically: the
// server may read the file at any time).
func (c *g2Clock) step(t *testing.T, offset time.Duration) {
	t.Helper()
	tmp := c.spec + ".tmp"
	if err := os.WriteFile(tmp, []byte(fmt.Sprintf("%+d\n", int(offset.Seconds()))), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, c.spec); err != nil {
		t.Fatal(err)
	}
}

// g2ClockAt waits until the server's TIME is offset from the real clock
// (within two seconds), so that a step has taken effect.
func g2ClockAt(t *testing.T, admin *redis.Client, offset time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		at, err := admin.Time(context.Background()).Result()
		if err == nil {
			if d := at.Sub(time.Now()) - offset; d > -2*time.Second && d < 2*time.Second {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server's clock is %v (%v); want %v from the real one: libfaketime is not in effect", at, err, offset)
		}
	}
}

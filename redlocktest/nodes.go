// Package redlocktest starts real redis-server (or valkey-server) nodes for
// tests of code that uses redlock, and breaks them the way production
// does: kill, restart (empty, from a snapshot, from its append-only file),
// pause, resume, partition, slow a link, and run one node's clock fast.
//
//	nodes := redlocktest.Start(t, 3)                // declared new: they vote at once
//	client, err := redlock.New(nodes.Clients(t))
//	...
//	nodes.Kill(t, 2)                                // a minority down: locking goes on
//
// Servers are started in t.TempDir() subdirectories and killed via
// t.Cleanup. The binary is redis-server, or the one REDLOCK_SERVER names
// (redisproc.ServerEnv, e.g. valkey-server). When it is missing the test
// is skipped with an installation hint, unless REDLOCK_REQUIRE_REDIS=1 is
// set, in which case it fails instead. Fault methods fail the test when
// they cannot do what they say.
package redlocktest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/redlocktest/faultproxy"
	"github.com/quorumlock/redlock/redlocktest/redisproc"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// RequireRedisEnv is the environment variable that turns a missing
// redis-server from a skip into a failure when set to "1".
const RequireRedisEnv = "REDLOCK_REQUIRE_REDIS"

// Client timeouts used by Clients; Admin uses adminTimeout.
const (
	clientTimeout = 500 * time.Millisecond
	adminTimeout  = 2 * time.Second
)

// Nodes is a set of independent redis-server processes (not a Redis Cluster).
type Nodes struct {
	Servers []*redisproc.Server // in node order
	// proxies stand between the clients and the servers
	// (StartBehindProxies); nil when the clients dial the servers.
	proxies []*faultproxy.Proxy
}

// RequireRedis returns the path of the server binary (redis-server, or
// $REDLOCK_SERVER), or skips the test (fails it when
// REDLOCK_REQUIRE_REDIS=1) with an installation hint.
func RequireRedis(t testing.TB) string {
	t.Helper()
	path, err := redisproc.LookPath("")
	if err != nil {
		if os.Getenv(RequireRedisEnv) == "1" {
			t.Fatalf("%v (%s=1)", err, RequireRedisEnv)
		}
		t.Skipf("%v (set %s=1 to fail instead of skip)", err, RequireRedisEnv)
	}
	return path
}

// Start starts n redis-server processes, each on a free loopback port in its
// own t.TempDir() subdirectory, with args appended to every command line.
// All of them are killed by t.Cleanup (before the directories are removed).
// Any start failure fails the test.
func Start(t testing.TB, n int, args ...string) *Nodes {
	t.Helper()
	if n < 1 {
		t.Fatalf("redlocktest: Start needs n >= 1, got %d", n)
	}
	binary := RequireRedis(t)
	base := t.TempDir()
	cluster := &Nodes{}
	for i := range n {
		server, err := redisproc.Start(redisproc.Config{
			Dir:    filepath.Join(base, fmt.Sprintf("node%d", i)),
			Args:   args,
			Binary: binary,
		})
		if err != nil {
			t.Fatalf("redlocktest: start node %d: %v", i, err)
		}
		t.Cleanup(func() {
			if err := server.Kill(); err != nil {
				t.Errorf("redlocktest: kill node %d: %v", i, err)
			}
		})
		cluster.Servers = append(cluster.Servers, server)
	}
	return cluster
}

// addr is where clients reach node i: its proxy's address, or its own.
func (c *Nodes) addr(i int) string {
	if c.proxies != nil {
		return c.proxies[i].Addr()
	}
	return c.Servers[i].Addr()
}

// Addrs returns "127.0.0.1:PORT" for every node (its proxy's, behind
// proxies), in node order.
func (c *Nodes) Addrs() []string {
	addrs := make([]string, len(c.Servers))
	for i := range c.Servers {
		addrs[i] = c.addr(i)
	}
	return addrs
}

// URLs returns "redis://127.0.0.1:PORT" for every node, in node order.
func (c *Nodes) URLs() []string {
	urls := make([]string, len(c.Servers))
	for i := range c.Servers {
		urls[i] = "redis://" + c.addr(i)
	}
	return urls
}

// Clients returns one client per node (each a *redis.Client) with 500ms
// dial/read/write timeouts, a single dial attempt and no command retries,
// so a dead or paused node fails fast. They are closed by t.Cleanup.
func (c *Nodes) Clients(t testing.TB) []redis.UniversalClient {
	t.Helper()
	clients := make([]redis.UniversalClient, len(c.Servers))
	for i := range c.Servers {
		clients[i] = newClient(t, c.addr(i), clientTimeout)
	}
	return clients
}

// Admin returns a client for node i with 2s timeouts, intended for test
// assertions. It is closed by t.Cleanup.
func (c *Nodes) Admin(t testing.TB, i int) *redis.Client {
	t.Helper()
	if i < 0 || i >= len(c.Servers) {
		t.Fatalf("redlocktest: Admin: node %d out of range [0,%d)", i, len(c.Servers))
	}
	return newClient(t, c.Servers[i].Addr(), adminTimeout)
}

// ScriptsOnly returns a client for node i (as Clients makes them) logged in
// as a user that may run scripts but not load or list Functions, as on a
// service that forbids FUNCTION. It is closed by t.Cleanup.
func (c *Nodes) ScriptsOnly(t testing.TB, i int) *redis.Client {
	t.Helper()
	err := c.Admin(t, i).Do(context.Background(), "ACL", "SETUSER", "scripts", "on", ">scripts", "~*", "&*",
		"+@all", "-function").Err()
	if err != nil {
		t.Fatalf("redlocktest: ScriptsOnly: ACL SETUSER: %v", err)
	}
	opts := clientOptions(c.Servers[i].Addr(), clientTimeout)
	opts.Username, opts.Password = "scripts", "scripts"
	client := redis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// FlushScripts empties the node's script cache and its Functions, as a
// restart without persistence does: every script and function call after
// it finds nothing loaded.
func FlushScripts(ctx context.Context, admin *redis.Client) error {
	if err := admin.ScriptFlush(ctx).Err(); err != nil {
		return err
	}
	return admin.FunctionFlush(ctx).Err()
}

// KeyCount returns the number of keys over all running, unpaused nodes
// (stopped or paused nodes are skipped), not counting tombstones of
// released holds (keys ending in ":gone"): they lock nothing and expire at
// the lock's TTL; nor the node's marker of complete data (redlock:node). A failing read fails the test.
func (c *Nodes) KeyCount(t testing.TB) int64 {
	t.Helper()
	var total int64
	for i, node := range c.Servers {
		if !node.Running() || node.Paused() {
			continue
		}
		count, err := dbSize(node.Addr())
		if err != nil {
			t.Fatalf("redlocktest: DBSIZE on node %d (%s): %v", i, node.Addr(), err)
		}
		total += count
	}
	return total
}

// dbSize counts the keys but tombstones and the node's marker of complete
// data (redlock:node, see WithRestartGuard: not a lock's) with a
// short-lived client.
func dbSize(addr string) (int64, error) {
	client := redis.NewClient(clientOptions(addr, adminTimeout))
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	keys, err := client.Keys(ctx, "*").Result()
	var count int64
	for _, key := range keys {
		if !strings.HasSuffix(key, ":gone") && key != "redlock:node" && !strings.HasPrefix(key, "redlock:node:{") {
			count++
		}
	}
	return count, err
}

// Keys returns every key on node i, sorted, read with SCAN (which skips
// keys whose TTL has passed). A failing read fails the test.
func (c *Nodes) Keys(t testing.TB, i int) []string {
	t.Helper()
	client := redis.NewClient(clientOptions(c.Servers[i].Addr(), adminTimeout))
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	var keys []string
	iter := client.Scan(ctx, 0, "*", 100).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("redlocktest: SCAN on node %d (%s): %v", i, c.Servers[i].Addr(), err)
	}
	slices.Sort(keys)
	return slices.Compact(keys) // SCAN may return a key twice
}

func newClient(t testing.TB, addr string, timeout time.Duration) *redis.Client {
	client := redis.NewClient(clientOptions(addr, timeout))
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// clientOptions: one dial attempt, no retries, no maintenance notifications
// (Redis 7.0 does not support them and probing them only adds noise).
func clientOptions(addr string, timeout time.Duration) *redis.Options {
	return &redis.Options{
		Addr:                     addr,
		DialTimeout:              timeout,
		ReadTimeout:              timeout,
		WriteTimeout:             timeout,
		MaxRetries:               -1,
		ContextTimeoutEnabled:    true,
		DialerRetries:            1,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
}

// StartReplica starts an undeclared replica of the node at primary, linked
// through a fault proxy (to break the link), and waits until it is in
// sync. It returns the replica, the proxy and an admin client of the
// replica; all are closed at cleanup.
func StartReplica(t testing.TB, primary *redis.Client) (*redisproc.Server, *faultproxy.Proxy, *redis.Client) {
	t.Helper()
	ctx := context.Background()
	if err := primary.ConfigSet(ctx, "repl-diskless-sync-delay", "0").Err(); err != nil {
		t.Fatal(err)
	}
	link, err := faultproxy.New(primary.Options().Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = link.Close() })
	port := strings.TrimPrefix(link.Addr(), "127.0.0.1:")
	replica, err := redisproc.Start(redisproc.Config{Dir: filepath.Join(t.TempDir(), "replica"),
		Args: []string{"--replicaof", "127.0.0.1", port}, Undeclared: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = replica.Kill() })
	admin := newClient(t, replica.Addr(), adminTimeout)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		info, _ := admin.Info(ctx, "replication").Result()
		if strings.Contains(info, "master_link_status:up") {
			return replica, link, admin
		}
		if time.Now().After(deadline) {
			t.Fatalf("redlocktest: replica not in sync: %s", info)
		}
	}
}

package redlocktest

import (
	"context"
	"testing"
	"time"

	"github.com/quorumlock/redlock/redlocktest/faultproxy"
	"github.com/quorumlock/redlock/redlocktest/redisproc"
	"github.com/redis/go-redis/v9"
)

// StartBehindProxies is Start with a TCP proxy in front of every node:
// Addrs, URLs and Clients lead to the proxies, so Partition, Heal and
// SetLatency can cut or slow one node's link. Admin still reaches the
// server itself.
func StartBehindProxies(t testing.TB, n int, args ...string) *Nodes {
	t.Helper()
	nodes := Start(t, n, args...)
	for i, server := range nodes.Servers {
		proxy, err := faultproxy.New(server.Addr())
		if err != nil {
			t.Fatalf("redlocktest: proxy for node %d: %v", i, err)
		}
		t.Cleanup(func() { _ = proxy.Close() })
		nodes.proxies = append(nodes.proxies, proxy)
	}
	return nodes
}

// How says what a node restarted with Restart keeps.
type How int

const (
	// Empty: the data files are removed first. The node forgot every
	// lease; the restart guard keeps it from voting until they ended.
	Empty How = iota
	// FromSnapshot: SAVE, then killed and started from that RDB file.
	FromSnapshot
	// FromDisk: killed and started from what it has on disk: its
	// append-only file when started with "--appendonly", "yes", else its
	// last snapshot, if any.
	FromDisk
)

// Kill stops node i with SIGKILL, as a crash would.
func (c *Nodes) Kill(t testing.TB, i int) {
	t.Helper()
	if err := c.server(t, i).Kill(); err != nil {
		t.Fatalf("redlocktest: kill node %d: %v", i, err)
	}
}

// Restart kills node i and starts it again on the same port, keeping what
// how says, and waits until it answers.
func (c *Nodes) Restart(t testing.TB, i int, how How) {
	t.Helper()
	server := c.server(t, i)
	if how == FromSnapshot {
		ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
		defer cancel()
		if err := c.Admin(t, i).Save(ctx).Err(); err != nil {
			t.Fatalf("redlocktest: SAVE on node %d: %v", i, err)
		}
	}
	if err := server.Restart(how != Empty); err != nil {
		t.Fatalf("redlocktest: restart node %d: %v", i, err)
	}
}

// Pause stops node i with SIGSTOP: it keeps its connections and answers
// nothing, like a long GC pause or a frozen VM, until Resume.
func (c *Nodes) Pause(t testing.TB, i int) {
	t.Helper()
	if err := c.server(t, i).Pause(); err != nil {
		t.Fatalf("redlocktest: pause node %d: %v", i, err)
	}
}

// Resume continues node i after Pause (SIGCONT).
func (c *Nodes) Resume(t testing.TB, i int) {
	t.Helper()
	if err := c.server(t, i).Resume(); err != nil {
		t.Fatalf("redlocktest: resume node %d: %v", i, err)
	}
}

// Partition cuts node i's link: its connections drop and new ones are
// refused until Heal. Needs StartBehindProxies.
func (c *Nodes) Partition(t testing.TB, i int) {
	t.Helper()
	c.proxy(t, i).Cut()
}

// Heal ends Partition of node i.
func (c *Nodes) Heal(t testing.TB, i int) {
	t.Helper()
	c.proxy(t, i).Heal()
}

// SetLatency delays every request and every reply on node i's link by d
// (a round trip then takes about 2d more). Needs StartBehindProxies.
func (c *Nodes) SetLatency(t testing.TB, i int, d time.Duration) {
	t.Helper()
	c.proxy(t, i).SetLatency(d)
}

// SkewClock restarts node i (from a snapshot taken first) with its wall
// clock running speed times as fast, by libfaketime; the test is skipped
// without libfaketime (fails under REDLOCK_REQUIRE_REDIS=1). Keys then
// expire early there, as on a host whose clock jumps. A restart is what
// the restart guard is for: the node votes again after it.
func (c *Nodes) SkewClock(t testing.TB, i int, speed int) {
	t.Helper()
	if speed < 2 {
		t.Fatalf("redlocktest: SkewClock speed %d: want 2 or more", speed)
	}
	c.server(t, i).SetEnv(FastClock(RequireFaketime(t), speed))
	c.Restart(t, i, FromSnapshot)
}

func (c *Nodes) server(t testing.TB, i int) *redisproc.Server {
	t.Helper()
	if i < 0 || i >= len(c.Servers) {
		t.Fatalf("redlocktest: node %d out of range [0,%d)", i, len(c.Servers))
	}
	return c.Servers[i]
}

func (c *Nodes) proxy(t testing.TB, i int) *faultproxy.Proxy {
	t.Helper()
	if c.proxies == nil {
		t.Fatal("redlocktest: the nodes were not started behind proxies: use StartBehindProxies")
	}
	if i < 0 || i >= len(c.proxies) {
		t.Fatalf("redlocktest: node %d out of range [0,%d)", i, len(c.proxies))
	}
	return c.proxies[i]
}

// OwnLinks returns one client per node (as Clients makes them), each
// through a fault proxy of its own, and those proxies: a Client made over
// them can be cut off from some nodes, or slowed, while every other
// Client reaches the nodes as before (a partial partition). All are
// closed at cleanup.
func (c *Nodes) OwnLinks(t testing.TB) ([]redis.UniversalClient, []*faultproxy.Proxy) {
	t.Helper()
	clients := make([]redis.UniversalClient, len(c.Servers))
	proxies := make([]*faultproxy.Proxy, len(c.Servers))
	for i, server := range c.Servers {
		proxy, err := faultproxy.New(server.Addr())
		if err != nil {
			t.Fatalf("redlocktest: proxy for node %d: %v", i, err)
		}
		t.Cleanup(func() { _ = proxy.Close() })
		proxies[i] = proxy
		clients[i] = newClient(t, proxy.Addr(), clientTimeout)
	}
	return clients, proxies
}

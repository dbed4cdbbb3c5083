package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/quorumlock/redlock/redlocktest/redisproc"
	"github.com/redis/go-redis/v9"
)

// marker is the restart guard's marker with the default prefix.
const marker = redlock.DefaultKeyPrefix + "node"

// freshNodes starts n redis-server nodes and undoes the harness's
// declaration (it declares the nodes it starts): they are then as a
// user's brand-new nodes are, started a moment ago and declared by nobody.
func freshNodes(t *testing.T, n int) *redlocktest.Nodes {
	t.Helper()
	cluster := redlocktest.Start(t, n)
	for i := range n {
		if err := cluster.Admin(t, i).Del(context.Background(), marker).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return cluster
}

// TestInit_freshNodesVoteAtOnce: brand-new nodes do not vote for the
// restart guard after their start (redlock run says so and exits 124);
// after redlock init (twice: harmless) the first Lock is granted at once.
func TestInit_freshNodesVoteAtOnce(t *testing.T) {
	t.Parallel()
	cluster := freshNodes(t, 3)
	env := nodesEnvFor(cluster.URLs())
	// Not yet: "not acquired" (124), saying why and what to do. The wait
	// lets the first answers come on a loaded machine; the guard (30 s)
	// outlasts it, so run says so at once.
	before := runCLI(t, env, "run", "-name", "fresh", "-wait", "5s", "--", "true")
	before.expect(t, exitNotAcquired, `lock "fresh" not acquired within 5s: too few nodes vote yet: node 0 (`,
		"quarantined", "redlock init")
	for range 2 {
		c := runCLI(t, env, "init")
		c.expect(t, exitOK)
		if got := strings.Count(c.stdout.String(), "declared new"); got != 3 {
			t.Errorf("init declared %d nodes, want 3: %s", got, c.stdout.String())
		}
	}

	client, err := redlock.New(cluster.Clients(t))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // far below the guard
	defer cancel()
	start := time.Now()
	lease, err := client.Mutex("fresh").Lock(ctx)
	if err != nil {
		t.Fatalf("Lock after init: %v", err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Lock after init took %v: the nodes did not vote at once", took)
	}
	if err := lease.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestInit_refusesANodeHoldingLockKeys: one node holds a lock and one
// does not answer: init declares none of the set, naming both, and leaves
// every marker as it was; exit 125. With -force it declares the new
// nodes all the same, and says what that may break.
func TestInit_refusesANodeHoldingLockKeys(t *testing.T) {
	t.Parallel()
	cluster := redlocktest.Start(t, 3)
	ctx := context.Background()
	// A lock held on node 2 alone (a one-node Client), fenced: its key
	// and its fence counter are there.
	one, err := redlock.New([]redis.UniversalClient{cluster.Clients(t)[2]}, redlock.WithFencing())
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	if _, err := one.Mutex("held").Lock(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := cluster.Admin(t, i).Del(ctx, marker).Err(); err != nil {
			t.Fatal(err)
		}
	}
	kept, err := cluster.Admin(t, 2).Get(ctx, marker).Result()
	if err != nil {
		t.Fatal(err)
	}
	env := nodesEnvFor(append(cluster.URLs(), closedPort(t)))
	refused := "node 2 (" + cluster.Addrs()[2] + "): refused: not a new node: it holds lock keys ("

	c := runCLI(t, env, "init", "-timeout", "300ms")
	c.expect(t, exitError, refused, "redlock:{held}", "redlock:{held}:fence", "node 3 (", "connection refused",
		"declared none of 4 nodes", "-force")
	if c.stdout.Len() > 0 {
		t.Errorf("init declared nodes of a set that holds a lock: %s", c.stdout.String())
	}
	for i := range 2 {
		if n, err := cluster.Admin(t, i).Exists(ctx, marker).Result(); err != nil || n != 0 {
			t.Errorf("node %d has a marker (%d, %v); want none: nothing declared", i, n, err)
		}
	}

	c = runCLI(t, env, "init", "-timeout", "300ms", "-force")
	c.expect(t, exitError, refused, "redlock:{held}", "node 3 (", "connection refused",
		"-force: declared 2 of 4 nodes", "second owner")
	for i := range 2 {
		if !strings.Contains(c.stdout.String(), fmt.Sprintf("node %d (%s): declared new", i, cluster.Addrs()[i])) {
			t.Errorf("node %d not declared: %s", i, c.stdout.String())
		}
		if value, err := cluster.Admin(t, i).Get(ctx, marker).Result(); err != nil || !strings.HasPrefix(value, "0 declared ") {
			t.Errorf("node %d marker %q, %v; want declared", i, value, err)
		}
	}
	if value, err := cluster.Admin(t, 2).Get(ctx, marker).Result(); err != nil || value != kept {
		t.Errorf("refused node's marker %q, %v; want it unchanged, %q", value, err, kept)
	}
}

// TestInit_liveSetDeclaresNone (issue 31, case 4): a majority of nodes
// restarts empty under A's lease; B is quarantined and told to run init.
// init declares none of the set (node 2 holds A's key, and voted for it),
// so B still waits for the restart guard: it gets the lock only after
// A's lease has ended, not at once.
func TestInit_liveSetDeclaresNone(t *testing.T) {
	t.Parallel()
	cluster := redlocktest.Start(t, 3) // declared, as init leaves new nodes
	ctx := context.Background()
	const ttl = 4 * time.Second
	a, err := redlock.New(cluster.Clients(t), redlock.WithTTL(ttl), redlock.WithRestartGuard(ttl), redlock.WithWatchdog(false))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	leaseA, err := a.Mutex("job").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1} {
		if err := cluster.Servers[i].Restart(false); err != nil { // empty, as after a crash
			t.Fatal(err)
		}
	}
	b, err := redlock.New(cluster.Clients(t), redlock.WithTTL(ttl), redlock.WithRestartGuard(ttl))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Mutex("job").TryLock(ctx); !errors.Is(err, redlock.ErrQuarantined) || !strings.Contains(err.Error(), "redlock init") {
		t.Fatalf("B's TryLock = %v; want the quarantine, naming redlock init", err)
	}

	c := runCLI(t, nodesEnvFor(cluster.URLs()), "init")
	c.expect(t, exitError, "node 2 ("+cluster.Addrs()[2]+"): refused: not a new node: it holds lock keys (redlock:{job}",
		"declared none of 3 nodes")
	if c.stdout.Len() > 0 {
		t.Errorf("init declared nodes of a live set: %s", c.stdout.String())
	}
	for time.Now().Before(leaseA.Until()) {
		if lease, err := b.Mutex("job").TryLock(ctx); err == nil {
			t.Fatalf("B granted %v before A's lease ends: two owners (%v)", time.Until(leaseA.Until()), lease)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The restarted nodes vote once the guard (the TTL) has passed since
	// their start: B gets the lock then.
	waitCtx, cancel := context.WithTimeout(ctx, ttl+2*time.Second)
	defer cancel()
	if _, err := b.Mutex("job").Lock(waitCtx); err != nil {
		t.Fatalf("B's Lock after A's lease ended: %v", err)
	}
}

// TestInit_nodeStillStarting: a node that refuses connections when init
// starts (a compose service or an init container runs as the nodes start)
// is tried again within -timeout and declared once it listens.
func TestInit_nodeStillStarting(t *testing.T) {
	t.Parallel()
	redlocktest.RequireRedis(t)
	url := closedPort(t)
	port, err := strconv.Atoi(url[strings.LastIndex(url, ":")+1:])
	if err != nil {
		t.Fatal(err)
	}
	c := startCLI(t, nil, "init", "-timeout", "10s", url)
	time.Sleep(300 * time.Millisecond)
	server, err := redisproc.Start(redisproc.Config{Dir: t.TempDir(), Port: port, Undeclared: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = server.Kill() }()
	c.wait()
	c.expect(t, exitOK)
	if !strings.Contains(c.stdout.String(), "node 0 ("+server.Addr()+"): declared new") {
		t.Errorf("init said %q", c.stdout.String())
	}
}

// TestInit_clusterMembers: members that are brand-new 3-shard Redis
// Clusters, given as redis+cluster:// URLs. Before init their slots do not
// vote (redlock run says to run init); init declares every slot of every
// shard; then run takes the lock at once and inspect reads it on the
// shard of its slot, voting.
func TestInit_clusterMembers(t *testing.T) {
	t.Parallel()
	urls := make([]string, 3)
	for i := range urls {
		addrs := redlocktest.StartRedisCluster(t, 3).Addrs()
		urls[i] = "redis+cluster://" + addrs[0] + "?addr=" + addrs[1] + "&addr=" + addrs[2]
	}
	env := nodesEnvFor(urls)
	// A wait long enough for the first answers on a loaded machine: the
	// quarantine (30 s) outlasts it, so run says so at once.
	before := runCLI(t, env, "run", "-name", "sharded", "-wait", "5s", "--", "true")
	before.expect(t, exitNotAcquired, "quarantined", "redlock init")
	c := runCLI(t, env, "init")
	c.expect(t, exitOK)
	if got := strings.Count(c.stdout.String(), "declared new"); got != 3 {
		t.Fatalf("init declared %d members, want 3: %s", got, c.stdout.String())
	}
	run := runCLI(t, env, "run", "-name", "sharded", "-wait", "5s", "--", "true") // far below the guard
	run.expect(t, exitOK)
	inspect := runCLI(t, env, "inspect", "-json", "sharded")
	inspect.expect(t, exitOK)
	var rep struct {
		Voting int `json:"voting"`
		Nodes  []struct {
			Marker string `json:"marker"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(inspect.stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Voting != 3 || len(rep.Nodes) != 3 || rep.Nodes[0].Marker != "declared" {
		t.Errorf("inspect: %d members vote, want 3, each with its slot's marker declared: %s", rep.Voting, inspect.stdout.String())
	}
}

// TestInit_lowerGuard: after a Client used an hour's TTL, init -lower-guard
// refuses while that lease lives (exit 125, naming the key) and lowers each
// node's record once it has gone; a second run keeps the lower record.
func TestInit_lowerGuard(t *testing.T) {
	t.Parallel()
	cluster := redlocktest.Start(t, 3)
	env := nodesEnvFor(cluster.URLs())
	client, err := redlock.New(cluster.Clients(t), redlock.WithTTL(time.Hour), redlock.WithWatchdog(false))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	lease, err := client.Mutex("long").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	runCLI(t, env, "init", "-lower-guard", "2s").expect(t, exitError, "guard not lowered", "{long}", "longer than 2s")
	if err := lease.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	lowered := runCLI(t, env, "init", "-lower-guard", "2s")
	lowered.expect(t, exitOK)
	if got := strings.Count(lowered.stdout.String(), "lowered from 1h0m0s to 2s"); got != 3 {
		t.Errorf("init -lower-guard lowered %d nodes, want 3: %s", got, lowered.stdout.String())
	}
	kept := runCLI(t, env, "init", "-lower-guard", "2s")
	kept.expect(t, exitOK)
	if got := strings.Count(kept.stdout.String(), "longest guard 2s, not longer than 2s: kept"); got != 3 {
		t.Errorf("a second -lower-guard: %s; want each node's record kept at 2s", kept.stdout.String())
	}
}

package node_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/redis/go-redis/v9"
)

// nodeSet starts n nodes, as the harness declares them, and returns a
// *node.Node for each, with the cluster and its clients as Scripters.
func nodeSet(t *testing.T, n int) ([]*node.Node, *redlocktest.Nodes, []redis.Scripter) {
	t.Helper()
	cluster := redlocktest.Start(t, n)
	clients := cluster.Clients(t)
	nodes := make([]*node.Node, n)
	scripters := make([]redis.Scripter, n)
	for i := range n {
		nodes[i] = node.New(i, cluster.Addrs()[i], clients[i])
		t.Cleanup(nodes[i].Wait)
		scripters[i] = clients[i]
	}
	return nodes, cluster, scripters
}

// undeclared deletes the markers of nodes is: as nobody declared them.
func undeclared(t *testing.T, cluster *redlocktest.Nodes, is ...int) {
	t.Helper()
	for _, i := range is {
		if err := cluster.Admin(t, i).Del(context.Background(), "redlock:node").Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// markerOf is node i's marker ("" when it has none).
func markerOf(t *testing.T, cluster *redlocktest.Nodes, i int) string {
	t.Helper()
	value, err := cluster.Admin(t, i).Get(context.Background(), "redlock:node").Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	return value
}

// infoField is a field of the node's INFO section; the test fails
// when it is absent.
func infoField(t *testing.T, admin *redis.Client, section, field string) string {
	t.Helper()
	value, ok := infoValue(t, admin, section, field)
	if !ok {
		t.Fatalf("no %s in INFO %s", field, section)
	}
	return value
}

// refusedBy checks that err is a *node.SetRefused that declared nothing
// and names exactly the nodes in want, and returns their errors by index.
func refusedBy(t *testing.T, err error, total int, want ...int) map[int]error {
	t.Helper()
	var refused *node.SetRefused
	if !errors.As(err, &refused) || refused.Declared != 0 || refused.Total != total {
		t.Fatalf("DeclareSet = %v; want a *SetRefused declaring none of %d", err, total)
	}
	got := map[int]error{}
	for _, n := range refused.Nodes {
		got[n.Node] = n.Err
		if !strings.Contains(err.Error(), fmt.Sprintf("node %d (%s): ", n.Node, n.Addr)) || n.Addr == "" {
			t.Errorf("DeclareSet's error %q does not name node %d by its address", err, n.Node)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("DeclareSet refused by %v; want nodes %v", err, want)
	}
	for _, i := range want {
		if got[i] == nil {
			t.Fatalf("DeclareSet refused by %v; want nodes %v", err, want)
		}
	}
	return got
}

// Brand-new nodes (no marker; one asked for a long guard already): the
// set is declared, twice as well as once, keeping the longest guard
// asked, and each node votes at once with a guard of a minute.
func TestDeclareSet_newNodesVoteAtOnce(t *testing.T) {
	nodes, cluster, clients := nodeSet(t, 3)
	undeclared(t, cluster, 0, 1, 2)
	ctx := context.Background()
	keys := keysOf("redlock:{new}")
	keys.Guard = time.Minute
	if q := quarantineOf(t, nodes[0], keys, "h0"); q.Why != node.WhyNew {
		t.Fatalf("before DeclareSet: %s", q)
	}
	for range 2 {
		if err := node.DeclareSet(ctx, clients, "redlock:"); err != nil {
			t.Fatalf("DeclareSet on new nodes: %v", err)
		}
	}
	for i, n := range nodes {
		longest := map[bool]string{true: "60000", false: "0"}[i == 0]
		want := "0 declared " + infoField(t, cluster.Admin(t, i), "replication", "master_replid") + " " + longest + " 0 0 " +
			infoField(t, cluster.Admin(t, i), "server", "run_id") + " 0 "
		if got := markerOf(t, cluster, i); !strings.HasPrefix(got, want) {
			t.Errorf("node %d marker %q; want %q", i, got, want)
		}
		if got, err := n.Acquire(ctx, nil, keys, "o", "h1", time.Minute); err != nil || !got.Granted {
			t.Errorf("Acquire on declared node %d = %+v, %v; want granted at once", i, got, err)
		}
	}
}

// Issue 31, case 4: a majority restarts empty under A's lease; B is
// quarantined on those nodes. They pass every check of their own, but
// node 2 holds A's key: DeclareSet declares none, and B's quarantine
// stands until the restart guard has passed.
func TestDeclareSet_liveSetDeclaresNone(t *testing.T) {
	nodes, cluster, clients := nodeSet(t, 3)
	ctx := context.Background()
	keys := keysOf("redlock:{job}")
	keys.Guard = 3 * time.Second
	for i, n := range nodes {
		if got, err := n.Acquire(ctx, nil, keys, "a", "a1", keys.Guard); err != nil || !got.Granted {
			t.Fatalf("A's Acquire on node %d = %+v, %v", i, got, err)
		}
	}
	for _, i := range []int{0, 1} {
		if err := cluster.Servers[i].Restart(false); err != nil {
			t.Fatal(err)
		}
		if q := quarantineOf(t, nodes[i], keys, "b1"); q.Why != node.WhyNew {
			t.Fatalf("B on restarted node %d: %s", i, q)
		}
	}
	before := []string{markerOf(t, cluster, 0), markerOf(t, cluster, 1)}
	err := node.DeclareSet(ctx, clients, "redlock:")
	var notNew *node.NotNew
	if why := refusedBy(t, err, 3, 2)[2]; !errors.As(why, &notNew) || len(notNew.Keys) != 1 || notNew.Keys[0] != keys.Lock {
		t.Fatalf("node 2 refused for %v; want A's key named", why)
	}
	if !errors.Is(err, node.ErrNotNew) {
		t.Errorf("DeclareSet = %v; want it to match ErrNotNew", err)
	}
	for i, want := range before {
		if got := markerOf(t, cluster, i); got != want {
			t.Errorf("node %d marker %q after a refused DeclareSet; want it unchanged, %q", i, got, want)
		}
	}
	for _, i := range []int{0, 1} {
		if q := quarantineOf(t, nodes[i], keys, "b2"); q.Why != node.WhyNew {
			t.Errorf("B on node %d after DeclareSet: %s; want still quarantined", i, q)
		}
	}
}

// A node whose lock key has expired, but that voted less than its
// longest guard (+ 1 s) ago, may have granted a lease still live
// elsewhere: DeclareSet declares none, Declare refuses it, until then.
func TestDeclareSet_recentVoteDeclaresNone(t *testing.T) {
	nodes, cluster, clients := nodeSet(t, 3)
	undeclared(t, cluster, 0, 1)
	ctx := context.Background()
	keys := keysOf("redlock:{short}")
	keys.Guard = 2 * time.Second
	if got, err := nodes[2].Acquire(ctx, nil, keys, "a", "a1", 200*time.Millisecond); err != nil || !got.Granted {
		t.Fatalf("Acquire = %+v, %v", got, err)
	}
	voted := time.Now()
	time.Sleep(300 * time.Millisecond)
	if left := cluster.Keys(t, 2); len(left) != 1 {
		t.Fatalf("node 2 keys %v; want the marker alone", left)
	}
	var notNew *node.NotNew
	why := refusedBy(t, node.DeclareSet(ctx, clients, "redlock:"), 3, 2)[2]
	if !errors.As(why, &notNew) || notNew.Live <= 0 || notNew.Live > 3*time.Second || !strings.Contains(why.Error(), "voted") {
		t.Fatalf("node 2 refused for %v; want a recent vote, live for under 3 s", why)
	}
	if err := node.Declare(ctx, clients[2], "redlock:"); !errors.As(err, &notNew) || notNew.Live <= 0 {
		t.Fatalf("Declare on the node that voted = %v; want refused", err)
	}
	for i := range 2 {
		if got := markerOf(t, cluster, i); got != "" {
			t.Errorf("node %d marker %q after a refused DeclareSet; want none", i, got)
		}
	}
	time.Sleep(time.Until(voted.Add(keys.Guard + time.Second + 100*time.Millisecond)))
	if err := node.DeclareSet(ctx, clients, "redlock:"); err != nil {
		t.Fatalf("DeclareSet once no lease can be live: %v", err)
	}
}

// A node that does not answer may hold a live lease: DeclareSet declares
// none of the others, naming it.
func TestDeclareSet_unreachableNodeDeclaresNone(t *testing.T) {
	_, cluster, clients := nodeSet(t, 2)
	undeclared(t, cluster, 0, 1)
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := listener.Addr().String()
	_ = listener.Close()
	gone := redis.NewClient(&redis.Options{Addr: closed, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { _ = gone.Close() })
	err = node.DeclareSet(context.Background(), append(clients, gone), "redlock:")
	if why := refusedBy(t, err, 3, 2)[2]; !strings.Contains(why.Error(), "connection refused") || !strings.Contains(err.Error(), closed) {
		t.Fatalf("DeclareSet = %v; want node 2 (%s) named, refusing connections", err, closed)
	}
	for i := range 2 {
		if got := markerOf(t, cluster, i); got != "" {
			t.Errorf("node %d marker %q after a refused DeclareSet; want none", i, got)
		}
	}
}

// Markers of older versions and of the guard's rules: a declaration
// ("0 <run_id>", "0") or the rule for a new node passes; a marker
// recording a loss is refused and left as it was.
func TestDeclare_readsEveryMarker(t *testing.T) {
	_, cluster, clients := nodeSet(t, 1)
	ctx := context.Background()
	admin := cluster.Admin(t, 0)
	replid := infoField(t, admin, "replication", "master_replid")
	now := time.Now().UnixMilli()
	for _, tc := range []struct {
		marker string
		passes bool
	}{
		{"0 " + infoField(t, admin, "server", "run_id"), true},
		{"0", true},
		{fmt.Sprintf("%d new %s 5000 0 0 0", now, replid), true},
		{fmt.Sprintf("%d restarted %s 5000 0 0 0", now, replid), false},
		{fmt.Sprintf("%d failover %s 5000 0 0 0", now, replid), false},
		{"garbage", false},
	} {
		if err := admin.Set(ctx, "redlock:node", tc.marker, 0).Err(); err != nil {
			t.Fatal(err)
		}
		err := node.Declare(ctx, clients[0], "redlock:")
		var notNew *node.NotNew
		switch got := markerOf(t, cluster, 0); {
		case tc.passes && (err != nil || !strings.HasPrefix(got, "0 declared "+replid+" ")):
			t.Errorf("Declare on marker %q = %v, marker %q; want declared", tc.marker, err, got)
		case !tc.passes && (!errors.As(err, &notNew) || notNew.Marker != tc.marker || got != tc.marker):
			t.Errorf("Declare on marker %q = %v, marker %q; want refused, the marker kept", tc.marker, err, got)
		}
	}
}

// Declare marks a brand-new node for its process: it votes at once, and no
// longer after a restart. It refuses a node holding lock keys, one that
// loaded keys from disk at its start, and one whose marker records a loss.
func TestDeclare(t *testing.T) {
	n, cluster := oneNode(t)
	ctx := context.Background()
	admin := cluster.Admin(t, 0)
	keys := keysOf("redlock:{declare}")
	keys.Guard = time.Minute
	if err := node.Declare(ctx, admin, "redlock:"); err != nil { // again: the harness declared it
		t.Fatalf("Declare twice: %v", err)
	}
	if got, err := n.Acquire(ctx, nil, keys, "o", "h1", time.Minute); err != nil || !got.Granted {
		t.Fatalf("Acquire on a declared node = %+v, %v", got, err)
	}
	var notNew *node.NotNew
	if err := node.Declare(ctx, admin, "redlock:"); !errors.As(err, &notNew) || len(notNew.Keys) != 1 || notNew.Keys[0] != keys.Lock {
		t.Fatalf("Declare with a lock held = %v; want refused, naming the lock", err)
	}
	if err := admin.Save(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Servers[0].Restart(true); err != nil {
		t.Fatal(err)
	}
	if err := admin.Del(ctx, keys.Lock).Err(); err != nil { // no key left, but the process loaded some
		t.Fatal(err)
	}
	if err := node.Declare(ctx, admin, "redlock:"); !errors.As(err, &notNew) || notNew.Loaded != "2" || !errors.Is(err, node.ErrNotNew) {
		t.Fatalf("Declare after a restart from a snapshot = %v; want refused: it loaded keys", err)
	}
	if q := quarantineOf(t, n, keys, "h2"); q.Why != node.WhyRestarted {
		t.Fatalf("after a restart the declaration holds no more: %s", q)
	}
	if err := admin.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if q := quarantineOf(t, n, keys, "h3"); q.Why != node.WhyFlushed {
		t.Fatalf("after FLUSHALL: %s", q)
	}
	if err := node.Declare(ctx, admin, "redlock:"); !errors.As(err, &notNew) || notNew.Marker == "" {
		t.Fatalf("Declare after a flush = %v; want refused: the marker records the loss", err)
	}
}

// Declare refuses a node whose keys were dropped since it started, though
// it holds none now.
func TestDeclare_refusesAFlushedNode(t *testing.T) {
	_, cluster := oneNode(t)
	ctx := context.Background()
	admin := cluster.Admin(t, 0)
	if err := admin.FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	var notNew *node.NotNew
	if err := node.Declare(ctx, admin, "redlock:"); !errors.As(err, &notNew) || notNew.Dropped != node.WhyFlushed {
		t.Fatalf("Declare after FLUSHALL = %v; want refused: keys were dropped", err)
	}
	if exists, _ := admin.Exists(ctx, "redlock:node").Result(); exists != 0 {
		t.Fatal("a refused Declare wrote the marker")
	}
}

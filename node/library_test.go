package node_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/redis/go-redis/v9"
)

// Two calls of one function, apart in time, each read the node's clock:
// the first call's TIME is not kept for the next.
func TestLibrary_eachCallReadsTheClock(t *testing.T) {
	cluster := redlocktest.Start(t, 1)
	admin := cluster.Admin(t, 0)
	ctx := context.Background()
	if err := admin.FunctionLoad(ctx, node.LibrarySource()).Err(); err != nil {
		t.Fatal(err)
	}
	at := func() time.Time {
		reply, err := admin.FCall(ctx, node.ProbeFunction(), []string{"redlock:node"}).Slice()
		if err != nil || len(reply) != 3 {
			t.Fatalf("probe = %v, %v", reply, err)
		}
		sec, _ := strconv.ParseInt(reply[0].(string), 10, 64)
		usec, _ := strconv.ParseInt(reply[1].(string), 10, 64)
		return time.Unix(sec, usec*1000)
	}
	first := at()
	time.Sleep(30 * time.Millisecond)
	if gap := at().Sub(first); gap < 30*time.Millisecond {
		t.Fatalf("the second call's node time is %v after the first's; want at least the 30ms between them", gap)
	}
}

// commandCalls is how many times the node ran each of names.
func commandCalls(t *testing.T, admin *redis.Client, names ...string) int {
	t.Helper()
	info, err := admin.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for line := range strings.SplitSeq(info, "\r\n") {
		for _, name := range names {
			if rest, ok := strings.CutPrefix(line, "cmdstat_"+name+":calls="); ok {
				n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
				total += n
			}
		}
	}
	return total
}

// A node that has Functions gets the library once and then FCALL; one
// whose user may not load Functions gets EVALSHA, and locks all the same.
func TestLibrary_loadedWhereAllowedEvalshaElsewhere(t *testing.T) {
	cluster := redlocktest.Start(t, 1)
	admin := cluster.Admin(t, 0)
	ctx := context.Background()
	for _, c := range []struct {
		name      string
		client    node.Client
		functions bool
	}{{"scripts only", cluster.ScriptsOnly(t, 0), false}, {"default user", cluster.Clients(t)[0], true}} {
		n := node.New(0, cluster.Addrs()[0], c.client)
		before := commandCalls(t, admin, "fcall")
		for i := range 5 {
			keys := node.Keys{Lock: "lib", Gone: "lib:gone", Queue: "lib:q", Alive: "lib:a", Wake: "lib:w", Marker: "redlock:node"}
			hold := c.name + strconv.Itoa(i)
			if got, err := n.Acquire(ctx, nil, keys, "o", hold, time.Second); err != nil || !got.Granted {
				t.Fatalf("%s: acquire %d = %+v, %v", c.name, i, got, err)
			}
			if r, _, err := n.Release(ctx, keys, "o", hold, 0, time.Second); err != nil || r != node.LockDeleted {
				t.Fatalf("%s: release %d = %v, %v", c.name, i, r, err)
			}
		}
		n.Wait()
		// Two calls ask for the library and load it; the rest are FCALL.
		if fcalls := commandCalls(t, admin, "fcall") - before; (fcalls >= 8) != c.functions || (fcalls == 0) == c.functions {
			t.Errorf("%s: %d of 10 calls were FCALL; want functions %v", c.name, fcalls, c.functions)
		}
	}
	libs, err := admin.FunctionList(ctx, redis.FunctionListQuery{LibraryNamePattern: node.LibraryName()}).Result()
	if err != nil || len(libs) != 1 || len(libs[0].Functions) != node.LibraryFunctions() {
		t.Fatalf("FUNCTION LIST = %+v, %v; want the library with its %d functions", libs, err, node.LibraryFunctions())
	}
}

// A node out of memory under noeviction refuses an FCALL before it starts,
// where an EVAL script runs and is refused only its writes: a release (a
// DEL) still frees the lock, by EVAL.
func TestLibrary_releaseUnderMaxmemoryRunsByEval(t *testing.T) {
	cluster := redlocktest.Start(t, 1)
	admin := cluster.Admin(t, 0)
	ctx := context.Background()
	n := node.New(0, cluster.Addrs()[0], cluster.Clients(t)[0])
	defer n.Wait()
	keys := node.Keys{Lock: "oom", Gone: "oom:gone", Queue: "oom:q", Alive: "oom:a", Wake: "oom:w", Marker: "redlock:node"}
	for i := range 3 { // asked, loaded, then an FCALL
		if got, err := n.Acquire(ctx, nil, keys, "o", "h"+strconv.Itoa(i), time.Minute); err != nil || !got.Granted {
			t.Fatalf("acquire = %+v, %v", got, err)
		}
	}
	if err := admin.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	defer admin.ConfigSet(ctx, "maxmemory", "0")
	for i := range 3 {
		if r, _, err := n.Release(ctx, keys, "o", "h"+strconv.Itoa(i), 0, time.Second); err != nil || !r.Removed() {
			t.Fatalf("release %d under maxmemory = %v, %v; want the hold removed", i, r, err)
		}
	}
	if commandCalls(t, admin, "fcall") == 0 {
		t.Fatal("no FCALL: the test did not reach the library")
	}
	if exists, err := admin.Exists(ctx, "oom").Result(); err != nil || exists != 0 {
		t.Fatalf("the lock is still there (%d, %v)", exists, err)
	}
}

// A user that may load Functions but not FCALL them: the refused FCALL
// runs by EVAL, and the calls after it go by EVALSHA.
func TestLibrary_fcallRefusedFallsBackToScripts(t *testing.T) {
	cluster := redlocktest.Start(t, 1)
	admin := cluster.Admin(t, 0)
	ctx := context.Background()
	err := admin.Do(ctx, "ACL", "SETUSER", "nofcall", "on", ">p", "~*", "&*", "+@all", "-fcall").Err()
	if err != nil {
		t.Fatal(err)
	}
	opts := *cluster.Clients(t)[0].(*redis.Client).Options()
	opts.Username, opts.Password = "nofcall", "p"
	client := redis.NewClient(&opts)
	defer client.Close()
	n := node.New(0, cluster.Addrs()[0], client)
	defer n.Wait()
	keys := node.Keys{Lock: "nf", Gone: "nf:gone", Queue: "nf:q", Alive: "nf:a", Wake: "nf:w", Marker: "redlock:node"}
	for i := range 6 {
		hold := "h" + strconv.Itoa(i)
		if got, err := n.Acquire(ctx, nil, keys, "o", hold, time.Second); err != nil || !got.Granted {
			t.Fatalf("acquire %d = %+v, %v", i, got, err)
		}
		if r, _, err := n.Release(ctx, keys, "o", hold, 0, time.Second); err != nil || r != node.LockDeleted {
			t.Fatalf("release %d = %v, %v", i, r, err)
		}
	}
	info, err := admin.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(info, "cmdstat_fcall:calls=0,") || commandCalls(t, admin, "evalsha") < 8 {
		t.Fatalf("want one refused FCALL, then EVALSHA:\n%s", info)
	}
}

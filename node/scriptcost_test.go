package node_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/redis/go-redis/v9"
)

// BenchmarkScriptCost is the time a node spends in one script call (INFO
// commandstats usec per EVAL, EVALSHA, FCALL) on the paths a Lock takes: an
// uncontended acquire and release, and a contended section's refused
// acquire (the waiter queues) and release (the lock goes to that waiter),
// with the restart guard on (a declared node) and off. redis-cpu-µs/call is
// the server's whole CPU (INFO cpu) per call, networking included.
//
//	go test -run '^$' -bench ScriptCost -count 5 ./node
func BenchmarkScriptCost(b *testing.B) {
	cluster := redlocktest.Start(b, 1)
	admin := cluster.Admin(b, 0)
	if err := node.Declare(context.Background(), admin, "redlock:"); err != nil {
		b.Fatal(err)
	}
	n := node.New(0, cluster.Addrs()[0], cluster.Clients(b)[0])
	b.Cleanup(n.Wait)
	runs := 0
	for _, guard := range []time.Duration{30 * time.Second, 0} {
		for _, path := range []struct {
			name string
			run  func(b *testing.B, n *node.Node, keys node.Keys) int
		}{{"uncontended", uncontendedCycles}, {"contended", contendedSections}} {
			b.Run(fmt.Sprintf("path=%s/guard=%v", path.name, guard > 0), func(b *testing.B) {
				runs++ // each run of a sub-benchmark (b.N grows) on a lock of its own
				keys := keysOf(fmt.Sprintf("redlock:{cost-%d}", runs))
				keys.Fence, keys.Guard = "", guard
				before := serverCost(b, admin)
				calls := path.run(b, n, keys)
				spent := serverCost(b, admin).minus(before)
				b.ReportMetric(spent.usec/float64(spent.calls), "µs/script")
				b.ReportMetric(spent.cpu/float64(spent.calls), "redis-cpu-µs/call")
				b.ReportMetric(float64(spent.calls)/float64(calls), "scripts/call")
			})
		}
	}
}

// uncontendedCycles runs b.N acquire+release cycles; it returns the calls.
func uncontendedCycles(b *testing.B, n *node.Node, keys node.Keys) int {
	ctx := context.Background()
	w := node.Waiter{Ticket: 1, Lifetime: 30 * time.Second, Channel: "cost"}
	for i := range b.N {
		hold := "h." + strconv.Itoa(i)
		got, err := n.AcquireQueued(ctx, nil, keys, "owner-a", hold, 30*time.Second, w, time.Second)
		if err != nil || !got.Granted {
			b.Fatalf("acquire = %+v, %v", got, err)
		}
		if r, _, err := n.Release(ctx, keys, "owner-a", hold, 0, time.Second); err != nil || r != node.LockDeleted {
			b.Fatalf("release = %v, %v", r, err)
		}
	}
	return 2 * b.N
}

// contendedSections runs b.N sections of two owners taking turns: the
// waiter's acquire is refused and queues it, the holder's release hands
// the lock to it, and the roles swap; it returns the calls.
func contendedSections(b *testing.B, n *node.Node, keys node.Keys) int {
	ctx := context.Background()
	owners := []string{"owner-a", "owner-b"}
	waiter := func(i int) node.Waiter {
		return node.Waiter{Ticket: int64(i + 2), Lifetime: 30 * time.Second, Channel: "cost-" + owners[i%2]}
	}
	if got, err := n.AcquireQueued(ctx, nil, keys, owners[0], "h.0", 30*time.Second, waiter(0), time.Second); err != nil || !got.Granted {
		b.Fatalf("first acquire = %+v, %v", got, err)
	}
	for i := range b.N {
		holder, next := owners[i%2], owners[(i+1)%2]
		got, err := n.AcquireQueued(ctx, nil, keys, next, "h."+strconv.Itoa(i+1), 30*time.Second, waiter(i+1), time.Second)
		if err != nil || got.Granted {
			b.Fatalf("waiter's acquire = %+v, %v; want refused", got, err)
		}
		r, who, err := n.Release(ctx, keys, holder, "h."+strconv.Itoa(i), 0, time.Second)
		if err != nil || r != node.LockDeleted || who == "" {
			b.Fatalf("release = %v %q, %v; want the lock handed", r, who, err)
		}
	}
	return 2 * b.N
}

type cost struct {
	calls     int64
	usec, cpu float64 // µs in scripts; µs of server CPU
}

func (c cost) minus(o cost) cost { return cost{c.calls - o.calls, c.usec - o.usec, c.cpu - o.cpu} }

// serverCost reads the node's script calls and time (INFO commandstats)
// and its CPU time (INFO cpu).
func serverCost(b *testing.B, admin *redis.Client) cost {
	info, err := admin.Info(context.Background(), "commandstats", "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var c cost
	for _, line := range strings.Split(info, "\r\n") {
		name, fields, _ := strings.Cut(line, ":")
		switch name {
		case "cmdstat_eval", "cmdstat_evalsha", "cmdstat_fcall":
			for _, f := range strings.Split(fields, ",") {
				k, v, _ := strings.Cut(f, "=")
				x, _ := strconv.ParseFloat(v, 64)
				switch k {
				case "calls":
					c.calls += int64(x)
				case "usec":
					c.usec += x
				}
			}
		case "used_cpu_sys", "used_cpu_user":
			x, _ := strconv.ParseFloat(fields, 64)
			c.cpu += x * 1e6
		}
	}
	return c
}

package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest"
)

// TestInspect: inspect shows the holder that redlock run gave its command
// (REDLOCK_OWNER) on every node, and the fair waiters queued behind it in
// arrival order with live heartbeats.
func TestInspect(t *testing.T) {
	t.Parallel()
	env := nodesEnvFor(redlocktest.Start(t, 3).URLs())
	dir := t.TempDir()
	ownerFile := filepath.Join(dir, "owner")
	holder := startCLI(t, env, "run", "-fair", "-name", "jobs", "--", "sh", "-c", `echo "$REDLOCK_OWNER" > "$0"; exec sleep 20`, ownerFile)
	owner := strings.TrimSpace(waitForFile(t, ownerFile, 10*time.Second))

	var waiters []*cli
	for range 2 {
		waiters = append(waiters, startCLI(t, env, "run", "-fair", "-name", "jobs", "-wait", "20s", "--", "true"))
		time.Sleep(50 * time.Millisecond) // distinct tickets, in this order
	}
	var rep lockReport
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := runCLI(t, env, "inspect", "-json", "jobs")
		c.expect(t, exitOK)
		rep = lockReport{}
		if err := json.Unmarshal(c.stdout.Bytes(), &rep); err != nil {
			t.Fatalf("inspect -json: %v: %s", err, c.stdout.String())
		}
		queued := true
		for _, n := range rep.Nodes {
			queued = queued && len(n.Queue) == len(waiters)
		}
		if queued || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if rep.Name != "jobs" || rep.Holder != owner || rep.HeldOn != 3 || rep.Reachable != 3 || rep.Quorum != 2 {
		t.Errorf("report: name %q holder %q on %d nodes, %d reachable, quorum %d; want jobs, %q on 3, 3, 2",
			rep.Name, rep.Holder, rep.HeldOn, rep.Reachable, rep.Quorum, owner)
	}
	for _, n := range rep.Nodes {
		if !n.Reachable || n.Owner != owner || n.Holds != 1 || n.PTTLms <= 0 || n.PTTLms > 30_000 {
			t.Errorf("node %d: reachable %v owner %q holds %d pttl %dms; want the holder, 1 hold, 0 < pttl <= 30s",
				n.Node, n.Reachable, n.Owner, n.Holds, n.PTTLms)
		}
		if len(n.Queue) != len(waiters) {
			t.Errorf("node %d: %d queued, want %d", n.Node, len(n.Queue), len(waiters))
			continue
		}
		for i, w := range n.Queue {
			if w.Owner == "" || w.Owner == owner || w.HeartbeatMS == nil || *w.HeartbeatMS <= 0 {
				t.Errorf("node %d: waiter %d: %+v; want another owner with a live heartbeat", n.Node, i, w)
			}
			if i > 0 && w.Ticket <= n.Queue[i-1].Ticket {
				t.Errorf("node %d: tickets out of order: %d then %d", n.Node, n.Queue[i-1].Ticket, w.Ticket)
			}
		}
	}
	if s := rep.Summary; s == nil || !s.Held || s.Owner != node.Fingerprint(owner) || s.Holds != 1 || s.Waiting != len(waiters) || s.Error != "" {
		t.Errorf("summary (Client.Inspect): %+v; want held by %s, 1 hold, %d waiting", s, node.Fingerprint(owner), len(waiters))
	}
	table := runCLI(t, env, "inspect", "jobs")
	table.expect(t, exitOK)
	for _, want := range []string{"held by " + owner + " on 3 nodes", "queue on node 2:", "heartbeat ends in",
		"Client.Inspect: held by owner fingerprint " + node.Fingerprint(owner) + ", 1 holds"} {
		if !strings.Contains(table.stdout.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.stdout.String())
		}
	}

	if err := holder.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	holder.wait()
	for _, w := range waiters {
		w.wait()
		w.expect(t, exitOK)
	}
}

// TestInspect_quarantinedNodes: inspect says which nodes would not vote
// and why: one that lost its data (FLUSHALL: no marker, the guard counts
// from the flush), one whose clock
// runs ten times fast (libfaketime); the third votes.
func TestInspect_quarantinedNodes(t *testing.T) {
	t.Parallel()
	libfaketime := redlocktest.RequireFaketime(t)
	cluster := redlocktest.Start(t, 3)
	cluster.Servers[2].SetEnv(redlocktest.FastClock(libfaketime, 10))
	if err := cluster.Servers[2].Restart(false); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := node.Declare(ctx, cluster.Admin(t, 2), "redlock:"); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Admin(t, 1).FlushAll(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	env := nodesEnvFor(cluster.URLs())
	c := runCLI(t, env, "inspect", "-json", "jobs")
	c.expect(t, exitOK)
	var rep lockReport
	if err := json.Unmarshal(c.stdout.Bytes(), &rep); err != nil {
		t.Fatalf("inspect -json: %v: %s", err, c.stdout.String())
	}
	want := []struct {
		votes, fast bool
		marker      string
	}{{true, false, markerDeclared}, {false, false, markerMissing}, {false, true, markerDeclared}}
	for i, n := range rep.Nodes {
		if n.Votes != want[i].votes || n.ClockFast != want[i].fast || n.Marker != want[i].marker || (n.Votes == (len(n.Why) > 0)) {
			t.Errorf("node %d: votes %v, clock fast %v (x%.2f), marker %q, why %q; want %+v",
				i, n.Votes, n.ClockFast, n.ClockRate, n.Marker, n.Why, want[i])
		}
	}
	if rep.Voting != 1 {
		t.Errorf("voting %d, want 1", rep.Voting)
	}
	table := runCLI(t, env, "inspect", "jobs")
	table.expect(t, exitOK)
	for _, want := range []string{"1 vote", "node 1: quarantined: lost its data", "node 2: clock runs at least"} {
		if !strings.Contains(table.stdout.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.stdout.String())
		}
	}
}

// TestInspect_allNodesDown: with no node answering, inspect does not call
// the lock free: it says nothing is known, and exits 125.
func TestInspect_allNodesDown(t *testing.T) {
	t.Parallel()
	env := nodesEnvFor([]string{closedPort(t), closedPort(t), closedPort(t)})
	c := runCLI(t, env, "inspect", "-timeout", "300ms", "jobs")
	c.expect(t, exitError)
	if out := c.stdout.String(); !strings.Contains(out, "no node answered") || strings.Contains(out, "free") {
		t.Errorf("inspect with every node down printed:\n%s", out)
	}
}

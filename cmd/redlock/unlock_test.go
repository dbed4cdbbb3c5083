package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest"
)

// TestUnlock_forceTakesTheLockFromARunningHolder: redlock unlock -force
// frees a lock that a redlock run holds; the run's lease is lost at its
// next renewal, so it stops CMD and exits 123; another run gets the lock
// at once. Without -force nothing happens (exit 2).
func TestUnlock_forceTakesTheLockFromARunningHolder(t *testing.T) {
	t.Parallel()
	cluster := redistest.Start(t, 3)
	env := nodesEnvFor(cluster.URLs())
	started := filepath.Join(t.TempDir(), "started")
	holder := startCLI(t, env, "run", "-name", "stuck", "-ttl", "3s", "-grace", "1s", "--", "sh", "-c", `echo started > "$0"; exec sleep 30`, started)
	waitForFile(t, started, 10*time.Second)

	refused := runCLI(t, env, "unlock", "stuck")
	refused.expect(t, exitUsage, "only -force unlocks")
	forced := runCLI(t, env, "unlock", "-force", "stuck")
	forced.expect(t, exitOK)
	if !strings.Contains(forced.stdout.String(), `lock "stuck" forced open on every node: owner fingerprint`) {
		t.Errorf("unlock -force said %q", forced.stdout.String())
	}
	next := runCLI(t, env, "run", "-name", "stuck", "-wait", "2s", "--", "true")
	next.expect(t, exitOK)

	done := make(chan struct{})
	go func() { holder.wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second): // a renewal (every TTL/3) plus -grace
		t.Fatal("the forced holder's run did not end within 5 s")
	}
	holder.expect(t, exitLost, "ForceUnlock")
}

// TestUnlock_majorityDown: with 2 of 3 nodes down, unlock -force says it
// could not (exit 125, no quorum).
func TestUnlock_majorityDown(t *testing.T) {
	t.Parallel()
	env := nodesEnvFor([]string{redistest.Start(t, 1).URLs()[0], closedPort(t), closedPort(t)})
	c := runCLI(t, env, "unlock", "-force", "-timeout", "200ms", "stuck")
	c.expect(t, exitError, "no quorum", "reached 1 of 3 nodes")
}

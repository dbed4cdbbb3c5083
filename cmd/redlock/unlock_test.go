package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock/redlocktest"
)

// TestUnlock_forceTakesTheLockFromARunningHolder: redlock unlock -force
// frees a lock that a redlock run holds; the run's lease is lost at its
// next renewal, so it stops CMD and exits 123; another run gets the lock
// at once. Without -force nothing happens (exit 2).
func TestUnlock_forceTakesTheLockFromARunningHolder(t *testing.T) {
	t.Parallel()
	cluster := redlocktest.Start(t, 3)
	env := nodesEnvFor(cluster.URLs())
	started := filepath.Join(t.TempDir(), "started")
	holder := startCLI(t, env, "run", "-name", "stuck", "-ttl", "3s", "-grace", "1s", "--", "sh", "-c", `echo started > "$0"; exec sleep 30`, started)
	waitForFile(t, started, 10*time.Second)

	refused := runCLI(t, env, "unlock", "stuck")
	refused.expect(t, exitUsage, "only -force unlocks")
	forced := runCLI(t, env, "unlock", "-force", "stuck")
	forced.expect(t, exitOK)
	// The lock was not fenced: nothing is said of a fence.
	if out := forced.stdout.String(); !strings.Contains(out, `lock "stuck" forced open: owner fingerprint`) ||
		!strings.Contains(out, "lost 1 hold; its holds were removed on 3 of 3 nodes") || strings.Contains(out, "fence") {
		t.Errorf("unlock -force said %q", out)
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
	// The holder names as many nodes as the forcer did.
	holder.expect(t, exitLost, "its holds were removed on 3 of 3 nodes (ForceUnlock)")
}

// TestUnlock_forcedHolderWhoseCommandEndsFirst: a fenced holder forced
// open whose command exits before its next renewal learns of the loss at
// the release: it says so in one line (no "release: redlock: ...", no
// TTL to wait for: nothing is left) and exits 123. The forcer says how
// the fence moved. A normal run prints nothing.
func TestUnlock_forcedHolderWhoseCommandEndsFirst(t *testing.T) {
	t.Parallel()
	env := nodesEnvFor(redlocktest.Start(t, 3).URLs())
	dir := t.TempDir()
	started, forcedFile := filepath.Join(dir, "started"), filepath.Join(dir, "forced")
	holder := startCLI(t, env, "run", "-name", "brief", "-fencing", "-ttl", "30s", "--", "sh", "-c",
		`echo started > "$0"; while [ ! -e "$1" ]; do sleep 0.01; done`, started, forcedFile)
	waitForFile(t, started, 10*time.Second)

	forced := runCLI(t, env, "unlock", "-force", "brief")
	forced.expect(t, exitOK)
	if out := forced.stdout.String(); !strings.Contains(out, "its holds were removed on 3 of 3 nodes; fence raised from ") {
		t.Errorf("unlock -force said %q", out)
	}
	if err := os.WriteFile(forcedFile, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	holder.wait()
	holder.expect(t, exitLost, `redlock run: lock "brief" lost while sh ran, found at the release (lock not held: hold found on 0 of 3 nodes;`)
	for _, wrong := range []string{"release:", "redlock: lock", "TTL"} {
		if strings.Contains(holder.stderr.String(), wrong) {
			t.Errorf("holder's stderr has %q: %s", wrong, holder.stderr.String())
		}
	}

	normal := runCLI(t, env, "run", "-name", "brief", "--", "true")
	normal.expect(t, exitOK)
	if normal.stderr.Len() > 0 {
		t.Errorf("a normal run printed %q", normal.stderr.String())
	}
}

// TestUnlock_majorityDown: with 2 of 3 nodes down, unlock -force says it
// could not (exit 125, no quorum).
func TestUnlock_majorityDown(t *testing.T) {
	t.Parallel()
	env := nodesEnvFor([]string{redlocktest.Start(t, 1).URLs()[0], closedPort(t), closedPort(t)})
	c := runCLI(t, env, "unlock", "-force", "-timeout", "200ms", "stuck")
	c.expect(t, exitError, "no quorum", "reached 1 of 3 nodes")
}

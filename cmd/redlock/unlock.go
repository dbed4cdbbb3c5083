package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/quorumlock/redlock"
)

const unlockUsage = `usage: redlock unlock -force [-nodes URLs] [-prefix redlock:] NAME

Takes the lock NAME from whoever holds it (Client.ForceUnlock), for an
operator whose holder is stuck: every hold of it is removed on every node
that answers, the fence is raised above every counter seen (a token
granted from now on is greater than the old holder's), and the first
waiter, if any, gets the lock. The old holder is not told: its lease ends
at its first renewal after this (the watchdog renews every third of the
TTL), or at its release if that comes first (a redlock run exits 123
either way), and until then it may still act under it, so only fencing
tokens protect the resource meanwhile. -force is required: it says you
mean it.

Exit statuses:
  0    done on every node
  2    bad usage (no -force, no NAME)
  125  some node did not answer: done on the others (with fewer than a
       quorum, the holds left there expire at their TTL)

Example:
  redlock unlock -force -nodes redis://10.0.0.1:6379,redis://10.0.0.2:6379,redis://10.0.0.3:6379 nightly-backup

Flags:
`

// unlockConfig holds unlock's flags.
type unlockConfig struct {
	nodeOptions
	name string
}

// parseUnlockFlags returns unlock's config, or false and the exit status
// after it printed the help or one usage error line.
func parseUnlockFlags(args []string, stderr io.Writer) (unlockConfig, int, bool) {
	var cfg unlockConfig
	f := newFlags("unlock", unlockUsage, stderr)
	f.nodeFlags(&cfg.nodeOptions, "key prefix the lock was taken with")
	f.timeoutFlag(time.Second, "how long each node may take to answer")
	force := f.Bool("force", false, "take the lock from its holder (required)")
	if code, ok := f.parse(args); !ok {
		return cfg, code, false
	}
	err := f.readNodes()
	switch {
	case f.NArg() == 0:
		return cfg, f.bad("no lock name: redlock unlock -force NAME"), false
	case f.NArg() > 1:
		return cfg, f.bad("unexpected argument %q after the lock name", f.Arg(1)), false
	case !*force:
		return cfg, f.bad("only -force unlocks: it takes the lock from whoever holds it"), false
	case err != nil:
		return cfg, f.bad("%v", err), false
	case cfg.timeout <= 0:
		return cfg, f.bad("-timeout must be positive, got %v", cfg.timeout), false
	}
	cfg.name = f.Arg(0)
	return cfg, exitOK, true
}

// unlock is the unlock subcommand.
func unlock(args []string, stdout, stderr io.Writer) int {
	cfg, code, ok := parseUnlockFlags(args, stderr)
	if !ok {
		return code
	}
	client, err := redlock.Dial(cfg.urls, redlock.WithKeyPrefix(cfg.prefix), redlock.WithNodeTimeout(cfg.timeout))
	if err != nil {
		fmt.Fprintf(stderr, "redlock unlock: %s (see redlock unlock -h)\n", oneLine(err))
		return exitUsage
	}
	defer func() { _ = client.Close() }()
	ctx := context.Background()
	before, inspectErr := client.Inspect(ctx, cfg.name)
	if err := client.ForceUnlock(ctx, cfg.name); err != nil {
		fmt.Fprintf(stderr, "redlock unlock: %s\n", plain(err))
		return exitError
	}
	fmt.Fprintln(stdout, forcedReport(ctx, client, before, inspectErr))
	return exitOK
}

// forcedReport says what ForceUnlock, done on every node, took: in the
// holder's terms (its lease is lost with "its holds were removed on K of
// N nodes"), and the fence only when the lock was fenced.
func forcedReport(ctx context.Context, client *redlock.Client, before redlock.LockInfo, inspectErr error) string {
	name := before.Name
	switch {
	case inspectErr != nil:
		return fmt.Sprintf("lock %q forced open on all %d nodes", name, len(before.Nodes))
	case !before.Held:
		return fmt.Sprintf("lock %q was not held by any owner on a quorum; every hold left was removed", name)
	}
	on := 0
	for _, n := range before.Nodes {
		if n.Err == nil && n.Owner == before.Owner && (n.Holds > 0 || n.Handed) {
			on++
		}
	}
	report := fmt.Sprintf("lock %q forced open: owner fingerprint %s lost %s; its holds were removed on %d of %d nodes",
		name, before.Owner, plural(before.Holds, "hold"), on, len(before.Nodes))
	after, err := client.Inspect(ctx, name)
	if err != nil {
		return report
	}
	if wait := forcedFor(after); wait > 0 {
		// The lock was handed to a waiter, not claimed yet: the waiter may
		// still take its lease from the handing's notices (see ForceUnlock).
		report += fmt.Sprintf("; it was handed to a waiter, which may still take it from the notices: no one gets it for up to %v", wait.Round(time.Millisecond))
	}
	// An unfenced lock's counter is 0: no token was given out, none to
	// refuse, so there is nothing to say about it.
	if before.Fence != 0 {
		report += fmt.Sprintf("; fence raised from %d to %d: tokens granted from now on are greater than the old holder's",
			before.Fence, after.Fence)
	}
	return report
}

// plural is "1 hold", "2 holds".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

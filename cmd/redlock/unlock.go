package main

import (
	"context"
	"errors"
	"flag"
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

// unlock is the unlock subcommand.
func unlock(args []string, stdout, stderr io.Writer) int {
	var nodes, prefix string
	var force bool
	var timeout time.Duration
	flags := flag.NewFlagSet("redlock unlock", flag.ContinueOnError)
	flags.SetOutput(stderr)
	flags.Usage = func() {
		fmt.Fprint(flags.Output(), unlockUsage)
		flags.PrintDefaults()
	}
	flags.StringVar(&nodes, "nodes", "", nodesFlagHelp)
	flags.StringVar(&prefix, "prefix", redlock.DefaultKeyPrefix, "key prefix the lock was taken with")
	flags.BoolVar(&force, "force", false, "take the lock from its holder (required)")
	flags.DurationVar(&timeout, "timeout", time.Second, "how long each node may take to answer")
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	bad := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "redlock unlock: "+format+" (see redlock unlock -h)\n", args...)
		return exitUsage
	}
	urls, err := nodeURLs(nodes)
	switch {
	case flags.NArg() == 0:
		return bad("no lock name: redlock unlock -force NAME")
	case flags.NArg() > 1:
		return bad("unexpected argument %q after the lock name", flags.Arg(1))
	case !force:
		return bad("only -force unlocks: it takes the lock from whoever holds it")
	case err != nil:
		return bad("%v", err)
	case timeout <= 0:
		return bad("-timeout must be positive, got %v", timeout)
	}
	name := flags.Arg(0)
	client, err := redlock.Dial(urls, redlock.WithKeyPrefix(prefix), redlock.WithNodeTimeout(timeout))
	if err != nil {
		return bad("%s", oneLine(err))
	}
	defer func() { _ = client.Close() }()
	ctx := context.Background()
	before, inspectErr := client.Inspect(ctx, name)
	if err := client.ForceUnlock(ctx, name); err != nil {
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
	// An unfenced lock's counter is 0: no token was given out, none to
	// refuse, so there is nothing to say about it.
	if before.Fence == 0 {
		return report
	}
	if after, err := client.Inspect(ctx, name); err == nil {
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

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	"github.com/quorumlock/redlock/node"
	"github.com/redis/go-redis/v9"
)

const initUsage = `usage: redlock init [-nodes URLs] [-prefix redlock:] [-timeout 5s] [URL...]

Declares brand-new nodes new, so that they vote at once. A node whose
process started less than the restart guard ago (by default the longest
TTL, 30 s) does not vote until the guard has passed since its start: it
may have restarted and forgotten leases it granted. A node that never
held a lock has nothing to forget, and init tells it so (node.Declare),
for its current process: a restart undoes it. Nodes up longer than the
guard vote without it.

Declare only nodes that never served a lock: a node restarted empty looks
brand-new to every check, and declaring it would let it vote for leases
it forgot. Run init when you create nodes, never as a step that re-runs
on every start.

init refuses a node that is not new, and says why: one that holds keys
under -prefix (it names up to 10), one that loaded keys from disk at its
start (or cannot say: Redis before 7), one that dropped keys since (a
flush, an eviction), one whose marker records a loss of data. Such a node
votes as the restart guard judges it; its marker is left as it was. The
other nodes are declared all the same: each node's vote is judged on its
own.

Nodes are the URLs given as arguments, or -nodes, or $REDLOCK_NODES. A
node that refuses connections (still starting) is tried again until
-timeout.

Exit statuses:
  0    every node was declared new
  2    bad usage (nothing was declared)
  125  some node was refused or did not answer (the others were declared)

Example:
  redlock init redis://10.0.0.1:6379 redis://10.0.0.2:6379 redis://10.0.0.3:6379

Flags:
`

// parseInitFlags returns init's config, or false and the exit status
// after it printed the help or one usage error line.
func parseInitFlags(args []string, stderr io.Writer) (nodeOptions, int, bool) {
	var cfg nodeOptions
	f := newFlags("init", initUsage, stderr)
	f.nodeFlags(&cfg, "key prefix of the locks the nodes will hold (the marker is PREFIXnode)")
	f.timeoutFlag(5*time.Second, "how long each node may take: to accept connections (one still starting) and to answer (it scans the keys under -prefix)")
	// Flags may also follow the URLs: "redlock init URL... -prefix x:".
	given, code, ok := f.parseAll(args)
	if !ok {
		return cfg, code, false
	}
	var err error
	switch {
	case len(given) > 0 && f.nodes != "":
		return cfg, f.bad("give the nodes either as arguments or with -nodes, not both"), false
	case len(given) > 0:
		cfg.urls, err = parseNodeList(given, "arguments")
	default:
		err = f.readNodes()
	}
	switch {
	case err != nil:
		return cfg, f.bad("%v", err), false
	case cfg.prefix == "":
		return cfg, f.bad("-prefix must not be empty"), false
	case cfg.timeout <= 0:
		return cfg, f.bad("-timeout must be positive, got %v", cfg.timeout), false
	}
	return cfg, exitOK, true
}

// initNodes is the init subcommand: one line per node, declared ones on
// stdout, the others on stderr.
func initNodes(args []string, stdout, stderr io.Writer) int {
	cfg, code, ok := parseInitFlags(args, stderr)
	if !ok {
		return code
	}
	ns, err := dialNodes(cfg.urls, cfg.timeout)
	if err != nil {
		fmt.Fprintf(stderr, "redlock init: %v\n", err)
		return exitUsage
	}
	defer ns.close()
	errs := ns.declare(context.Background(), cfg.prefix, cfg.timeout)
	failed := 0
	for i, err := range errs {
		if err == nil {
			fmt.Fprintf(stdout, "node %d (%s): declared new: it votes at once (until it restarts)\n", i, ns.addrs[i])
			continue
		}
		failed++
		fmt.Fprintf(stderr, "redlock init: node %d (%s): %s\n", i, ns.addrs[i], refusal(err))
	}
	if failed > 0 {
		fmt.Fprintf(stderr, "redlock init: declared %d of %d nodes\n", len(errs)-failed, len(errs))
		return exitError
	}
	return exitOK
}

// declare declares every node new at once (node.Declare, each within
// timeout) and returns each node's error, in node order. redlock init and
// the demo's own nodes both come this way.
func (ns *nodeSet) declare(ctx context.Context, prefix string, timeout time.Duration) []error {
	return ns.each(ctx, timeout, func(ctx context.Context, client *redis.Client) error {
		return declareOne(ctx, client, prefix)
	})
}

// declareOne declares one node, trying again while it refuses connections
// and ctx lasts: init often runs as new nodes start (the compose
// playground's one-shot service), before they listen.
func declareOne(ctx context.Context, client *redis.Client, prefix string) error {
	for {
		err := node.Declare(ctx, client, prefix)
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// refusal says why a node was not declared, and what happens to it.
func refusal(err error) string {
	var notNew *node.NotNew
	switch {
	case errors.As(err, &notNew) && len(notNew.Keys) > 0:
		// Lock keys mean the node has served locks: it is not new, and
		// votes as the restart guard judges it (see redlock inspect).
		return "refused: " + notNew.Error() + "; it votes as the restart guard judges it (redlock inspect shows how)"
	case errors.As(err, &notNew):
		return "refused: " + notNew.Error()
	}
	return "not declared: " + oneLine(err)
}

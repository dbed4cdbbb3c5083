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

const initUsage = `usage: redlock init [-nodes URLs] [-prefix redlock:] [-timeout 5s] [-force] [URL...]
       redlock init -lower-guard d [-nodes URLs] [-prefix redlock:] [-timeout 5s] [URL...]

Declares a set of brand-new nodes new, so that they vote at once. A node
whose process started less than the restart guard ago (by default the
longest TTL, 30 s) does not vote until the guard has passed since its
start: it may have restarted and forgotten leases it granted. A node that
never held a lock has nothing to forget, and init tells it so
(node.DeclareSet), for the data it holds now: a restart undoes it. Nodes
up longer than the guard vote without it.

A node restarted empty looks brand-new to every check of its own. So init
judges the set: it declares every node, or none. It checks every node
first and declares none if any node holds keys under -prefix (it names up
to 10), voted so recently that a lease it granted may still be live,
loaded keys from disk at its start (or cannot say: Redis before 7),
dropped keys since (a flush, an eviction), has a marker recording a loss
of data, or does not answer: the set has served locks, and a node that
looks new may have forgotten a live lease. Its nodes then vote as the
restart guard judges them (redlock inspect shows when). Run init when you
create nodes, never as a step that re-runs on every start.

-force declares each node that passes its own checks, whatever the
others show. It is the way to break the lock: on a set that served locks,
a node restarted empty under a live lease gets declared and votes for a
second owner. Use it only on nodes you know never served a lock.

A node may be a Redis Cluster (redis+cluster://host:port?addr=host2:port):
init checks each of its master shards as it checks a node, then declares
every slot each serves (a Cluster keeps a marker per slot). A Sentinel-
managed node (redis://sentinel:26379?master_name=M) is declared on its
master of the moment.

-lower-guard d declares nothing: it lowers the longest restart guard each
node records (the longest TTL any Client used there, which only grows)
to d, so that after a Client once used a long TTL a restart waits d, not
that TTL. A node refuses while it does not vote, or while any key under
-prefix lives longer than d (a lease it granted may need the longer
guard): try again when that key has gone. A running Client carries the
longest guard it has heard of until it is made again. Not on a Redis
Cluster member.

Never do these to a node that serves locks: the guard cannot see them, or
not always (docs/restart-guard.md, "What an operator must never do"):
  - delete the library's keys by hand (DEL, UNLINK, RENAME under -prefix);
    use redlock unlock -force
  - reassign a Cluster slot without its data (CLUSTER SETSLOT NODE issued
    elsewhere, an edited nodes.conf)
  - step the node's clock forward, or boot it with its clock behind and
    correct it after Redis started
  - run CONFIG RESETSTAT (it zeroes the counts the guard compares: deny
    it to monitoring users, ACL -config|resetstat)
  - MIGRATE lock keys off a node without COPY, or COPY or RENAME keys
    onto the library's
  - run init as a step that re-runs on every start, or with -force on a
    set that served locks

Nodes are the URLs given as arguments, or -nodes, or $REDLOCK_NODES. A
node that refuses connections (still starting) is tried again until
-timeout.

Exit statuses:
  0    every node was declared new
  2    bad usage (nothing was declared)
  125  some node was refused or did not answer: nothing was declared
       (with -force: the others were)

Example:
  redlock init redis://10.0.0.1:6379 redis://10.0.0.2:6379 redis://10.0.0.3:6379

Flags:
`

// initConfig is init's config.
type initConfig struct {
	nodeOptions
	force bool          // declare each node on its own (node.Declare)
	lower time.Duration // -lower-guard: lower the nodes' longest guard to it instead
}

// parseInitFlags returns init's config, or false and the exit status
// after it printed the help or one usage error line.
func parseInitFlags(args []string, stderr io.Writer) (initConfig, int, bool) {
	var cfg initConfig
	f := newFlags("init", initUsage, stderr)
	f.nodeFlags(&cfg.nodeOptions, "key prefix of the locks the nodes will hold (the marker is PREFIXnode)")
	f.timeoutFlag(5*time.Second, "how long each node may take: to accept connections (one still starting) and to answer (it scans the keys under -prefix)")
	f.BoolVar(&cfg.force, "force", false, "declare each node that passes its own checks, whatever the others show: may break a live lock")
	f.DurationVar(&cfg.lower, "lower-guard", 0, "declare nothing: lower the longest restart guard each node records to this, where no key outlives it")
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
	case cfg.lower < 0 || (cfg.lower > 0 && cfg.force):
		return cfg, f.bad("-lower-guard must be positive, and not given with -force"), false
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
	if cfg.lower > 0 {
		return ns.lowerGuard(cfg, stdout, stderr)
	}
	if cfg.force {
		return ns.declareForced(cfg, stdout, stderr)
	}
	return ns.declareSet(cfg, stdout, stderr)
}

// declareSet declares every node or none (node.DeclareSet), once every
// node accepts connections or its -timeout has passed: a node that does
// not answer then is named with the others' refusals.
func (ns *nodeSet) declareSet(cfg initConfig, stdout, stderr io.Writer) int {
	ns.each(context.Background(), cfg.timeout, func(ctx context.Context, client redis.UniversalClient) error {
		return retryRefused(ctx, func() error { return client.Ping(ctx).Err() })
	})
	// Two calls per node: the check, then the declaration.
	ctx, cancel := context.WithTimeout(context.Background(), 2*cfg.timeout)
	defer cancel()
	err := node.DeclareSet(ctx, ns.scripters(), cfg.prefix)
	var refused *node.SetRefused
	if err != nil && !errors.As(err, &refused) {
		fmt.Fprintf(stderr, "redlock init: nothing declared: %s\n", oneLine(err))
		return exitError
	}
	failed := map[int]bool{}
	if refused != nil {
		for _, n := range refused.Nodes {
			failed[n.Node] = true
			fmt.Fprintf(stderr, "redlock init: node %d (%s): %s\n", n.Node, ns.addrs[n.Node], refusal(n.Err))
		}
	}
	if refused == nil || refused.Declared > 0 {
		for i, addr := range ns.addrs {
			if !failed[i] {
				fmt.Fprintf(stdout, "node %d (%s): declared new: it votes at once (until it restarts)\n", i, addr)
			}
		}
	}
	switch {
	case refused == nil:
		return exitOK
	case refused.Declared > 0: // refused between the check and the declaration: a lock taken meanwhile
		fmt.Fprintf(stderr, "redlock init: declared %d of %d nodes: the others refused after the check passed\n",
			refused.Declared, refused.Total)
	default:
		fmt.Fprintf(stderr, "redlock init: declared none of %d nodes: the set has served locks or a node did not answer, "+
			"so a node that looks new may have restarted empty under a live lease; the nodes vote once the restart guard "+
			"has passed (redlock inspect shows when); -force declares them anyway and may break a live lock\n", refused.Total)
	}
	return exitError
}

// scripters is the node list as node.DeclareSet takes it.
func (ns *nodeSet) scripters() []redis.Scripter {
	clients := make([]redis.Scripter, len(ns.clients))
	for i, client := range ns.clients {
		clients[i] = client
	}
	return clients
}

// declareForced is init -force: each node declared on its own, as the
// demo declares its own nodes.
func (ns *nodeSet) declareForced(cfg initConfig, stdout, stderr io.Writer) int {
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
		fmt.Fprintf(stderr, "redlock init: -force: declared %d of %d nodes; if the set served a lock that may still be live, "+
			"the declared nodes may vote for a second owner\n", len(errs)-failed, len(errs))
		return exitError
	}
	return exitOK
}

// declare declares every node new at once, each on its own (node.Declare,
// each within timeout), and returns each node's error, in node order:
// init -force, and the demo for the nodes it has just started.
func (ns *nodeSet) declare(ctx context.Context, prefix string, timeout time.Duration) []error {
	return ns.each(ctx, timeout, func(ctx context.Context, client redis.UniversalClient) error {
		return retryRefused(ctx, func() error { return node.Declare(ctx, client, prefix) })
	})
}

// retryRefused calls f again while the node refuses connections and ctx
// lasts: init often runs as new nodes start (the compose playground's
// one-shot service), before they listen.
func retryRefused(ctx context.Context, f func() error) error {
	for {
		err := f()
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

// lowerGuard is init -lower-guard: each node's record of the longest guard
// lowered on its own (node.LowerGuard), where safe.
func (ns *nodeSet) lowerGuard(cfg initConfig, stdout, stderr io.Writer) int {
	from := make([]time.Duration, len(ns.clients))
	index := make(map[redis.UniversalClient]int, len(ns.clients))
	for i, client := range ns.clients {
		index[client] = i
	}
	errs := ns.each(context.Background(), cfg.timeout, func(ctx context.Context, client redis.UniversalClient) error {
		var err error
		from[index[client]], err = node.LowerGuard(ctx, client, cfg.prefix, cfg.lower)
		return err
	})
	failed := 0
	for i, err := range errs {
		switch {
		case err != nil:
			failed++
			fmt.Fprintf(stderr, "redlock init: node %d (%s): guard not lowered: %s\n", i, ns.addrs[i], oneLine(err))
		case from[i] > cfg.lower:
			fmt.Fprintf(stdout, "node %d (%s): longest guard lowered from %v to %v\n", i, ns.addrs[i], from[i], cfg.lower)
		default:
			fmt.Fprintf(stdout, "node %d (%s): longest guard %v, not longer than %v: kept\n", i, ns.addrs[i], from[i], cfg.lower)
		}
	}
	if failed > 0 {
		return exitError
	}
	return exitOK
}

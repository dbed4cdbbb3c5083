package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"time"

	"github.com/quorumlock/redlock"
)

const runUsage = `usage: redlock run [-nodes URLs] -name NAME [flags] -- CMD [ARGS...]

Takes the lock NAME over the nodes (renewed every TTL/3 while CMD runs),
runs CMD with redlock's stdin, stdout and stderr, releases the lock when CMD
exits and exits with CMD's status. Two "redlock run" on one name never hold
the lock at the same time; a CMD whose lock was lost can run on until it
stops at SIGTERM or is killed after -grace (below). SIGINT, SIGTERM, SIGHUP
and SIGQUIT are passed on to CMD. CMD stays in redlock's process group so
that it can use the terminal; a Ctrl-C there reaches it directly as well.
If redlock itself dies (SIGKILL, a crash), CMD gets SIGKILL at once (on
Linux): no CMD runs on unsupervised while its lock expires.

If the lock is lost while CMD runs (no quorum of nodes renewed it in time,
so another holder may get it), CMD gets SIGTERM, then SIGKILL after -grace,
and redlock exits 123 whatever CMD's status: CMD must stop acting on what
the lock protects when it gets SIGTERM. Signals go to CMD's process only: a
script should exec its last command or pass them on to its children.

CMD's environment also has REDLOCK_NAME (the lock name), REDLOCK_OWNER (the
owner id: a Go program re-enters the lock with redlock.WithOwner) and, with
-fencing, REDLOCK_TOKEN (larger than that of any other owner whose lease
ended before this one was granted: pass it
to the resource so that it can refuse writes from a holder that lost the
lock without noticing).

Exit statuses:
  CMD's     CMD exited by itself (128+N when it died of signal N)
  2         bad usage (nothing was run)
  123       the lock was lost while CMD ran
  124       the lock was not acquired within -wait
  125       redlock's own failure: fewer than a quorum of nodes reachable, ...
  126, 127  CMD could not be started, CMD was not found
  128+N     redlock got signal N while waiting for the lock

Example:
  export REDLOCK_NODES=redis://10.0.0.1:6379,redis://10.0.0.2:6379,redis://10.0.0.3:6379
  redlock run -name nightly-backup -wait 0 -- /usr/local/bin/backup.sh --full

Flags:
`

// runConfig holds run's flags and command line.
type runConfig struct {
	urls     []string
	name     string
	prefix   string
	ttl      time.Duration
	wait     time.Duration
	grace    time.Duration
	fair     bool
	fencing  bool
	argv     []string // CMD and its arguments
	resolved string   // CMD's path, found before the lock is taken
}

// parseRunFlags returns the config, or false and the exit status after it
// printed the help or one usage error line.
func parseRunFlags(args []string, stderr io.Writer) (runConfig, int, bool) {
	var cfg runConfig
	var nodes string
	flags := flag.NewFlagSet("redlock run", flag.ContinueOnError)
	flags.SetOutput(stderr)
	flags.Usage = func() {
		fmt.Fprint(flags.Output(), runUsage)
		flags.PrintDefaults()
	}
	flags.StringVar(&nodes, "nodes", "", "comma-separated redis:// or rediss:// URLs, one per node (default $"+nodesEnv+")")
	flags.StringVar(&cfg.name, "name", "", "lock name (required)")
	flags.StringVar(&cfg.prefix, "prefix", redlock.DefaultKeyPrefix, "key prefix; keys are PREFIX{NAME}, PREFIX{NAME}:fence, ...")
	flags.DurationVar(&cfg.ttl, "ttl", redlock.DefaultTTL, "lease TTL: how long others wait if redlock dies without releasing")
	flags.DurationVar(&cfg.wait, "wait", 10*time.Second, "how long to wait for the lock (0 waits forever)")
	flags.DurationVar(&cfg.grace, "grace", 10*time.Second, "after a lost lock, time between CMD's SIGTERM and its SIGKILL")
	flags.BoolVar(&cfg.fair, "fair", false, "first come, first served among waiters (use it on every run of the name)")
	flags.BoolVar(&cfg.fencing, "fencing", false, "give CMD a fencing token in $REDLOCK_TOKEN")
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, exitOK, false
		}
		return cfg, exitUsage, false // flag printed the error and the usage
	}
	cfg.argv = flags.Args()
	bad := func(format string, args ...any) (runConfig, int, bool) {
		fmt.Fprintf(stderr, "redlock run: "+format+" (see redlock run -h)\n", args...)
		return cfg, exitUsage, false
	}
	urls, err := nodeURLs(nodes)
	switch {
	case err != nil:
		return bad("%v", err)
	case cfg.name == "":
		return bad("-name is required")
	case len(cfg.argv) == 0:
		return bad("no command: redlock run -name NAME -- CMD [ARGS...]")
	case cfg.ttl <= 0:
		return bad("-ttl must be positive, got %v", cfg.ttl)
	case cfg.wait < 0:
		return bad("-wait must not be negative, got %v (0 waits forever)", cfg.wait)
	case cfg.grace < 0:
		return bad("-grace must not be negative, got %v", cfg.grace)
	}
	cfg.urls = urls
	return cfg, exitOK, true
}

// runCommand is the run subcommand: parse, resolve CMD, check the nodes,
// take the lock, supervise CMD, release.
func runCommand(args []string, stderr io.Writer) int {
	cfg, code, ok := parseRunFlags(args, stderr)
	if !ok {
		return code
	}
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(stderr, "redlock run: "+format+"\n", args...)
		return code
	}
	// A command that cannot run should not make others wait for the lock.
	path, err := exec.LookPath(cfg.argv[0])
	if err != nil {
		// "/nonexistent" (a path) fails with ErrNotExist, a bare name
		// with ErrNotFound: both are "not found" (127), as in a shell.
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			return fail(exitNotFound, "%s: command not found", cfg.argv[0])
		}
		return fail(exitCannotInvoke, "%s: %s", cfg.argv[0], oneLine(err))
	}
	cfg.resolved = path

	ns, err := dialNodes(cfg.urls, nodeTimeout) // only to check reachability
	if err != nil {
		return fail(exitUsage, "%v", err)
	}
	defer ns.close()
	opts := []redlock.Option{redlock.WithTTL(cfg.ttl), redlock.WithKeyPrefix(cfg.prefix)}
	if cfg.fair {
		opts = append(opts, redlock.WithFair())
	}
	if cfg.fencing {
		opts = append(opts, redlock.WithFencing())
	}
	// Dial's Client owns its connections: at Close it cuts the calls
	// still out to a paused node, so that node does not delay the exit.
	client, err := redlock.Dial(cfg.urls, opts...)
	if err != nil {
		return fail(exitUsage, "%s", oneLine(err))
	}
	// Close releases what is still held and stops the background work.
	defer func() { _ = client.Close() }()
	return holdAndRun(cfg, client, ns, stderr)
}

package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"time"

	"github.com/quorumlock/redlock"
)

const runUsage = `usage: redlock run [-nodes URLs] -name NAME [-permits K] [flags] -- CMD [ARGS...]

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
script should exec its last command or pass them on to its children. A
loss that only the release finds (the lock was taken with redlock unlock
-force, and CMD exited before the next renewal could tell) exits 123 too.

CMD's environment also has REDLOCK_NAME (the lock name), REDLOCK_OWNER (the
owner id: a Go program re-enters the lock with redlock.WithOwner) and, with
-fencing, REDLOCK_TOKEN (larger than that of any other owner whose lease
ended before this one was granted: pass it
to the resource so that it can refuse writes from a holder that lost the
lock without noticing).

Exit statuses:
  CMD's     CMD exited by itself (128+N when it died of signal N)
  2         bad usage (nothing was run)
  123       the lock was lost while CMD ran (or found lost at the release)
  124       the lock was not acquired within -wait: another owner held it,
            or too few nodes voted yet (nodes started less than the restart
            guard ago vote once it has passed; brand-new ones at once
            after redlock init)
  125       redlock's own failure: fewer than a quorum of nodes reachable, ...
  126, 127  CMD could not be started, CMD was not found
  128+N     redlock got signal N while waiting for the lock

With -permits K, NAME is a semaphore of K permits instead of a lock (like
consul lock -n): up to K "redlock run -permits K" on one name run their CMD
at once, each holding a permit as it would hold the lock. Every run on the
name must give the same K (another K exits 2, saying the K stored on the
nodes); -fair and -fencing do not apply.

Example:
  export REDLOCK_NODES=redis://10.0.0.1:6379,redis://10.0.0.2:6379,redis://10.0.0.3:6379
  redlock run -name nightly-backup -wait 0 -- /usr/local/bin/backup.sh --full

Flags:
`

const electUsage = `usage: redlock elect [-nodes URLs] -name NAME [-value V] [flags] -- CMD [ARGS...]

Campaigns in the election NAME over the nodes, waits until leader, runs CMD
while leader and resigns when CMD exits, like etcdctl elect: "redlock run"
on an election (the lock NAME), with the term and the value published for
redlock.Election's Leader and Observe. CMD's environment has REDLOCK_TERM,
the term: strictly greater than every earlier leader's (pass it to what the
leader writes to, so that it refuses an old leader), and REDLOCK_VALUE.
Leadership lost while CMD runs stops CMD as "redlock run" does (SIGTERM,
SIGKILL after -grace) and exits 123. -wait defaults to 0 here: a candidate
waits until it leads. Exit statuses are those of "redlock run": CMD's own,
2 bad usage, 123 leadership lost, 124 not leader within -wait, 125
redlock's own failure, 126/127 CMD not runnable/not found.

Example:
  redlock elect -name scheduler -value "$(hostname)" -- ./scheduler

Flags:
`

// runConfig holds the flags and command line of run or elect.
type runConfig struct {
	command string // "run" or "elect"
	value   string // elect: the value published with leadership
	nodeOptions
	name     string
	ttl      time.Duration
	wait     time.Duration
	grace    time.Duration
	fair     bool
	fencing  bool
	permits  int      // > 0: a semaphore of that many permits
	argv     []string // CMD and its arguments
	resolved string   // CMD's path, found before the lock is taken
}

// printf prints one line of the command's own ("redlock run: ...").
func (cfg runConfig) printf(w io.Writer, format string, args ...any) {
	fmt.Fprintf(w, "redlock "+cfg.command+": "+format, args...)
}

// parseRunFlags returns the config of command ("run" or "elect"), or false
// and the exit status after it printed the help or one usage error line.
func parseRunFlags(command string, args []string, stderr io.Writer) (runConfig, int, bool) {
	cfg := runConfig{command: command}
	usage, wait := runUsage, 10*time.Second
	if command == "elect" {
		usage, wait = electUsage, 0
	}
	f := newFlags(command, usage, stderr)
	f.nodeFlags(&cfg.nodeOptions, "key prefix; keys are PREFIX{NAME}, PREFIX{NAME}:fence, ...")
	f.StringVar(&cfg.name, "name", "", "lock name (required)")
	f.DurationVar(&cfg.ttl, "ttl", redlock.DefaultTTL, "lease TTL: how long others wait if redlock dies without releasing")
	f.DurationVar(&cfg.wait, "wait", wait, "how long to wait for the lock (0 waits forever)")
	f.DurationVar(&cfg.grace, "grace", 10*time.Second, "after a lost lock, time between CMD's SIGTERM and its SIGKILL")
	f.BoolVar(&cfg.fair, "fair", false, "first come, first served among waiters (use it on every run of the name)")
	if command == "elect" {
		host, _ := os.Hostname()
		f.StringVar(&cfg.value, "value", fmt.Sprintf("%s:%d", host, os.Getpid()), "the value published while leader (redlock.Election's Leader)")
	} else {
		f.BoolVar(&cfg.fencing, "fencing", false, "give CMD a fencing token in $REDLOCK_TOKEN")
		f.IntVar(&cfg.permits, "permits", 0, "NAME is a semaphore: up to K runs at once (0: a lock)")
	}
	if code, ok := f.parse(args); !ok {
		return cfg, code, false
	}
	cfg.argv = f.Args()
	if err := f.readNodes(); err != nil {
		return cfg, f.bad("%v", err), false
	}
	if problem := cfg.problem(); problem != "" {
		return cfg, f.bad("%s", problem), false
	}
	return cfg, exitOK, true
}

// problem says what is wrong with cfg's flags and command line, or "".
func (cfg runConfig) problem() string {
	switch {
	case cfg.name == "":
		return "-name is required"
	case len(cfg.argv) == 0:
		return fmt.Sprintf("no command: redlock %s -name NAME -- CMD [ARGS...]", cfg.command)
	case cfg.ttl <= 0:
		return fmt.Sprintf("-ttl must be positive, got %v", cfg.ttl)
	case cfg.wait < 0:
		return fmt.Sprintf("-wait must not be negative, got %v (0 waits forever)", cfg.wait)
	case cfg.grace < 0:
		return fmt.Sprintf("-grace must not be negative, got %v", cfg.grace)
	case cfg.permits < 0:
		return fmt.Sprintf("-permits must not be negative, got %d (0: a lock)", cfg.permits)
	case cfg.permits > 0 && (cfg.fair || cfg.fencing):
		return "-fair and -fencing do not apply to a semaphore (-permits)"
	}
	return ""
}

// runCommand is the run subcommand: parse, resolve CMD, check the nodes,
// take the lock, supervise CMD, release.
func runCommand(command string, args []string, stderr io.Writer) int {
	cfg, code, ok := parseRunFlags(command, args, stderr)
	if !ok {
		return code
	}
	fail := func(code int, format string, args ...any) int {
		cfg.printf(stderr, format+"\n", args...)
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
		return fail(exitUsage, "%s", plain(err))
	}
	// Close releases what is still held and stops the background work.
	defer func() { _ = client.Close() }()
	return holdAndRun(cfg, client, ns, stderr)
}

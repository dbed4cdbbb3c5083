// Command redlock is the redlock library for shell scripts and operators:
// take a lock around a command the way flock(1), etcdctl lock or consul
// lock do, look at a lock's state on every node, or watch the library at
// work against real redis-server processes.
//
// Usage:
//
//	redlock run [-nodes URLs] -name NAME [-ttl 30s] [-wait 10s] [-fair] [-fencing] [-permits K] [-grace 10s] -- CMD [ARGS...]
//	redlock elect [-nodes URLs] -name NAME [-value V] [-ttl 30s] [-wait 0] [-fair] [-grace 10s] -- CMD [ARGS...]
//	redlock inspect [-nodes URLs] [-json] [-prefix redlock:] NAME
//	redlock unlock -force [-nodes URLs] [-prefix redlock:] NAME
//	redlock init [-nodes URLs] [-prefix redlock:] [-timeout 5s] [-force] [URL...]
//	redlock demo [-nodes 5 | -nodes URL,URL,...] [-duration 10s] [-workers 8]
//
// Nodes come from -nodes or, when it is not given, from $REDLOCK_NODES: a
// comma-separated list of redis:// or rediss:// URLs (or host:port, taken
// as redis://host:port), one per independent Redis node.
//
// Nodes started less than the restart guard (the longest TTL) ago vote
// once it has passed since their start; brand-new ones vote at once after
// redlock init.
//
// # Exit statuses
//
// redlock run and redlock elect exit with their command's status, so they can wrap any command
// in a script. Its own outcomes therefore use codes that commands rarely
// use, following timeout(1) and the shell:
//
//	0-122  CMD's own exit status
//	2      bad usage: unknown flag, missing -name or CMD, malformed URL (before anything runs)
//	123    the lock was lost while CMD ran; CMD got SIGTERM, then SIGKILL after -grace
//	       (or, found at the release, CMD had already exited)
//	124    the lock was not acquired within -wait (held, or too few nodes vote yet)
//	125    redlock's own failure: no quorum of nodes reachable, or another error
//	126    CMD was found but could not be started
//	127    CMD was not found
//	128+N  CMD died of signal N, or redlock got signal N while waiting for the lock
//
// redlock inspect exits 0 when every node answered and 125 when some did
// not (the report still shows the others); redlock unlock -force exits 0
// when done on every node, 125 when some node did not answer; redlock
// init exits 0 when every node was declared new, 125 when some node was
// refused (it is not new) or did not answer, and then declares none
// (unless -force); redlock demo exits 0 when the
// run upheld every claim, 1 when it did not, 130 when interrupted. Each
// exits 2 on bad usage.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// Exit statuses; see the package comment for what each one means. The
// run-specific ones sit just below 126/127 (the shell's "cannot execute"
// and "not found") as timeout(1)'s do, so that a wrapped command's own
// common statuses (1, 2, 3...) keep meaning what the command means.
const (
	exitOK           = 0
	exitFailure      = 1
	exitUsage        = 2
	exitLost         = 123
	exitNotAcquired  = 124
	exitError        = 125
	exitCannotInvoke = 126
	exitNotFound     = 127
	exitSignalBase   = 128
	exitInterrupted  = exitSignalBase + int(syscall.SIGINT)
)

const usage = `usage: redlock <command> [flags]

commands:
  run      take a lock, run a command while holding it, release it
           (like flock(1) across hosts); -permits K: up to K at once
  elect    campaign, run a command while leader, resign (like etcdctl elect)
  inspect  show a lock's holder, fair queue, TTL and fence counter on every node
  unlock   -force: take a lock from a stuck holder (an operator's tool)
  init     declare a brand-new set of nodes new (all or none), so that they vote at once
  demo     start local redis-server nodes and show the lock under contention,
           reentrancy and the failure of a minority of nodes

Nodes: -nodes URL,URL,... or $REDLOCK_NODES (redis://, rediss:// URLs or host:port).
Run "redlock <command> -h" for a command's flags, exit statuses and examples.
`

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

// dispatch runs a subcommand and returns the exit status; it never calls
// os.Exit itself, so deferred cleanup in the subcommands always runs.
func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	// Nodes go down on purpose in the demo and by accident in production;
	// go-redis would log each refused dial on stderr. The errors reach the
	// user through redlock's own one-line messages instead.
	redis.SetLogger(quietRedis{})
	switch args[0] {
	case "run", "elect":
		return runCommand(args[0], args[1:], stderr)
	case "inspect":
		return inspect(args[1:], stdout, stderr)
	case "unlock":
		return unlock(args[1:], stdout, stderr)
	case "init":
		return initNodes(args[1:], stdout, stderr)
	case "demo":
		// Ctrl-C or SIGTERM cancels ctx and the demo winds down: workers
		// finish their section, clients close, servers stop, the temp dir
		// goes. After that first signal the default handling comes back, so
		// a second Ctrl-C kills the process at once if cleanup hangs (the
		// servers die with it: redisproc sets Pdeathsig on Linux).
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		restore := context.AfterFunc(ctx, stop)
		defer restore()
		return demo(ctx, args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "redlock: unknown command %q (commands: run, elect, inspect, unlock, init, demo; see redlock -h)\n", args[0])
		return exitUsage
	}
}

// quietRedis drops go-redis's own log lines.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

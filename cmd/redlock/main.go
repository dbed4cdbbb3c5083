// Command redlock shows the redlock library at work against real
// redis-server processes that it starts, abuses and stops itself, so that
// its claims (mutual exclusion, reentrancy, surviving a minority of failed
// nodes) can be watched rather than taken on trust.
//
// Usage:
//
//	redlock demo [-nodes 5] [-duration 10s] [-workers 8]
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit statuses. exitInterrupted follows the shell's 128+SIGINT convention
// so that scripts can tell a Ctrl-C from a failed run.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitInterrupted = 130
)

const usage = `usage: redlock <command> [flags]

commands:
  demo    start local redis-server nodes and show the lock under contention,
          reentrancy and the failure of a minority of nodes
          (redlock demo -h lists its flags)
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches to a subcommand and returns the exit status; it never
// calls os.Exit itself, so deferred cleanup in the subcommands always runs.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
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
		fmt.Fprintf(stderr, "redlock: unknown command %q (commands: demo; run redlock -h)\n", args[0])
		return exitUsage
	}
}

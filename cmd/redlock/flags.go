package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/quorumlock/redlock"
)

// commandFlags is a subcommand's flag set. Each command declares the
// flags it shares with others by one call and then only its own, and the
// help and usage errors look the same for all.
type commandFlags struct {
	*flag.FlagSet
	command string // "run", "inspect", ...
	stderr  io.Writer
	nodes   string       // -nodes as given
	shared  *nodeOptions // set by nodeFlags
}

// nodeOptions are the values of the flags several commands share; their
// configs embed it.
type nodeOptions struct {
	urls    []string // -nodes or $REDLOCK_NODES, after readNodes
	prefix  string
	timeout time.Duration // each node's time to answer, with timeoutFlag
}

// newFlags makes command's flag set; -h prints usage, then the flags.
func newFlags(command, usage string, stderr io.Writer) *commandFlags {
	f := &commandFlags{FlagSet: flag.NewFlagSet("redlock "+command, flag.ContinueOnError), command: command, stderr: stderr}
	f.SetOutput(stderr)
	f.Usage = func() {
		fmt.Fprint(f.Output(), usage)
		f.PrintDefaults()
	}
	return f
}

// nodeFlags declares -nodes and -prefix into shared: every command that
// talks to given nodes takes them. prefixHelp says what the prefix is to
// the command.
func (f *commandFlags) nodeFlags(shared *nodeOptions, prefixHelp string) {
	f.shared = shared
	f.StringVar(&f.nodes, "nodes", "", nodesFlagHelp)
	f.StringVar(&shared.prefix, "prefix", redlock.DefaultKeyPrefix, prefixHelp)
}

// timeoutFlag declares -timeout, each node's time to answer (after
// nodeFlags).
func (f *commandFlags) timeoutFlag(value time.Duration, help string) {
	f.DurationVar(&f.shared.timeout, "timeout", value, help)
}

// readNodes sets the shared urls from -nodes or $REDLOCK_NODES.
func (f *commandFlags) readNodes() error {
	urls, err := nodeURLs(f.nodes)
	f.shared.urls = urls
	return err
}

// parse parses args. After -h it returns exitOK and false, after a bad
// flag exitUsage and false: flag has printed the error and the usage.
func (f *commandFlags) parse(args []string) (int, bool) {
	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitUsage, false
	}
	return exitOK, true
}

// parseAll is parse for commands whose flags may also follow their
// arguments ("redlock inspect jobs -json" reads well); it returns the
// arguments.
func (f *commandFlags) parseAll(args []string) ([]string, int, bool) {
	var given []string
	for {
		if code, ok := f.parse(args); !ok {
			return nil, code, false
		}
		if f.NArg() == 0 {
			return given, exitOK, true
		}
		given, args = append(given, f.Arg(0)), f.Args()[1:]
	}
}

// bad prints one usage error line and returns exitUsage.
func (f *commandFlags) bad(format string, args ...any) int {
	fmt.Fprintf(f.stderr, "redlock %s: %s (see redlock %s -h)\n", f.command, fmt.Sprintf(format, args...), f.command)
	return exitUsage
}

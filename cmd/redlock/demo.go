package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/internal/checker"
	"github.com/quorumlock/redlock/internal/redisproc"
	"github.com/redis/go-redis/v9"
)

// ttl is short so that the node-failure phase can keep the killed nodes
// down for longer than any lease lives (the condition under which a node
// that restarts empty cannot hand out a lock a holder still counts on),
// while the whole demo still fits in seconds.
const ttl = 2 * time.Second

// Lock names. The reentrancy phase uses its own name so that it can run
// while the workers keep contending on theirs.
const (
	counterLock   = "demo:counter"
	reentrantLock = "demo:reentrant"
)

// demoConfig holds the demo's flags.
type demoConfig struct {
	nodes    int
	duration time.Duration
	workers  int
}

// session is the state the demo's goroutines share.
type session struct {
	cfg     demoConfig
	servers []*redisproc.Server
	clients [2]*redlock.Client
	check   *checker.Checker
	start   time.Time

	// counter is the resource the lock protects. Workers read it, sleep and
	// write it back (a read-modify-write that is only correct under mutual
	// exclusion), so a double grant shows up as a lost update. It is an
	// atomic only so that Go's race detector stays quiet: the happens-before
	// edge between holders runs through Redis, which the detector cannot see.
	counter  atomic.Int64
	sections [2]atomic.Int64 // critical sections completed, per client
	phase    atomic.Pointer[string]
	problems atomic.Int64 // phases that did not behave as the demo claims

	outMu  sync.Mutex
	stdout io.Writer
	stderr io.Writer
}

var clientNames = [2]string{"client A", "client B"}

// printf writes one line to stdout; several goroutines print.
func (s *session) printf(format string, args ...any) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	fmt.Fprintf(s.stdout, format+"\n", args...)
}

// fail reports one way the demo fell short of its claims, on one line.
func (s *session) fail(format string, args ...any) {
	s.problems.Add(1)
	s.outMu.Lock()
	defer s.outMu.Unlock()
	fmt.Fprintf(s.stderr, "redlock demo: "+format+"\n", args...)
}

func (s *session) setPhase(name string) { s.phase.Store(&name) }

// nodesUp counts the servers whose process is alive.
func (s *session) nodesUp() int {
	up := 0
	for _, server := range s.servers {
		if server.Running() {
			up++
		}
	}
	return up
}

func parseDemoFlags(args []string, stderr io.Writer) (demoConfig, int, bool) {
	var cfg demoConfig
	flags := flag.NewFlagSet("redlock demo", flag.ContinueOnError)
	flags.SetOutput(stderr)
	flags.Usage = func() {
		fmt.Fprint(flags.Output(), "usage: redlock demo [-nodes N] [-duration D] [-workers W]\n\n"+
			"Starts N local redis-server nodes in a temp dir and runs, while W workers\n"+
			"contend for one lock: contention, reentrancy, then the loss and empty\n"+
			"restart of a minority of the nodes. Ends with \"violations: N\".\n\nflags:\n")
		flags.PrintDefaults()
	}
	flags.IntVar(&cfg.nodes, "nodes", 5, "number of local redis-server nodes to start")
	flags.DurationVar(&cfg.duration, "duration", 10*time.Second, "how long the workers contend (phases never shrink below what the TTL needs)")
	flags.IntVar(&cfg.workers, "workers", 8, "goroutines contending for the lock, split over two clients")
	if err := flags.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, exitOK, false
		}
		return cfg, exitUsage, false // flag has printed the error and usage
	}
	var bad string
	switch {
	case flags.NArg() > 0:
		bad = fmt.Sprintf("unexpected argument %q", flags.Arg(0))
	case cfg.nodes < 1 || cfg.nodes > 64:
		bad = fmt.Sprintf("-nodes must be in 1..64, got %d", cfg.nodes)
	case cfg.duration <= 0:
		bad = fmt.Sprintf("-duration must be positive, got %v", cfg.duration)
	case cfg.workers < 1 || cfg.workers > 1024:
		bad = fmt.Sprintf("-workers must be in 1..1024, got %d", cfg.workers)
	}
	if bad != "" {
		fmt.Fprintf(stderr, "redlock demo: %s\n", bad)
		return cfg, exitUsage, false
	}
	return cfg, exitOK, true
}

// demo runs the demo subcommand and returns the exit status. Every resource
// it makes is released by a defer, so each return path cleans up.
func demo(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	cfg, code, ok := parseDemoFlags(args, stderr)
	if !ok {
		return code
	}
	if _, err := redisproc.LookPath(""); err != nil {
		fmt.Fprintln(stderr, "redlock demo: redis-server not found in PATH; install it with: apt-get install -y redis-server")
		return exitFailure
	}
	// The demo kills nodes on purpose; go-redis would log every refused
	// dial. The library reports node faults through its errors, which the
	// workers count instead.
	redis.SetLogger(quietRedis{})

	s := &session{cfg: cfg, check: checker.New(), stdout: stdout, stderr: stderr}
	cleanupFailed := func(what string, err error) {
		fmt.Fprintf(stderr, "redlock demo: %s: %s\n", what, firstLine(err))
		if code == exitOK || code == exitInterrupted {
			code = exitFailure
		}
	}

	dir, err := os.MkdirTemp("", "redlock-demo-")
	if err != nil {
		fmt.Fprintf(stderr, "redlock demo: temp dir: %s\n", firstLine(err))
		return exitFailure
	}
	defer func() {
		if err := os.RemoveAll(dir); err != nil {
			cleanupFailed("remove temp dir", err)
		}
	}()
	defer func() { // runs before the dir goes: servers write into it
		for i, server := range s.servers {
			if err := server.Stop(); err != nil {
				cleanupFailed(fmt.Sprintf("stop node %d", i), err)
			}
		}
	}()
	for i := range cfg.nodes {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "redlock demo: interrupted")
			return exitInterrupted
		}
		server, err := redisproc.Start(redisproc.Config{Dir: filepath.Join(dir, fmt.Sprintf("node%d", i))})
		if err != nil {
			fmt.Fprintf(stderr, "redlock demo: start node %d: %s\n", i, firstLine(err))
			return exitFailure
		}
		s.servers = append(s.servers, server)
	}
	urls := make([]string, len(s.servers))
	for i, server := range s.servers {
		urls[i] = server.URL()
	}
	for i := range s.clients {
		client, err := redlock.Dial(urls, redlock.WithTTL(ttl))
		if err != nil {
			fmt.Fprintf(stderr, "redlock demo: dial %s: %s\n", clientNames[i], firstLine(err))
			return exitFailure
		}
		s.clients[i] = client
		defer func() {
			if err := client.Close(); err != nil {
				cleanupFailed("close "+clientNames[i], err)
			}
		}()
	}
	s.printf("started %d redis-server nodes (%s ... %s), quorum %d, TTL %v; %d workers over 2 clients on %q",
		len(s.servers), s.servers[0].Addr(), s.servers[len(s.servers)-1].Addr(), len(s.servers)/2+1, ttl, cfg.workers, counterLock)

	results := s.run(ctx)
	return s.report(results, ctx.Err() != nil)
}

// run starts the workers and the progress line, walks through the phases
// and waits for every goroutine before it returns the workers' results.
func (s *session) run(ctx context.Context) []workerResult {
	workCtx, stopWork := context.WithCancel(ctx)
	defer stopWork()
	s.start = time.Now()
	s.setPhase("contention")

	results := make([]workerResult, s.cfg.workers)
	var workers sync.WaitGroup
	for i := range results {
		results[i].client = i % 2
		workers.Go(func() { s.worker(workCtx, &results[i]) })
	}
	var progress sync.WaitGroup
	progressCtx, stopProgress := context.WithCancel(ctx)
	progress.Go(func() { s.progress(progressCtx) })

	s.phases(workCtx)

	stopWork()
	workers.Wait()
	stopProgress()
	progress.Wait()
	return results
}

// firstLine keeps error output to one line: redisproc appends log tails.
func firstLine(err error) string {
	message, _, _ := strings.Cut(err.Error(), "\n")
	return message
}

// quietRedis drops go-redis's own log lines.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest/checker"
	"github.com/quorumlock/redlock/redlocktest/redisproc"
	"github.com/quorumlock/redlock/redlocktest/workload"
)

// ttl is short so that the node-failure phase can keep the killed nodes
// down for longer than any lease lives (the condition under which a node
// that restarts empty cannot hand out a lock a holder still counts on),
// while the whole demo still fits in seconds.
const ttl = 2 * time.Second

// reentrantLock has a name of its own so that the reentrancy phase can run
// while the workers keep contending on theirs.
const reentrantLock = "demo:reentrant"

// demoConfig holds the demo's flags.
type demoConfig struct {
	nodes    int      // local redis-server nodes to start
	urls     []string // or nodes to use, which the demo does not own
	duration time.Duration
	workers  int
}

// lockKind is one lock the workers contend for: plain (unfair, the
// fastest) or fair (FIFO across clients), each with its own protected
// record (session.records) and handoff times, as issue 6 asks to see both
// side by side.
type lockKind struct {
	mode     workload.Mode // Plain or Fair
	name     string        // the lock name, and its record's
	stats    [2]workload.Stats
	handoffs handoffs
}

// label is "plain" or "fair".
func (k *lockKind) label() string { return string(k.mode) }

// workerResult is what one worker saw that its kind's Stats do not count.
// Each worker writes only its own, and the report reads them after every
// worker has returned.
type workerResult struct {
	kind    int             // index into session.kinds
	client  int             // index into session.clients
	waits   []time.Duration // time spent in each successful Lock
	lastErr error
}

// session is the state the demo's goroutines share.
type session struct {
	cfg     demoConfig
	servers []*redisproc.Server // nil with -nodes URLs: the nodes are not ours
	addrs   []string
	clients [2]*redlock.Client
	conns   [2]*nodeSet // each client's connections, closed after it
	kinds   []*lockKind
	records workload.Records // the resource each lock protects: a double grant loses an update
	check   *checker.Checker
	start   time.Time

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

// owned reports whether the demo started the nodes and may kill them.
func (s *session) owned() bool { return s.servers != nil }

// nodesUp describes the nodes whose process is alive; for nodes given by
// URL (which may be killed or paused by hand, e.g. in docker-compose),
// those that answer a PING within 200 ms.
func (s *session) nodesUp() string {
	if !s.owned() {
		ns := s.conns[0]
		failed := ns.ping(context.Background(), 200*time.Millisecond)
		quorum := "quorum"
		if len(ns.clients)-len(failed) < ns.quorum() {
			quorum = "NO quorum"
		}
		return fmt.Sprintf("%d/%d answer (%s)", len(ns.clients)-len(failed), len(ns.clients), quorum)
	}
	up := 0
	for _, server := range s.servers {
		if server.Running() {
			up++
		}
	}
	return fmt.Sprintf("%d/%d", up, len(s.servers))
}

// sectionsDone is the number of critical sections completed so far.
func (s *session) sectionsDone() int64 {
	var total int64
	for _, kind := range s.kinds {
		total += kind.sections()
	}
	return total
}

const demoUsage = `usage: redlock demo [-nodes 5 | -nodes URL,URL,...] [-duration 10s] [-workers 8]

Runs the lock under load and prints what happened: W workers over two
clients contend for a plain lock and a fair (FIFO) lock, a reentrant hold
shows re-entry, and a minority of the nodes is killed and restarted empty
while locks keep working. A line a second shows progress with the handoff
times (one Unlock to the next grant, p50/p99); the last line is
"violations: N", the safety checker's count of overlapping grants.

-nodes N starts N local redis-server processes in a temp dir (redis-server
must be on PATH). -nodes URL,... uses those nodes instead; they are not the
demo's to kill, so the node-failure phase is skipped: kill, pause and
restart them yourself while it runs (e.g. docker-compose kill redis2), and
the progress line shows how many answer.

Exit statuses: 0 every claim held, 1 one did not (or the nodes could not be
started or reached), 2 bad usage, 130 interrupted.

Example:
  redlock demo -nodes 3 -duration 20s -workers 16

Flags:
`

// parseDemoFlags returns the demo's config, or false and the exit status
// after it printed the help or one usage error line.
func parseDemoFlags(args []string, stderr io.Writer) (demoConfig, int, bool) {
	var cfg demoConfig
	var nodes string
	f := newFlags("demo", demoUsage, stderr)
	// -nodes here is a count or URLs: not nodeFlags' list of URLs.
	f.StringVar(&nodes, "nodes", "5", "number of local redis-server nodes to start, or comma-separated redis:// URLs of nodes to use")
	f.DurationVar(&cfg.duration, "duration", 10*time.Second, "how long the workers contend (phases never shrink below what the TTL needs)")
	f.IntVar(&cfg.workers, "workers", 8, "goroutines contending, split over two clients and the plain and fair locks")
	if code, ok := f.parse(args); !ok {
		return cfg, code, false
	}
	var err error
	if n, atoiErr := strconv.Atoi(nodes); atoiErr == nil {
		cfg.nodes = n
	} else if strings.Contains(nodes, ":") { // URLs, or host:port
		cfg.urls, err = nodeURLs(nodes)
	} else {
		err = fmt.Errorf("-nodes wants a count or node URLs (redis://host:port or host:port), got %q", nodes)
	}
	switch {
	case err != nil:
		return cfg, f.bad("%v", err), false
	case f.NArg() > 0:
		return cfg, f.bad("unexpected argument %q", f.Arg(0)), false
	case cfg.urls == nil && (cfg.nodes < 1 || cfg.nodes > 64):
		return cfg, f.bad("-nodes must be in 1..64, got %d", cfg.nodes), false
	case cfg.duration <= 0:
		return cfg, f.bad("-duration must be positive, got %v", cfg.duration), false
	case cfg.workers < 1 || cfg.workers > 1024:
		return cfg, f.bad("-workers must be in 1..1024, got %d", cfg.workers), false
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
	s := &session{cfg: cfg, check: checker.New(), stdout: stdout, stderr: stderr}
	s.kinds = []*lockKind{{mode: workload.Plain, name: "demo:counter"}}
	if cfg.workers >= 2 {
		s.kinds = append(s.kinds, &lockKind{mode: workload.Fair, name: "demo:fair"})
	}
	cleanupFailed := func(what string, err error) {
		fmt.Fprintf(stderr, "redlock demo: %s: %s\n", what, firstLine(err))
		if code == exitOK || code == exitInterrupted {
			code = exitFailure
		}
	}
	urls := cfg.urls
	if urls == nil {
		var stop func(func(string, error))
		urls, stop, code = s.startNodes(ctx)
		defer stop(cleanupFailed)
		if code != exitOK {
			return code
		}
	}
	defer s.disconnect(cleanupFailed) // whatever connect made
	if code := s.connect(urls); code != exitOK {
		return code
	}

	labels := make([]string, len(s.kinds))
	for i, kind := range s.kinds {
		labels[i] = fmt.Sprintf("%s %q", kind.label(), kind.name)
	}
	origin, declared := "using", ""
	if s.owned() {
		origin, declared = "started", " declared new (redlock init),"
	}
	s.printf("%s %d redis-server nodes (%s ... %s),%s quorum %d, TTL %v; %d workers over 2 clients on %s",
		origin, len(s.addrs), s.addrs[0], s.addrs[len(s.addrs)-1], declared, len(s.addrs)/2+1, ttl, cfg.workers,
		strings.Join(labels, " and "))

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

	// Worker i: lock kind i%2, client (i/2)%2, so both clients contend
	// for both locks.
	results := make([]workerResult, s.cfg.workers)
	var workers sync.WaitGroup
	for i := range results {
		results[i].kind, results[i].client = i%len(s.kinds), (i/len(s.kinds))%2
		w := s.worker(&results[i])
		workers.Go(func() { w.Run(workCtx) })
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

// worker is the workload's worker for r: its kind's lock on its client,
// a read–sleep–write of the kind's record under each grant, with hooks
// that time its lock waits and the lock's handoffs.
func (s *session) worker(r *workerResult) *workload.Worker {
	kind := s.kinds[r.kind]
	var opts []redlock.Option
	if kind.mode == workload.Fair {
		opts = append(opts, redlock.WithFair())
	}
	return &workload.Worker{
		Mode: kind.mode, Lock: s.clients[r.client].Mutex(kind.name, opts...).Lock, Names: []string{kind.name},
		Hold: time.Millisecond, Check: s.check, Stats: &kind.stats[r.client], Records: &s.records,
		Hooks: workload.Hooks{
			Granted: func(began, acquired time.Time) {
				kind.handoffs.granted(began, acquired)
				r.waits = append(r.waits, acquired.Sub(began))
			},
			Releasing: kind.handoffs.unlocking,
			Failed:    func(err error) { r.lastErr = err },
		},
	}
}

// sections is the number of the kind's critical sections completed so far.
func (k *lockKind) sections() int64 { return k.stats[0].Sections.Load() + k.stats[1].Sections.Load() }

// firstLine keeps error output to one line: redisproc appends log tails.
func firstLine(err error) string {
	message, _, _ := strings.Cut(err.Error(), "\n")
	return message
}

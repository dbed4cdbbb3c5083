// Command chaos runs the redlock library against Redis nodes in Docker
// containers under a seeded random schedule of safe faults, with several
// Clients contending in every lock mode, fenced, and the safety checker
// watching every grant and its fencing token. It then heals the nodes and
// checks that every mode grants again, and runs negative controls that
// break the assumptions of docs/safety.md on purpose, each twice: with the
// library's check for it off, where the checker must catch two owners — a
// checker that never fires proves nothing — and with it on, the default,
// where it must find none.
//
// Two topologies (-topology):
//
//   - plain (the default): five independent nodes. Faults: kill, restart,
//     pause, network disconnect; and one-way faults on one Client's link
//     to a node: its requests held, its replies held, its requests
//     delayed; a minority of the nodes at a time. Controls: a majority
//     restarted empty (the restart guard); a majority with fast clocks
//     (the clock check).
//   - replicated: three members, each a master, a replica and a
//     redis-sentinel in containers of their own, reached through go-redis
//     failover clients. Faults: failover (the master killed, the replica
//     promoted), the same after the replica's replication link was cut (it
//     misses the grants), SENTINEL FAILOVER, the master paused or cut off
//     the network, the replica killed, the replication link cut, and the
//     one-way link faults on the member's master; one member at a time.
//     Control: the replicas of a majority cut off, the locks taken, those
//     masters killed and failed over to the replicas that missed the
//     grants (the restart guard).
//
// Usage (make chaos and make chaos-failover build the image first):
//
//	go run ./cmd/chaos [-topology plain|replicated] [-duration 60s] [-seed N] [-workers 3] [-clients 4]
//
// The last line is the summary:
//
//	chaos: <sections> sections checked, <faults> faults, <v> violations; negative control: <n> violations detected, <m> with the checks on
//
// It exits 0 when v and the lost updates are 0, each control detected
// violations with its check off and m is 0, and every mode recovered; 1 otherwise; 2 on bad usage; 130 when
// interrupted. Every container and the network are removed on exit,
// Ctrl-C included (a second Ctrl-C abandons them; see package nodes for the
// commands that remove leftovers).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/quorumlock/redlock/integration/internal/harness"
	"github.com/quorumlock/redlock/integration/internal/nodes"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// config holds the flags.
type config struct {
	topology string // plain or replicated
	duration time.Duration
	seed     uint64
	workers  int
	clients  int
}

// summary is what the last line reports, and why the run failed if it did.
type summary struct {
	sections, lostUpdates int64
	faults, violations    int
	controlViolations     int // the controls with the check for their breach off
	protectedViolations   int // the same controls with it on
	failures              []string
}

// runner is the state the phases share.
type runner struct {
	cfg     config
	cluster *nodes.Cluster    // the plain topology's nodes
	rep     *nodes.Replicated // or the replicated topology's members
	// fastClocks: control (b) recreated the majority with fast clocks.
	fastClocks bool
	outMu      sync.Mutex
	out        io.Writer
}

// say prints one progress line; several goroutines print.
func (r *runner) say(format string, args ...any) {
	r.outMu.Lock()
	defer r.outMu.Unlock()
	fmt.Fprintf(r.out, "chaos: "+format+"\n", args...)
}

// The topologies.
const (
	plain      = "plain"
	replicated = "replicated"
)

func main() { os.Exit(chaosMain()) }

// chaosMain returns the exit status; it never calls os.Exit, so that every
// deferred cleanup runs.
func chaosMain() int {
	cfg, ok := parseFlags(os.Args[1:])
	if !ok {
		return 2
	}
	// The first Ctrl-C or SIGTERM cancels ctx: the run winds down and the
	// containers are removed. After it the default handling is back, so a
	// second Ctrl-C kills the process if the cleanup hangs.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	restore := context.AfterFunc(ctx, stop)
	defer restore()
	nodes.DisableRyuk()
	harness.Quiet()
	tclog.SetDefault(tclog.NewNoopLogger())

	r := &runner{cfg: cfg, out: os.Stdout}
	var sum summary
	r.run(ctx, &sum)
	for _, failure := range sum.failures {
		r.say("FAIL: %s", failure)
	}
	r.say("%d sections checked, %d faults, %d violations; negative control: %d violations detected, %d with the checks on",
		sum.sections, sum.faults, sum.violations, sum.controlViolations, sum.protectedViolations)
	switch {
	case ctx.Err() != nil:
		return 130
	case len(sum.failures) > 0:
		return 1
	}
	return 0
}

func parseFlags(args []string) (config, bool) {
	var cfg config
	flags := flag.NewFlagSet("chaos", flag.ContinueOnError)
	flags.StringVar(&cfg.topology, "topology", plain, "plain: five independent nodes; replicated: three members, each a master, a replica and a sentinel")
	flags.DurationVar(&cfg.duration, "duration", 60*time.Second, "how long the workload runs under the fault schedule")
	flags.Uint64Var(&cfg.seed, "seed", 0, "seed of the fault schedule (default: random, printed; the same seed replays the same schedule)")
	flags.IntVar(&cfg.workers, "workers", 3, "workers per lock mode, spread over the Clients")
	flags.IntVar(&cfg.clients, "clients", 4, "Clients (each with connections of its own, as separate processes)")
	if err := flags.Parse(args); err != nil {
		return cfg, false
	}
	seeded := false
	flags.Visit(func(f *flag.Flag) { seeded = seeded || f.Name == "seed" })
	if !seeded {
		cfg.seed = uint64(time.Now().UnixNano())
	}
	var bad string
	switch {
	case flags.NArg() > 0:
		bad = fmt.Sprintf("unexpected argument %q", flags.Arg(0))
	case cfg.duration < 5*time.Second:
		bad = fmt.Sprintf("-duration must be at least 5s, got %v", cfg.duration)
	case cfg.workers < 1 || cfg.clients < 1:
		bad = "-workers and -clients must be at least 1"
	case cfg.topology != plain && cfg.topology != replicated:
		bad = fmt.Sprintf("-topology must be %s or %s, got %q", plain, replicated, cfg.topology)
	}
	if bad != "" {
		fmt.Fprintln(os.Stderr, "chaos: "+bad)
		return cfg, false
	}
	return cfg, true
}

// run is the whole run: nodes up, chaos, recovery, controls, nodes down.
// Every failure lands in sum.failures; the cluster is removed on return.
func (r *runner) run(ctx context.Context, sum *summary) {
	fail := func(format string, args ...any) { sum.failures = append(sum.failures, fmt.Sprintf(format, args...)) }
	if err := nodes.Require(ctx); err != nil {
		fail("%v", err)
		if !errors.Is(err, nodes.ErrNoDocker) {
			r.say("build the image with docker/build-image.sh (make chaos does)")
		}
		return
	}
	r.say("seed %d (-seed %d replays this fault schedule)", r.cfg.seed, r.cfg.seed)
	begin := time.Now()
	closeNodes, err := r.start(ctx)
	if err != nil {
		if ctx.Err() == nil {
			fail("start the nodes: %v", err)
		}
		return
	}
	defer func() {
		if ctx.Err() != nil {
			r.say("interrupted: removing the containers")
		}
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if err := closeNodes(closeCtx); err != nil {
			fail("remove the containers: %v", err)
		}
		r.say("containers and network removed; %v in all", time.Since(begin).Round(time.Second))
	}()
	what, where := r.describe()
	r.say("%s (image %s) up in %v %s", what, nodes.Image(), time.Since(begin).Round(time.Millisecond), where)
	r.judge(ctx, sum, fail)
}

// start brings the topology's containers up; the function it returns
// removes them. On error it has removed whatever it created.
func (r *runner) start(ctx context.Context) (func(context.Context) error, error) {
	if r.cfg.topology == replicated {
		rep, err := nodes.StartReplicated(ctx, nodes.ReplicatedConfig{})
		if err != nil {
			return nil, err
		}
		r.rep = rep
		return rep.Close, nil
	}
	cluster, err := nodes.Start(ctx, nodes.Config{Nodes: 5})
	if err != nil {
		return nil, err
	}
	r.cluster = cluster
	return cluster.Close, nil
}

// describe says what is up, and where.
func (r *runner) describe() (what, where string) {
	if r.rep == nil {
		return "5 nodes", fmt.Sprintf("at %v", r.cluster.URLs())
	}
	sentinels := make([]string, r.rep.N())
	for i := range sentinels {
		sentinels[i] = r.rep.SentinelAddr(i)
	}
	return fmt.Sprintf("%d members of 3 containers each", r.rep.N()),
		fmt.Sprintf("(master, replica, sentinel; a silent master down after %v); sentinels at %v", nodes.DownAfter, sentinels)
}

// judge runs the chaos, the recovery and the controls on the nodes up,
// and puts every failure through fail.
func (r *runner) judge(ctx context.Context, sum *summary, fail func(string, ...any)) {
	err := r.chaos(ctx, sum)
	if ctx.Err() != nil {
		return // interrupted: nothing below is meaningful
	}
	if err != nil {
		fail("chaos: %v", err)
	}
	if sum.violations > 0 {
		fail("%d safety violations under safe faults", sum.violations)
	}
	if sum.lostUpdates > 0 {
		fail("%d lost updates under safe faults", sum.lostUpdates)
	}
	if sum.sections == 0 {
		fail("no critical section completed")
	}
	if err := r.recover(ctx); err != nil {
		fail("%v", err)
	}
	off, on, err := r.controls(ctx)
	sum.controlViolations, sum.protectedViolations = off, on
	switch {
	case ctx.Err() != nil:
	case err != nil:
		fail("%v", err)
	case on > 0:
		fail("%d violations in the negative controls with their checks on", on)
	}
}

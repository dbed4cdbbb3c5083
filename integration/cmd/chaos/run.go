package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/integration/internal/harness"
	"github.com/quorumlock/redlock/redlocktest/checker"
	"github.com/quorumlock/redlock/redlocktest/workload"
)

// hold is the workers' critical section: long enough that two holders at
// once would overlap in the checker, short enough for many sections.
const hold = 2 * time.Millisecond

// progressEvery is how often the chaos phase prints its counts.
const progressEvery = 5 * time.Second

// chaos runs the workload with several Clients on every mode for the run's
// duration while the seeded fault schedule runs, and fills the summary.
//
// Each Client reaches each node through a link of its own (an in-process
// proxy in front of the node's published port), where the schedule's
// one-way faults act.
func (r *runner) chaos(ctx context.Context, sum *summary) (err error) {
	if r.rep != nil {
		return r.chaosReplicated(ctx, sum)
	}
	events := plan(r.cfg.seed, r.cfg.duration, r.cluster.N(), r.cfg.clients, harness.TTL)
	r.say("%d faults planned over %v (kill, restart, pause, disconnect; one Client's link: hold requests, hold replies, delay requests; at most %d of %d nodes at once; killed and stopped nodes down > TTL %v)",
		len(events)/2, r.cfg.duration, (r.cluster.N()-1)/2, r.cluster.N(), harness.TTL)
	addrs := make([]string, r.cluster.N())
	for i := range addrs {
		addrs[i] = r.cluster.Addr(i)
	}
	lk, err := newLinks(r.cfg.clients, addrs)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, lk.Close()) }()
	var clients []*redlock.Client
	for k := range r.cfg.clients {
		dialed, err := harness.Dial(lk.urls(k), 1, harness.Options()...)
		if err != nil {
			return errors.Join(err, harness.CloseAll(clients))
		}
		clients = append(clients, dialed...)
	}
	return r.work(ctx, sum, clients, func() error { return harness.CloseAll(clients) }, lk,
		func(ctx context.Context, start time.Time) (int, error) {
			return execute(ctx, r.cluster, lk, events, start, r.say)
		},
		func() int { return faultyNow(r.cluster, lk) })
}

// work runs the workload on clients while faults runs the fault schedule
// from the workload's start, closes the clients with closeClients, and
// fills the summary. faulty counts the nodes (members) under a fault now.
func (r *runner) work(ctx context.Context, sum *summary, clients []*redlock.Client, closeClients func() error,
	lk *links, faults func(context.Context, time.Time) (int, error), faulty func() int) error {
	check := checker.New()
	var stats workload.Stats
	workCtx, stopWork := context.WithCancel(ctx)
	defer stopWork()
	r.say("%d Clients, %d workers per mode on %v, TTL %v, node timeout %v",
		r.cfg.clients, r.cfg.workers, workload.AllModes, harness.TTL, harness.NodeTimeout)
	start := time.Now()
	var wg sync.WaitGroup
	wg.Go(func() {
		r.runWorkload(workCtx, workload.Config{Clients: clients, Workers: r.cfg.workers, Hold: hold,
			Check: check, Options: harness.Options()}, &stats)
	})
	wg.Go(func() { r.progress(workCtx, start, &stats, faulty) })
	// The whole schedule runs even when Docker lags behind it (each heal
	// waits for its node), so that a seed always replays every fault; the
	// workload runs until both the schedule and the duration are done.
	injected, faultErr := faults(ctx, start)
	if faultErr == nil {
		sleepUntil(ctx, start.Add(r.cfg.duration))
	}
	stopWork()
	lk.healAll() // workers still in a round finish sooner
	wg.Wait()
	closeErr := closeClients()

	sum.sections = stats.Sections.Load()
	sum.lostUpdates = stats.LostUpdates.Load()
	sum.faults = injected
	violations := check.Violations()
	sum.violations = len(violations)
	r.say("workload done: %d sections, %d grants checked, %d lost updates, %d lost leases (no write made), %d stale writes fenced off, %d lock errors",
		sum.sections, check.Len(), sum.lostUpdates, stats.LostLeases.Load(), stats.Fenced.Load(), stats.LockErrors.Load())
	for _, v := range violations[:min(len(violations), 10)] {
		r.say("VIOLATION %s", v)
	}
	return errors.Join(faultErr, closeErr)
}

// progress prints the workload's counts every progressEvery until ctx
// ends; faulty counts the nodes (members) under a fault.
func (r *runner) progress(ctx context.Context, start time.Time, stats *workload.Stats, faulty func() int) {
	ticker := time.NewTicker(progressEvery)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			r.say("+%5.1fs  %d sections, %d lost updates, %d lost leases, %d lock errors, %d of %d %s faulty",
				time.Since(start).Seconds(), stats.Sections.Load(), stats.LostUpdates.Load(),
				stats.LostLeases.Load(), stats.LockErrors.Load(), faulty(), r.n(), r.unit())
		}
	}
}

// n is the number of nodes, or of members; unit names them.
func (r *runner) n() int {
	if r.rep != nil {
		return r.rep.N()
	}
	return r.cluster.N()
}

func (r *runner) unit() string {
	if r.rep != nil {
		return "members"
	}
	return "nodes"
}

// recover heals every node, waits past the TTL (every lease of the chaos
// phase is gone by then), and checks that every mode grants within 2×TTL.
func (r *runner) recover(ctx context.Context) error {
	heal := func(ctx context.Context) error { return r.cluster.HealAll(ctx) }
	if r.rep != nil {
		heal = r.rep.HealAll
	}
	if err := heal(ctx); err != nil {
		return err
	}
	wait := harness.TTL + 250*time.Millisecond
	r.say("all %s healed; waiting %v, past the TTL", r.unit(), wait)
	if err := harness.Sleep(ctx, wait); err != nil {
		return err
	}
	clients, closeClients, err := r.dial(1, harness.Options()...)
	if err != nil {
		return err
	}
	took, err := harness.RecoverClient(ctx, clients[0], 2*harness.TTL)
	if err = errors.Join(err, closeClients()); err != nil {
		return err
	}
	r.say("recovery: every mode granted within %v: %s", 2*harness.TTL, harness.FormatTook(took))
	return nil
}

// dial makes n Clients with opts over the run's nodes (members), each
// with connections of its own, as n processes would have; closeClients
// closes them.
func (r *runner) dial(n int, opts ...redlock.Option) (clients []*redlock.Client, closeClients func() error, err error) {
	if r.rep != nil {
		return r.dialFailover(n, func(int) map[string]string { return r.rep.Routes() }, opts)
	}
	clients, err = harness.Dial(r.cluster.URLs(), n, opts...)
	return clients, func() error { return harness.CloseAll(clients) }, err
}

// negative is one negative control: run breaks an assumption with the
// library's check for it on (protected) or off, and returns what the
// checker found.
type negative struct {
	name, check string
	run         func(ctx context.Context, protected bool) ([]checker.Violation, error)
}

// negatives are the topology's negative controls.
func (r *runner) negatives() []negative {
	if r.rep != nil {
		return []negative{{fmt.Sprintf("(a) the replicas of a majority (%d of %d) cut off, the locks taken, those masters killed and failed over to them",
			len(r.failoverMajority()), r.rep.N()), "restart guard", r.controlFailover}}
	}
	return []negative{
		{"(a) a majority (3 of 5) restarted empty at once while the locks are held", "restart guard", r.controlRestartEmpty},
		{fmt.Sprintf("(b) a majority (3 of 5) with clocks %dx too fast", clockRate), "clock check", r.controlFastClock},
	}
}

// controls runs every negative control twice: with the library's check
// for the breach off, where every control must make the checker report
// violations (off counts them), and with it on (the default), where none
// may (on counts them).
func (r *runner) controls(ctx context.Context) (off, on int, err error) {
	for _, c := range r.negatives() {
		for _, protected := range []bool{false, true} {
			state := "off"
			if protected {
				state = "on (the default)"
			}
			r.say("negative control %s, %s %s", c.name, c.check, state)
			violations, err := c.run(ctx, protected)
			if err != nil {
				return off, on, fmt.Errorf("negative control %s, %s %s: %w", c.name, c.check, state, err)
			}
			r.say("  %d violations detected", len(violations))
			for _, v := range violations[:min(len(violations), 2)] {
				r.say("  e.g. %s", v)
			}
			switch {
			case protected:
				on += len(violations)
			case len(violations) == 0:
				return off, on, fmt.Errorf("negative control %s, %s off: no violation detected: the checker cannot be trusted", c.name, c.check)
			default:
				off += len(violations)
			}
		}
	}
	return off, on, nil
}

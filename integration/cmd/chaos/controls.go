package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/integration/internal/harness"
	"github.com/quorumlock/redlock/integration/internal/nodes"
	"github.com/quorumlock/redlock/redlocktest/checker"
	"github.com/quorumlock/redlock/redlocktest/workload"
)

// The negative controls break one of the assumptions in docs/safety.md on purpose
// and must make the checker report violations: a checker that stays quiet
// here would make the chaos run's "0 violations" worthless.
const (
	// controlTTL outlasts a restart of three containers, and the holder
	// renews nothing (watchdog off), so its leases stay valid, by the
	// library's own account, for the whole control.
	controlTTL = 10 * time.Second
	// contendFor bounds the second owner's attempt in each mode.
	contendFor = 3 * time.Second
	// clockRate is how much too fast the majority's clocks run: a key
	// meant to live 10s is gone from them in 1s.
	clockRate = 10
	// clockLead is how long the holder holds before the contender tries,
	// for the fast clocks to expire its keys on the majority.
	clockLead = 1500 * time.Millisecond
)

// majority are the nodes the controls break: three of five.
var majority = []int{0, 1, 2}

// controlRestartEmpty is control (a): a majority restarted empty at once
// while a holder has every mode's lock. guarded: with the restart guard
// (the default; the contender must get nothing), or without it (the
// checker must catch two owners).
func (r *runner) controlRestartEmpty(ctx context.Context, guarded bool) ([]checker.Violation, error) {
	// The nodes' data is gone from the run before: their locks are, too.
	if err := r.cluster.MarkNew(ctx, majority...); err != nil {
		return nil, err
	}
	var opts []redlock.Option
	if !guarded {
		opts = append(opts, redlock.WithRestartGuard(0))
	}
	return r.control(ctx, guarded, opts, func(ctx context.Context) error {
		return r.cluster.RestartEmpty(ctx, majority...)
	})
}

// controlFastClock is control (b): a majority of nodes whose clocks run ten
// times too fast, far beyond the drift factor. The nodes are recreated
// with the fast-clock shim (once), and the clock is checked to really run
// fast first. checked: with the clock check (the default; no Client gets
// the lock), or without it (the checker must catch two owners).
func (r *runner) controlFastClock(ctx context.Context, checked bool) ([]checker.Violation, error) {
	if !r.fastClocks {
		errs := make([]error, len(majority))
		var wg sync.WaitGroup
		for j, i := range majority {
			wg.Go(func() { errs[j] = r.cluster.Recreate(ctx, i, nodes.FastClock(clockRate)) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		if err := r.cluster.CheckFastClock(ctx, majority[0], r.cluster.N()-1); err != nil {
			return nil, err
		}
		r.fastClocks = true
		r.say("  fast clock checked: a 1s key is gone from node %d after 300ms, still on node %d", majority[0]+1, r.cluster.N())
	}
	// New containers: they never held a lock (this control is about
	// clocks, not lost data).
	if err := r.cluster.MarkNew(ctx, majority...); err != nil {
		return nil, err
	}
	var opts []redlock.Option
	if !checked {
		opts = append(opts, redlock.WithClockCheck(false))
	}
	return r.control(ctx, checked, opts, func(ctx context.Context) error { return harness.Sleep(ctx, clockLead) })
}

// control has one Client hold every mode's lock, runs breach, then has a
// second Client take every mode's lock, and returns what the checker
// makes of the grants. protected: the library's check for the breach is
// on, so a mode the holder cannot take is reported, not an error.
func (r *runner) control(ctx context.Context, protected bool, extra []redlock.Option, breach func(context.Context) error) ([]checker.Violation, error) {
	opts := slices.Concat(harness.Options(), []redlock.Option{redlock.WithTTL(controlTTL), redlock.WithWatchdog(false)}, extra)
	check := checker.New()
	holder, closeHolder, err := r.dial(1, opts...)
	if err != nil {
		return nil, err
	}
	defer closeHolder()
	check.Limit(string(workload.Semaphore)+":semaphore", workload.SemaphorePermits)
	holds, err := r.holdEvery(ctx, holder[0], protected, opts)
	defer func() { // on the error paths; emptied on success
		for _, h := range holds {
			_ = h.lease.Unlock(context.WithoutCancel(ctx))
		}
	}()
	if err != nil {
		return nil, err
	}
	if err := breach(ctx); err != nil {
		return nil, err
	}
	if err := r.contendEvery(ctx, check, opts); err != nil {
		return nil, err
	}
	// The holder lets go only now: its grants span the contender's.
	for _, h := range holds {
		harness.Record(check, h.mode, h.lease, h.acquired, time.Now())
		_ = h.lease.Unlock(ctx)
	}
	holds = nil
	return check.Violations(), nil
}

// controlHold is one lease the control's holder took.
type controlHold struct {
	mode     workload.Mode
	lease    *redlock.Lease
	acquired time.Time
}

// holdEvery has holder take every mode's lock (every permit of the
// semaphore, a read hold of the read-write lock). It returns the holds
// taken so far also when it fails, for the caller to give back.
func (r *runner) holdEvery(ctx context.Context, holder *redlock.Client, protected bool, opts []redlock.Option) ([]controlHold, error) {
	var holds []controlHold
	for _, mode := range workload.AllModes {
		leases := 1
		if mode == workload.Semaphore {
			leases = workload.SemaphorePermits // every permit: the contender's is one too many
		}
		for range leases {
			lockCtx, cancel := context.WithTimeout(ctx, contendFor)
			lock := harness.Locker(holder, mode, opts...)
			if mode == workload.RW {
				lock, _ = workload.ReadWrite(holder, opts...) // a read hold: the contender writes
			}
			lease, err := lock(lockCtx)
			cancel()
			switch {
			case err != nil && protected:
				r.say("  %s: the holder got no lock (%s)", mode, oneLine(err))
			case err != nil:
				return holds, fmt.Errorf("holder: %s: %w", mode, err)
			default:
				holds = append(holds, controlHold{mode: mode, lease: lease, acquired: time.Now()})
			}
		}
	}
	return holds, nil
}

// contendEvery has a second Client, connected after the breach as a new
// process would, take every mode's lock once, and records each grant.
func (r *runner) contendEvery(ctx context.Context, check *checker.Checker, opts []redlock.Option) error {
	contender, closeContender, err := r.dial(1, opts...)
	if err != nil {
		return err
	}
	defer closeContender()
	for _, mode := range workload.AllModes {
		lockCtx, cancel := context.WithTimeout(ctx, contendFor)
		lock := harness.Locker(contender[0], mode, opts...)
		if mode == workload.RW {
			_, lock = workload.ReadWrite(contender[0], opts...)
		}
		lease, err := lock(lockCtx)
		cancel()
		if err != nil {
			r.say("  %s: the second owner got no lock (%s)", mode, oneLine(err))
			continue
		}
		acquired := time.Now()
		harness.Record(check, mode, lease, acquired, time.Now())
		_ = lease.Unlock(ctx)
	}
	return ctx.Err()
}

// oneLine puts a multi-line error (a quorum error lists one node a line)
// on one line.
func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }

package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkContended measures a hot lock: cfg.workers goroutines loop over
// Lock, hold cfg.hold, Unlock on one name for cfg.duration of wall time,
// each library in turn on the same nodes. Each invocation is one whole run
// whatever b.N is, so run it with -benchtime 1x and repeat with -count.
//
// ns/op is the wall time per critical section (handoff included). The
// gap is the lock's idle time between holders: from a holder calling Unlock
// to the next Lock returning. A wait is the time one Lock call took; a Lock
// still waiting when the run ends counts with the time it had waited.
// regrab-% is how often the next holder was the worker that just released.
func BenchmarkContended(b *testing.B) {
	cfg := loadConfig(b)
	set := startNodes(b, cfg.nodes)
	for _, l := range libsFor(cfg.workers) {
		b.Run(fmt.Sprintf("lib=%s/nodes=%d", l.name, cfg.nodes), func(b *testing.B) {
			runContended(b, cfg, set, l)
		})
	}
}

// runSeq makes lock names unique per run, so no key left by one run (a
// redsync key expiring, say) can touch the next.
var runSeq atomic.Int64

func lockName(kind string) string {
	return fmt.Sprintf("bench-%s-%d-%d", kind, time.Now().UnixNano(), runSeq.Add(1))
}

func runContended(b *testing.B, cfg config, set *nodes, l lib) {
	r, err := l.setup(set, cfg.workers, lockName("contended"), cfg.hold)
	closeRig, warmCtx := ready(b, r, err)
	before, err := set.snapshot(warmCtx, r.calls)
	if err != nil {
		b.Fatal(err)
	}

	b.ResetTimer()
	logs, deadline := contend(r.lockers, cfg.hold, cfg.duration)
	b.StopTimer()
	if err := closeRig(); err != nil { // lets late releases finish before counting
		b.Errorf("close: %v", err)
	}
	after, err := set.snapshot(context.Background(), r.calls)
	if err != nil {
		b.Fatal(err)
	}
	spent := after.since(set, before)

	reportContended(b, cfg, logs, deadline, spent)
}

// reportContended checks a contended run's logs (errors, overlaps) and
// reports its metrics; spent is what the nodes and clients counted.
func reportContended(b *testing.B, cfg config, logs []workerLog, deadline time.Time, spent counts) {
	for i, log := range logs {
		if log.err != nil {
			b.Errorf("worker %d: %d unexpected errors, first: %v", i, log.errs, log.err)
		}
		if log.unlockErr != nil {
			b.Errorf("worker %d: %d Unlock errors, last: %v", i, log.unlockErrs, log.unlockErr)
		}
	}
	st := analyze(logs, deadline)
	if st.overlaps > 0 {
		b.Errorf("mutual exclusion violated: %d grants before the previous holder's Unlock", st.overlaps)
	}
	if st.sections == 0 {
		b.Fatal("no critical section completed")
	}
	sections := float64(st.sections)
	b.ReportMetric(float64(cfg.duration.Nanoseconds())/sections, "ns/op")
	b.ReportMetric(sections/cfg.duration.Seconds(), "sections/s")
	gaps, waits := sortedCopy(st.gaps), sortedCopy(st.waits)
	b.ReportMetric(micros(percentile(gaps, 0.50)), "gap-p50-µs")
	b.ReportMetric(micros(percentile(sortedCopy(st.holds), 0.50)), "hold-p50-µs")
	b.ReportMetric(micros(percentile(gaps, 0.99)), "gap-p99-µs")
	b.ReportMetric(millis(percentile(waits, 0.99)), "wait-p99-ms")
	b.ReportMetric(millis(percentile(waits, 1)), "wait-max-ms")
	if len(st.gaps) > 0 {
		b.ReportMetric(100*float64(st.regrabs)/float64(len(st.gaps)), "regrab-%")
	}
	b.ReportMetric(float64(spent.cmds)/sections, "cmds/section")
	b.ReportMetric(float64(spent.calls)/sections, "calls/section")
	b.ReportMetric(micros(spent.redisCPU)/sections, "redis-cpu-µs/section")
	b.ReportMetric(micros(spent.scriptT)/sections, "script-µs/section")
}

// section is one critical section, as its worker saw it.
type section struct {
	worker   int
	asked    time.Time // Lock called
	granted  time.Time // Lock returned the lock
	released time.Time // Unlock called
}

// workerLog is what one worker saw; each worker writes only its own.
type workerLog struct {
	sections []section
	cut      time.Duration // how long the Lock the run's end cut short had waited
	errs     int           // unexpected Lock errors; the worker stops at the first
	err      error
	// Unlock errors: the worker goes on (a release that found no quorum
	// still ends the lease); a run without faults must have none.
	unlockErrs int
	unlockErr  error
}

// contend runs the workers until d has passed and returns their logs and
// the run's deadline. Every worker has returned when it returns.
func contend(lockers []locker, hold, d time.Duration) ([]workerLog, time.Time) {
	deadline := time.Now().Add(d)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	logs := make([]workerLog, len(lockers))
	var wg sync.WaitGroup
	for i, l := range lockers {
		wg.Go(func() { logs[i] = work(ctx, i, l, hold) })
	}
	wg.Wait()
	return logs, deadline
}

func work(ctx context.Context, worker int, l locker, hold time.Duration) workerLog {
	var log workerLog
	for ctx.Err() == nil {
		s := section{worker: worker, asked: time.Now()}
		unlock, err := l.lock(ctx)
		s.granted = time.Now()
		if err != nil {
			if ctx.Err() != nil {
				log.cut = s.granted.Sub(s.asked)
				return log
			}
			log.errs, log.err = 1, err
			return log
		}
		time.Sleep(hold)
		s.released = time.Now()
		if err := unlock(); err != nil {
			log.unlockErrs++
			log.unlockErr = err
		}
		log.sections = append(log.sections, s)
	}
	return log
}

// contendedStats is what the logs say about the lock.
type contendedStats struct {
	sections int             // granted before the deadline
	gaps     []time.Duration // release to next grant, in grant order
	waits    []time.Duration // every Lock call, cut ones included
	holds    []time.Duration // grant to Unlock call: the hold as slept
	regrabs  int             // gaps after which the same worker held it again
	overlaps int             // grants before the previous Unlock: must be 0
}

func analyze(logs []workerLog, deadline time.Time) contendedStats {
	var st contendedStats
	var all []section
	for _, log := range logs {
		for _, s := range log.sections {
			if s.granted.Before(deadline) {
				all = append(all, s)
				st.holds = append(st.holds, s.released.Sub(s.granted))
			}
			st.waits = append(st.waits, s.granted.Sub(s.asked))
		}
		if log.cut > 0 {
			st.waits = append(st.waits, log.cut)
		}
	}
	slices.SortFunc(all, func(a, b section) int { return a.granted.Compare(b.granted) })
	st.sections = len(all)
	for i := 1; i < len(all); i++ {
		prev, next := all[i-1], all[i]
		gap := next.granted.Sub(prev.released)
		if gap < 0 {
			st.overlaps++
			continue
		}
		st.gaps = append(st.gaps, gap)
		if next.worker == prev.worker {
			st.regrabs++
		}
	}
	return st
}

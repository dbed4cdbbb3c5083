package bench

import (
	"fmt"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
)

// BenchmarkContendedDegraded is the contended run of many processes (one
// Client per worker) with a minority of the nodes killed (SIGKILL) a third
// of the way in: what users see when they kill nodes in docker-compose.
// Each library gets a node set of its own, since the run kills nodes. The
// run lasts twice BENCH_DURATION, so that the degraded part (two thirds of
// it) is not only the moment each Client learns that the nodes are gone.
//
// healthy-sections/s counts the grants before the kill, degraded-sections/s
// those after it, and degraded-% is the second as a share of the first.
func BenchmarkContendedDegraded(b *testing.B) {
	cfg := loadConfig(b)
	libs := []lib{
		{fmt.Sprintf("redlock-%dclients", cfg.workers), redlockWith(setupRedlockPerWorker)},
		{fmt.Sprintf("redlock-fair-%dclients", cfg.workers), redlockWith(setupRedlockPerWorker, redlock.WithFair())},
		{"redsync", setupRedsync},
	}
	for _, l := range libs {
		b.Run(fmt.Sprintf("lib=%s/nodes=%d", l.name, cfg.nodes), func(b *testing.B) {
			runDegraded(b, cfg, l)
		})
	}
}

func runDegraded(b *testing.B, cfg config, l lib) {
	minority := (cfg.nodes - 1) / 2
	if minority == 0 {
		b.Skip("no minority to kill with fewer than 3 nodes")
	}
	set := startNodes(b, cfg.nodes)
	r, err := l.setup(set, cfg.workers, lockName("degraded"), cfg.hold)
	closeRig, _ := ready(b, r, err)

	duration := 2 * cfg.duration
	killed := make(chan time.Time, 1)
	timer := time.AfterFunc(duration/3, func() {
		for _, srv := range set.servers[len(set.servers)-minority:] {
			srv.kill()
		}
		killed <- time.Now()
	})
	defer timer.Stop()
	b.ResetTimer()
	logs, deadline := contend(r.lockers, cfg.hold, duration)
	b.StopTimer()
	killedAt := <-killed
	if err := closeRig(); err != nil {
		b.Errorf("close: %v", err)
	}

	start := deadline.Add(-duration)
	var before, after, unlockErrs int
	for i, log := range logs {
		if log.err != nil {
			b.Errorf("worker %d: %d unexpected errors, first: %v", i, log.errs, log.err)
		}
		// A lease held on a minority of live nodes when the others died
		// cannot be released on a quorum: Unlock says so, and the lease
		// ends all the same.
		unlockErrs += log.unlockErrs
		for _, s := range log.sections {
			switch {
			case !s.granted.Before(deadline):
			case s.granted.Before(killedAt):
				before++
			default:
				after++
			}
		}
	}
	if st := analyze(logs, deadline); st.overlaps > 0 {
		b.Errorf("mutual exclusion violated: %d grants before the previous holder's Unlock", st.overlaps)
	}
	if before == 0 {
		b.Fatal("no critical section completed before the kill")
	}
	healthy := float64(before) / killedAt.Sub(start).Seconds()
	degraded := float64(after) / deadline.Sub(killedAt).Seconds()
	b.ReportMetric(healthy, "healthy-sections/s")
	b.ReportMetric(degraded, "degraded-sections/s")
	b.ReportMetric(100*degraded/healthy, "degraded-%")
	b.ReportMetric(float64(unlockErrs), "unlock-errs")
}

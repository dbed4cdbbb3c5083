package main

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest/workload"
)

// lockErrorsShown bounds the lock errors a run prints.
const lockErrorsShown = 5

// runWorkload is workload.Run, but the first lockErrorsShown errors of
// Lock calls are printed: the workers wait without a deadline, so a Lock
// that fails gave up for good (a node it may not use, a closed Client),
// which the count alone does not say.
func (r *runner) runWorkload(ctx context.Context, cfg workload.Config, stats *workload.Stats) {
	cfg.Check.Limit(string(workload.Semaphore)+":semaphore", workload.SemaphorePermits)
	records := &workload.Records{}
	var shown atomic.Int64
	var wg sync.WaitGroup
	next := 0
	for _, mode := range workload.AllModes {
		for range cfg.Workers {
			lock := workload.Locker(cfg.Clients[next%len(cfg.Clients)], mode, cfg.Options...)
			next++
			w := &workload.Worker{Mode: mode, Names: workload.Names(mode), Hold: cfg.Hold, Check: cfg.Check,
				Stats: stats, Records: records,
				Lock: func(ctx context.Context) (*redlock.Lease, error) {
					lease, err := lock(ctx)
					if err != nil && ctx.Err() == nil && shown.Add(1) <= lockErrorsShown {
						r.say("lock error (%s): %s", mode, oneLine(err))
					}
					return lease, err
				}}
			wg.Go(func() { w.Run(ctx) })
		}
	}
	wg.Wait()
}

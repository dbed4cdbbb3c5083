package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/quorumlock/redlock"
)

// worker is one worker process's settings.
type worker struct {
	name     string
	nodes    []string
	dsn      string
	ttl      time.Duration // of the lease; the watchdog renews it while held
	work     time.Duration // what one job takes
	sections int           // jobs to do at most (0: until none is left)
	fenced   bool          // send the token, and let the database check it
}

// run claims jobs in the fair queue's order until none is left: under the
// lock, the lowest job without a result is this worker's; its result is
// written with the lease's fencing token.
func (w worker) run(ctx context.Context) error {
	client, err := redlock.Dial(w.nodes, redlock.WithFair(), redlock.WithFencing(), redlock.WithTTL(w.ttl))
	if err != nil {
		return err
	}
	defer client.Close()
	db, err := pgx.Connect(ctx, w.dsn)
	if err != nil {
		return err
	}
	defer db.Close(context.Background())
	queue := client.Mutex("job-queue")
	for n := 0; w.sections == 0 || n < w.sections; n++ {
		more, err := w.section(ctx, queue, db)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// section does one job under the lock, and reports whether any was left.
func (w worker) section(ctx context.Context, queue *redlock.Mutex, db *pgx.Conn) (bool, error) {
	lease, err := queue.Lock(ctx)
	if err != nil {
		return false, err
	}
	defer lease.Unlock(context.Background())
	job, err := nextJob(lease.Context(), db)
	if err != nil || job == 0 {
		return false, err
	}
	fmt.Printf("%s claimed job %d with token %d\n", w.name, job, lease.Token())
	time.Sleep(w.work) // the work; a pause here (GC, SIGSTOP, a frozen VM) outlives the lease
	// No check of lease.Context() here: it could pass and the process
	// still pause before the write. The token is what the database checks.
	err = finish(ctx, db, job, w.name, lease.Token(), w.fenced)
	if errors.Is(err, errStale) {
		fmt.Printf("%s: job %d: %v\n", w.name, job, err)
		return false, nil // this worker's lease is gone: stop, as a real one would
	}
	if err == nil {
		fmt.Printf("%s finished job %d\n", w.name, job)
	}
	return err == nil, err
}

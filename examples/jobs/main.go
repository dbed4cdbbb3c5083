// Command jobs claims jobs fairly: workers of several processes (here,
// several Clients) take the lock of a job queue in the order they asked for
// it (redlock.WithFair), so no worker starves, and each claim carries a
// fencing token that the job store checks.
//
//	go run ./jobs                     # starts 5 local nodes, declared new
//	go run ./jobs -nodes redis://n1:6379,redis://n2:6379,redis://n3:6379
//
// Nodes of your own that were started less than the restart guard (here
// the TTL, 30 s) ago vote once it has passed, or at once after
// `redlock init URL...` if they are brand new.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/examples/internal/localnodes"
)

func main() {
	list := flag.String("nodes", "", "comma-separated node URLs (default: 5 local nodes)")
	workers := flag.Int("workers", 4, "workers, each with its own Client as if in its own process")
	flag.Parse()
	if err := run(*list, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "jobs:", err)
		os.Exit(1)
	}
}

// store is the job table: it refuses a claim whose fencing token is older
// than one it has seen, so a worker that paused past its lease cannot
// claim a job twice.
type store struct {
	mu      sync.Mutex
	next    int
	highest uint64
}

func (s *store) claim(token uint64) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.highest {
		return 0, fmt.Errorf("stale fencing token %d < %d", token, s.highest)
	}
	s.highest = token
	s.next++
	return s.next, nil
}

func run(list string, workers int) error {
	urls := strings.Split(list, ",")
	if list == "" {
		var stop func()
		var err error
		if urls, stop, err = localnodes.Start(5); err != nil {
			return err
		}
		defer stop()
	}
	jobs := &store{}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		client, err := redlock.Dial(urls, redlock.WithFair(), redlock.WithFencing())
		if err != nil {
			return err
		}
		defer client.Close()
		queue := client.Mutex("job-queue")
		wg.Go(func() {
			for range 3 {
				lease, err := queue.Lock(ctx)
				if err != nil {
					errs <- err
					return
				}
				job, err := jobs.claim(lease.Token())
				_ = lease.Unlock(context.Background())
				if err != nil {
					errs <- err
					return
				}
				fmt.Printf("worker %d claimed job %d (token %d)\n", w, job, lease.Token())
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	return nil
}

// Command jobs claims jobs fairly from a PostgreSQL table: worker
// processes take the lock of the job queue in the order they asked for it
// (redlock.WithFair), so none starves, and each writes its job's result
// with the lease's fencing token, which the database checks: a worker that
// paused past its lease (GC, SIGSTOP, a frozen VM) and wakes to write has
// its write refused, where without the check the job would be done twice.
//
//	go run ./jobs     # 5 local Redis nodes and a throwaway PostgreSQL (Debian's postgresql)
//	go run ./jobs -nodes redis://n1:6379,redis://n2:6379,redis://n3:6379 -db postgres://...
//
// Nodes of your own that were started less than the restart guard (here
// the TTL) ago vote once it has passed, or at once after
// `redlock init URL...` if they are brand new. The pattern, for SQL and
// other stores: docs/safety.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/quorumlock/redlock/examples/internal/localnodes"
	"github.com/quorumlock/redlock/examples/internal/localpg"
)

func main() {
	var w worker
	var nodes string
	flag.StringVar(&nodes, "nodes", "", "comma-separated node URLs (default: 5 local nodes)")
	flag.StringVar(&w.dsn, "db", "", "PostgreSQL URL (default: a throwaway local server)")
	workers := flag.Int("workers", 4, "worker processes")
	jobs := flag.Int("jobs", 12, "jobs in the table")
	flag.DurationVar(&w.work, "work", 20*time.Millisecond, "what one job takes")
	flag.DurationVar(&w.ttl, "ttl", 2*time.Second, "the lease's TTL")
	flag.BoolVar(&w.fenced, "fencing", true, "let the database check each write's fencing token")
	flag.IntVar(&w.sections, "sections", 0, "as a worker: jobs to do at most (0: until none is left)")
	flag.StringVar(&w.name, "worker", "", "run as one worker process of this name (the command starts them)")
	flag.Parse()
	w.nodes = strings.Split(nodes, ",")
	var err error
	if w.name != "" {
		err = w.run(context.Background())
	} else {
		err = run(w, nodes, *workers, *jobs)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "jobs:", err)
		os.Exit(1)
	}
}

// run starts what was not given, fills the table, runs the workers as
// processes of their own, and reports.
func run(w worker, nodes string, workers, jobs int) error {
	if nodes == "" {
		urls, stop, err := localnodes.Start(5)
		if err != nil {
			return err
		}
		defer stop()
		w.nodes = urls
	}
	if w.dsn == "" {
		pg, err := localpg.Start()
		if err != nil {
			return err
		}
		defer pg.Stop()
		w.dsn = pg.DSN()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := pgx.Connect(ctx, w.dsn)
	if err != nil {
		return err
	}
	defer db.Close(context.Background())
	if err := setUp(ctx, db, jobs); err != nil {
		return err
	}
	procs := make([]*exec.Cmd, workers)
	for i := range procs {
		w.name = fmt.Sprintf("worker-%d", i+1)
		if procs[i], err = w.start(); err != nil {
			return err
		}
	}
	for _, p := range procs {
		if err := p.Wait(); err != nil {
			return fmt.Errorf("%s: %w", p.Args[len(p.Args)-1], err)
		}
	}
	r, err := readReport(ctx, db)
	fmt.Println(r)
	if err == nil && r.duplicated > 0 {
		err = fmt.Errorf("%d jobs done more than once", r.duplicated)
	}
	return err
}

// workerEnv marks a process started as a worker.
const workerEnv = "JOBS_WORKER"

// args is w's command line as a worker process.
func (w worker) args() []string {
	return []string{"-nodes", strings.Join(w.nodes, ","), "-db", w.dsn, "-work", w.work.String(),
		"-ttl", w.ttl.String(), fmt.Sprintf("-fencing=%t", w.fenced), fmt.Sprintf("-sections=%d", w.sections),
		"-worker", w.name}
}

// start runs w as a process of this command, its output on ours.
func (w worker) start() (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, w.args()...)
	cmd.Env = append(os.Environ(), workerEnv+"=1") // a test binary runs main on seeing it
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd, cmd.Start()
}

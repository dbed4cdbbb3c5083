package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/quorumlock/redlock"
)

// forwarded are the signals a supervisor or a user sends to stop a job.
// redlock passes them on to CMD instead of dying from them, so that the
// lock is released only after CMD has stopped.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// releaseTimeout bounds the release after CMD exits. A release that does
// not reach a quorum leaves holds that expire at the TTL.
const releaseTimeout = 5 * time.Second

// holdAndRun checks that a quorum of nodes answers (on ns, which it then
// closes), waits for the lock, runs CMD under it and releases it. Signals are caught from the start, so
// that one arriving while redlock waits stops the wait cleanly.
func holdAndRun(cfg runConfig, client *redlock.Client, ns *nodeSet, stderr io.Writer) int {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)

	// Without a quorum, Lock would retry until -wait ends and report a
	// timeout; the operator needs to hear about the nodes instead.
	ok, failed := ns.quorumAnswers(context.Background(), nodeTimeout)
	ns.close() // done with: this also cuts a ping still out to a paused node
	if !ok {
		cfg.printf(stderr, "no quorum: %d of %d nodes reachable, %d needed: %s\n",
			len(ns.clients)-len(failed), len(ns.clients), ns.quorum(), describeNodes(failed))
		return exitError
	}
	lease, code := acquire(cfg, client, sigs, stderr)
	if lease == nil {
		return code
	}
	return supervise(cfg, lease, sigs, stderr)
}

// errWaitOver is the cause of the ctx of a Lock whose -wait ran out.
var errWaitOver = errors.New("-wait elapsed")

// acquire waits for the lock for up to -wait. It returns the lease, or nil
// and the exit status after printing why.
func acquire(cfg runConfig, client *redlock.Client, sigs <-chan os.Signal, stderr io.Writer) (*redlock.Lease, int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if cfg.wait > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, cfg.wait, errWaitOver)
		defer stop()
	}
	type result struct {
		lease *redlock.Lease
		err   error
	}
	// Lock runs in its own goroutine so that this one can watch for
	// signals; every path below receives its result before returning.
	done := make(chan result, 1)
	var locking sync.WaitGroup
	take := client.Mutex(cfg.name).Lock
	switch {
	case cfg.command == "elect":
		election := client.Election(cfg.name)
		take = func(ctx context.Context) (*redlock.Lease, error) { return election.Campaign(ctx, cfg.value) }
	case cfg.permits > 0:
		take = client.Semaphore(cfg.name, cfg.permits).Acquire
	}
	locking.Go(func() {
		lease, err := take(ctx)
		done <- result{lease, err}
	})
	var r result
	select {
	case r = <-done:
	case sig := <-sigs:
		cancel()
		r = <-done
		locking.Wait()
		if r.lease != nil { // granted just as the signal came: give it back
			release(cfg, r.lease, stderr)
		}
		cfg.printf(stderr, "%v while waiting for lock %q\n", sig, cfg.name)
		return nil, exitSignalBase + signalNumber(sig)
	}
	locking.Wait()
	if r.err != nil {
		return nil, notAcquired(cfg, r.err, errors.Is(context.Cause(ctx), errWaitOver), stderr)
	}
	return r.lease, exitOK
}

// notAcquired says why Lock failed with err (waitOver: its -wait ran
// out) and returns the exit status.
func notAcquired(cfg runConfig, err error, waitOver bool, stderr io.Writer) int {
	switch {
	case errors.Is(err, redlock.ErrConfig):
		cfg.printf(stderr, "%s (see redlock %s -h)\n", plain(err), cfg.command)
		return exitUsage
	case errors.Is(err, redlock.ErrKeyConflict):
		// Waiting cannot fix it: Lock returned at once.
		cfg.printf(stderr, "lock %q: %s\n", cfg.name, plain(err))
		return exitError
	case errors.Is(err, redlock.ErrQuarantined) && (errors.Is(err, redlock.ErrNoQuorum) || waitOver):
		// No quorum because nodes answer but do not vote yet (the restart
		// guard, the clock check), not because they are out of reach:
		// waiting longer would do, so it is "not acquired".
		cfg.printf(stderr, "lock %q not acquired%s: too few nodes vote yet: %s\n",
			cfg.name, within(cfg.wait), describeNodes(nodeErrors(err)))
		return exitNotAcquired
	case errors.Is(err, redlock.ErrNoQuorum):
		cfg.printf(stderr, "no quorum for lock %q: %s\n", cfg.name, describeNodes(nodeErrors(err)))
		return exitError
	case waitOver && errors.Is(err, redlock.ErrNotAcquired) && cfg.permits > 0:
		cfg.printf(stderr, "no permit of semaphore %q within %v: all %d are held\n", cfg.name, cfg.wait, cfg.permits)
		return exitNotAcquired
	case waitOver && errors.Is(err, redlock.ErrNotAcquired):
		// What the last attempt saw: another owner, or no answer in time.
		cfg.printf(stderr, "lock %q not acquired within %v: %s (see redlock inspect %s)\n",
			cfg.name, cfg.wait, plain(err), cfg.name)
		return exitNotAcquired
	}
	cfg.printf(stderr, "lock %q: %s\n", cfg.name, plain(err))
	return exitError
}

// supervise runs CMD while the lease is held and returns redlock's exit
// status: CMD's, or exitLost when the lease ended before CMD did.
func supervise(cfg runConfig, lease *redlock.Lease, sigs <-chan os.Signal, stderr io.Writer) int {
	cmd := exec.Command(cfg.resolved, cfg.argv[1:]...)
	cmd.Args[0] = cfg.argv[0] // as the user typed it, as a shell would pass it
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = childEnv(cfg, lease)
	defer dieWithRedlock(cmd)()
	if err := cmd.Start(); err != nil {
		release(cfg, lease, stderr)
		cfg.printf(stderr, "%s: %s\n", cfg.argv[0], oneLine(err))
		return exitCannotInvoke
	}
	// Stdin, stdout and stderr are files, so Wait starts no copying
	// goroutines and returns as soon as CMD exits.
	exited := make(chan error, 1)
	var waiting sync.WaitGroup
	waiting.Go(func() { exited <- cmd.Wait() })
	defer waiting.Wait()

	leaseDone := lease.Done()
	var graceC <-chan time.Time
	lost := false
	for {
		select {
		case <-exited:
			if !lost && lease.Err() != nil {
				// Lost as CMD exited: it may have acted unprotected.
				lost = true
				cfg.printf(stderr, "lock %q lost as %s exited: %s\n", cfg.name, cfg.argv[0], plain(context.Cause(lease.Context())))
			}
			if !release(cfg, lease, stderr) && !lost {
				return exitStatus(cmd.ProcessState)
			}
			return exitLost
		case sig := <-sigs:
			_ = cmd.Process.Signal(sig)
		case <-leaseDone:
			leaseDone, lost = nil, true
			cfg.printf(stderr, "lock %q lost while %s ran (%s): sent it SIGTERM, SIGKILL in %v\n",
				cfg.name, cfg.argv[0], plain(context.Cause(lease.Context())), cfg.grace)
			_ = cmd.Process.Signal(syscall.SIGTERM)
			timer := time.NewTimer(cfg.grace)
			defer timer.Stop()
			graceC = timer.C
		case <-graceC:
			graceC = nil
			_ = cmd.Process.Kill()
		}
	}
}

// release gives the lock back. After a loss the holds left on reachable
// nodes still go, so the next holder need not wait for their TTL. It
// reports whether the release found the lease lost unnoticed: its holds
// were gone from a quorum (unlock -force, or nodes that lost them) before
// the watchdog's next renewal could tell, so CMD may have run without it.
func release(cfg runConfig, lease *redlock.Lease, stderr io.Writer) (lost bool) {
	held := lease.Err() == nil
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	err := lease.Unlock(ctx)
	switch {
	case err == nil || !held:
	case errors.Is(err, redlock.ErrNotHeld):
		// Nothing is left to expire: the holds were already gone.
		cfg.printf(stderr, "lock %q lost while %s ran, found at the release (%s; taken by unlock -force, or the nodes lost it): %s may have acted without it\n",
			cfg.name, cfg.argv[0], plain(err), cfg.argv[0])
		return true
	default:
		cfg.printf(stderr, "release of lock %q: %s; holds left on the nodes that missed it expire at the TTL\n", cfg.name, plain(err))
	}
	return false
}

// childEnv is redlock's environment plus what CMD needs to use the lock.
// A REDLOCK_TOKEN inherited from an outer redlock run is dropped: it is
// another lock's token.
func childEnv(cfg runConfig, lease *redlock.Lease) []string {
	env := make([]string, 0, len(os.Environ())+3)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REDLOCK_TOKEN=") {
			env = append(env, kv)
		}
	}
	// exec.Cmd keeps the last value of a duplicate key: these win.
	env = append(env, "REDLOCK_NAME="+cfg.name, "REDLOCK_OWNER="+lease.Owner())
	if cfg.fencing {
		env = append(env, "REDLOCK_TOKEN="+strconv.FormatUint(lease.Token(), 10))
	}
	if cfg.command == "elect" {
		env = append(env, "REDLOCK_TERM="+strconv.FormatUint(lease.Token(), 10), "REDLOCK_VALUE="+cfg.value)
	}
	return env
}

// exitStatus is CMD's status as a shell reports it: 128+N for signal N.
func exitStatus(state *os.ProcessState) int {
	if ws, ok := state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitSignalBase + int(ws.Signal())
	}
	return state.ExitCode()
}

func signalNumber(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return int(s)
	}
	return 0
}

// within says how long a Lock waited: " within 10s", or nothing when it
// had no deadline (-wait 0).
func within(wait time.Duration) string {
	if wait <= 0 {
		return ""
	}
	return fmt.Sprintf(" within %v", wait)
}

package bench

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/quorumlock/redlock"
)

// xdcLog is what one figure timed.
type xdcLog struct {
	lat    []time.Duration // the figure's samples
	steady []time.Duration // fresh Clients: their Locks after the first
	errs   int             // failed cycles (not in lat)
	err    error           // the first failure
}

func (l *xdcLog) fail(err error) {
	if l.errs == 0 {
		l.err = err
	}
	l.errs++
}

// xdcCase is one figure. setup makes its Clients (closed at b's cleanup)
// and warms them up; it returns the measured run and the NodeError
// counters of our Clients (nil for redsync).
type xdcCase struct {
	kase, lib string
	setup     func(b *testing.B, s *site, cfg xdcConfig) (run func() xdcLog, errs nodeErrs)
}

// crossDCCases lists the figures in the order they run: a redsync row
// before ours of the same case, so that ours can be put against it.
func crossDCCases() []xdcCase {
	fair, fenced := []redlock.Option{redlock.WithFair()}, []redlock.Option{redlock.WithFencing()}
	return []xdcCase{
		{"lockunlock", "redsync", setupRedsyncCycles},
		{"lockunlock", "redlock", setupOursCycles(nil, false, false)},
		{"fenced-lock", "redlock", setupOursCycles(fenced, true, false)},
		{"fair-lock-new-name", "redlock", setupOursCycles(fair, true, true)},
		{"handoff", "redsync", setupRedsyncHandoff(false)},
		{"handoff", "redlock", setupOursHandoff(nil, false)},
		{"handoff", "redlock-fair", setupOursHandoff(fair, false)},
		{"alternating", "redsync", setupRedsyncHandoff(true)},
		{"alternating", "redlock", setupOursHandoff(nil, true)},
		{"alternating", "redlock-fair", setupOursHandoff(fair, true)},
		{"fresh-first-lock", "redlock", setupFresh},
	}
}

// ours dials a Client through the proxies with default options but opts,
// counting its NodeErrors in errs.
func (s *site) ours(b *testing.B, errs nodeErrs, opts ...redlock.Option) *redlock.Client {
	b.Helper()
	opts = append(opts, redlock.WithObserver(errs.observer()))
	c, err := redlock.Dial(s.urls(), opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	return c
}

// redsync makes a redsync with one pool per proxy, over go-redis clients
// of its own (closed at b's cleanup).
func (s *site) redsync(b *testing.B) *redsync.Redsync {
	var pools []redsyncredis.Pool
	for _, c := range s.goRedisClients() {
		b.Cleanup(func() { _ = c.Close() })
		pools = append(pools, goredis.NewPool(c))
	}
	return redsync.New(pools...)
}

// warm takes and gives back each locker once, outside the measurement:
// connections open, scripts loaded.
func warm(b *testing.B, lockers ...locker) {
	b.Helper()
	for i, l := range lockers {
		ctx, cancel := context.WithTimeout(context.Background(), lockTimeout)
		unlock, err := l.lock(ctx)
		cancel()
		if err != nil {
			b.Fatalf("warm-up lock %d: %v", i, err)
		}
		if err := unlock(); err != nil {
			b.Fatalf("warm-up unlock %d: %v", i, err)
		}
	}
}

func setupRedsyncCycles(b *testing.B, s *site, cfg xdcConfig) (func() xdcLog, nodeErrs) {
	l := redsyncLocker{s.redsync(b).NewMutex(lockName("xdc-lu"))}
	warm(b, l)
	return func() xdcLog { return sequential(cfg.cycles, func(int) locker { return l }, false) }, nil
}

// setupOursCycles: one Client (opts), sequential cycles on one name, or on
// a new name each cycle (newNames); lockOnly times the Lock alone.
func setupOursCycles(opts []redlock.Option, lockOnly, newNames bool) func(*testing.B, *site, xdcConfig) (func() xdcLog, nodeErrs) {
	return func(b *testing.B, s *site, cfg xdcConfig) (func() xdcLog, nodeErrs) {
		errs := make(nodeErrs, len(s.proxies))
		c := s.ours(b, errs, opts...)
		l := redlockLocker{c.Mutex(lockName("xdc"))}
		warm(b, l)
		lockOf := func(int) locker { return l }
		if newNames {
			lockOf = func(int) locker { return redlockLocker{c.Mutex(lockName("xdc-new"))} }
		}
		return func() xdcLog { return sequential(cfg.cycles, lockOf, lockOnly) }, errs
	}
}

// sequential runs n cycles one after another, cycle i on lockOf(i),
// timing the Lock alone (lockOnly) or Lock+Unlock.
func sequential(n int, lockOf func(i int) locker, lockOnly bool) xdcLog {
	var log xdcLog
	for i := range n {
		began := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), lockTimeout)
		unlock, err := lockOf(i).lock(ctx)
		cancel()
		if err != nil {
			log.fail(err)
			continue
		}
		locked := time.Since(began)
		if err := unlock(); err != nil {
			log.fail(fmt.Errorf("unlock: %w", err))
			continue
		}
		if lockOnly {
			log.lat = append(log.lat, locked)
		} else {
			log.lat = append(log.lat, time.Since(began))
		}
	}
	return log
}

// settle is how long a waiter is given to start waiting (its first try
// failed, it subscribed or queued) before the holder releases.
func (s *site) settle() time.Duration { return 2*s.prof.maxRTT() + 30*time.Millisecond }

func setupRedsyncHandoff(alternating bool) func(*testing.B, *site, xdcConfig) (func() xdcLog, nodeErrs) {
	return func(b *testing.B, s *site, cfg xdcConfig) (func() xdcLog, nodeErrs) {
		name := lockName("xdc-handoff")
		x := redsyncLocker{s.redsync(b).NewMutex(name)}
		y := redsyncLocker{s.redsync(b).NewMutex(name)}
		warm(b, x, y)
		return func() xdcLog { return handoffs(cfg.handoffs, x, y, s.settle(), alternating) }, nil
	}
}

func setupOursHandoff(opts []redlock.Option, alternating bool) func(*testing.B, *site, xdcConfig) (func() xdcLog, nodeErrs) {
	return func(b *testing.B, s *site, cfg xdcConfig) (func() xdcLog, nodeErrs) {
		errs := make(nodeErrs, len(s.proxies))
		name := lockName("xdc-handoff")
		x := redlockLocker{s.ours(b, errs, opts...).Mutex(name)}
		y := redlockLocker{s.ours(b, errs, opts...).Mutex(name)}
		warm(b, x, y)
		return func() xdcLog { return handoffs(cfg.handoffs, x, y, s.settle(), alternating) }, errs
	}
}

func handoffs(n int, x, y locker, settle time.Duration, alternating bool) xdcLog {
	if alternating {
		return alternate(n, x, y, settle)
	}
	var log xdcLog
	for i := range n + 1 { // the first handoff warms the waiter up
		ctx, cancel := context.WithTimeout(context.Background(), lockTimeout)
		unlock, err := x.lock(ctx)
		cancel()
		if err != nil {
			log.fail(fmt.Errorf("holder: %w", err))
			continue
		}
		next, d, err := handOver(unlock, y, settle)
		if err == nil && i > 0 {
			log.lat = append(log.lat, d)
		}
		if next != nil {
			if uerr := next(); err == nil && uerr != nil {
				err = fmt.Errorf("waiter's unlock: %w", uerr)
			}
		}
		if err != nil {
			log.fail(err)
		}
	}
	return log
}

// alternate passes the lock between x and y: each, once it got the lock
// by handoff, releases it to the other, who is waiting by then. Only
// handoffs from a holder that itself got the lock by handoff are timed.
func alternate(n int, x, y locker, settle time.Duration) xdcLog {
	var log xdcLog
	pair := [2]locker{x, y}
	holder, handed := 0, false
	var unlock func() error
	for tries := 0; len(log.lat) < n && tries < 2*n+2; tries++ {
		if unlock == nil { // start (or start over) from an uncontended Lock
			ctx, cancel := context.WithTimeout(context.Background(), lockTimeout)
			var err error
			unlock, err = pair[holder].lock(ctx)
			cancel()
			if err != nil {
				log.fail(fmt.Errorf("holder: %w", err))
				unlock = nil
				continue
			}
			handed = false
		}
		next, d, err := handOver(unlock, pair[1-holder], settle)
		if err != nil {
			log.fail(err)
		} else if handed {
			log.lat = append(log.lat, d)
		}
		unlock, holder, handed = next, 1-holder, err == nil
	}
	if unlock != nil {
		if err := unlock(); err != nil {
			log.fail(fmt.Errorf("last unlock: %w", err))
		}
	}
	return log
}

type grant struct {
	unlock func() error
	at     time.Time
	err    error
}

// handOver starts waiter's Lock, gives it settle to start waiting, then
// calls the holder's unlock. It returns the waiter's unlock (nil if its
// Lock failed) and the time from the unlock call to the waiter's Lock
// returning.
func handOver(unlock func() error, waiter locker, settle time.Duration) (func() error, time.Duration, error) {
	got := make(chan grant, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), lockTimeout)
		defer cancel()
		u, err := waiter.lock(ctx)
		got <- grant{u, time.Now(), err}
	}()
	time.Sleep(settle)
	began := time.Now()
	uerr := unlock()
	g := <-got
	switch {
	case g.err != nil:
		return nil, 0, errors.Join(fmt.Errorf("waiter: %w", g.err), uerr)
	case uerr != nil:
		return g.unlock, 0, fmt.Errorf("holder's unlock: %w", uerr)
	case g.at.Before(began):
		return g.unlock, 0, errors.New("the waiter got the lock before the holder's Unlock")
	}
	return g.unlock, g.at.Sub(began), nil
}

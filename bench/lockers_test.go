package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/quorumlock/redlock"
	"github.com/redis/go-redis/v9"
)

// redsyncExpiry is the key TTL the redsync mutexes use: long against the
// 1 ms critical sections, so that no lock expires while held. A longer hold
// (the idle run) gets a longer one, since redsync does not renew by itself.
const redsyncExpiry = 8 * time.Second

// locker is one worker's handle on the lock, whichever library is behind it.
type locker interface {
	// lock waits for the lock; unlock gives it back.
	lock(ctx context.Context) (unlock func() error, err error)
}

// rig is one library set up over the nodes: a locker per worker, plus every
// go-redis client it made (counted by calls), so runs can warm them up.
type rig struct {
	lockers []locker
	clients []*redis.Client
	share   int // how many workers use each go-redis client at once
	calls   *callCounter
	closers []func() error
}

// close closes the library clients first (a redlock Client waits for its
// background work there), then the go-redis clients under them.
func (r *rig) close() error {
	var errs []error
	for _, c := range r.closers {
		errs = append(errs, c())
	}
	for _, c := range r.clients {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// newClients makes one go-redis client per node, as a user would, with
// ContextTimeoutEnabled so a library's own deadlines cut calls short.
func (r *rig) newClients(set *nodes) []redis.UniversalClient {
	out := make([]redis.UniversalClient, 0, len(set.servers))
	for _, srv := range set.servers {
		c := redis.NewClient(&redis.Options{Addr: srv.addr, ContextTimeoutEnabled: true})
		c.AddHook(r.calls)
		r.clients = append(r.clients, c)
		out = append(out, c)
	}
	return out
}

// lib is one library (or way of using it) under test.
type lib struct {
	name string
	// setup makes a locker per worker for the lock called name; hold is the
	// longest any worker keeps the lock.
	setup func(set *nodes, workers int, name string, hold time.Duration) (*rig, error)
}

// libsFor lists the sub-benchmarks: "redlock" shares one Client among all
// workers (goroutines of one process), "redlock-<N>clients" gives each worker
// its own Client and connections (separate processes), the "-fair" variants
// the same with WithFair, "redsync" gives each worker its own Mutex over
// shared pools, with redsync's default retry delay.
func libsFor(workers int) []lib {
	return []lib{
		{"redlock", redlockWith(setupRedlock)},
		{fmt.Sprintf("redlock-%dclients", workers), redlockWith(setupRedlockPerWorker)},
		{"redlock-fair", redlockWith(setupRedlock, redlock.WithFair())},
		{fmt.Sprintf("redlock-fair-%dclients", workers), redlockWith(setupRedlockPerWorker, redlock.WithFair())},
		{"redsync", setupRedsync},
	}
}

type redlockSetup func(set *nodes, workers int, name string, hold time.Duration, opts ...redlock.Option) (*rig, error)

// redlockWith fixes the options of a setup.
func redlockWith(setup redlockSetup, opts ...redlock.Option) func(*nodes, int, string, time.Duration) (*rig, error) {
	return func(set *nodes, workers int, name string, hold time.Duration) (*rig, error) {
		return setup(set, workers, name, hold, opts...)
	}
}

type redlockLocker struct{ m *redlock.Mutex }

func (l redlockLocker) lock(ctx context.Context) (func() error, error) {
	lease, err := l.m.Lock(ctx) // no owner in ctx: every Lock is a new owner
	if err != nil {
		return nil, err
	}
	return func() error { return lease.Unlock(context.Background()) }, nil
}

func setupRedlock(set *nodes, workers int, name string, _ time.Duration, opts ...redlock.Option) (*rig, error) {
	r := &rig{share: workers, calls: &callCounter{}}
	client, err := redlock.New(r.newClients(set), opts...)
	if err != nil {
		return nil, errors.Join(err, r.close())
	}
	r.closers = append(r.closers, client.Close)
	m := client.Mutex(name)
	for range workers {
		r.lockers = append(r.lockers, redlockLocker{m})
	}
	return r, nil
}

func setupRedlockPerWorker(set *nodes, workers int, name string, _ time.Duration, opts ...redlock.Option) (*rig, error) {
	r := &rig{share: 1, calls: &callCounter{}}
	for range workers {
		client, err := redlock.New(r.newClients(set), opts...)
		if err != nil {
			return nil, errors.Join(err, r.close())
		}
		r.closers = append(r.closers, client.Close)
		r.lockers = append(r.lockers, redlockLocker{client.Mutex(name)})
	}
	return r, nil
}

type redsyncLocker struct{ m *redsync.Mutex }

func (l redsyncLocker) lock(ctx context.Context) (func() error, error) {
	if err := l.m.LockContext(ctx); err != nil {
		return nil, err
	}
	return func() error {
		ok, err := l.m.UnlockContext(context.Background())
		if err == nil && !ok {
			err = fmt.Errorf("redsync: unlock of %s reached too few nodes", l.m.Name())
		}
		return err
	}, nil
}

func setupRedsync(set *nodes, workers int, name string, hold time.Duration) (*rig, error) {
	r := &rig{share: workers, calls: &callCounter{}}
	expiry := max(redsyncExpiry, hold+3*time.Second)
	var pools []redsyncredis.Pool
	for _, c := range r.newClients(set) {
		pools = append(pools, goredis.NewPool(c))
	}
	rs := redsync.New(pools...)
	for range workers {
		m := rs.NewMutex(name, redsync.WithExpiry(expiry), redsync.WithTries(1_000_000))
		r.lockers = append(r.lockers, redsyncLocker{m})
	}
	return r, nil
}

// warmUp opens the connections a run will need and loads the Lua scripts
// (each locker takes and gives back the lock once), so that connection
// handshakes and NOSCRIPT fallbacks stay out of the measured commands.
func (r *rig) warmUp(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(r.clients)*(r.share+1))
	for _, c := range r.clients {
		for range r.share + 1 { // +1: a straggling release beside the next acquire
			wg.Go(func() {
				if err := c.Ping(ctx).Err(); err != nil {
					errs <- err
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	if err := errors.Join(drain(errs)...); err != nil {
		return fmt.Errorf("warm-up PING: %w", err)
	}
	for i, l := range r.lockers {
		unlock, err := l.lock(ctx)
		if err != nil {
			return fmt.Errorf("warm-up lock by worker %d: %w", i, err)
		}
		if err := unlock(); err != nil {
			return fmt.Errorf("warm-up unlock by worker %d: %w", i, err)
		}
	}
	return nil
}

func drain(errs <-chan error) []error {
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}

// ready takes a rig just set up (failing b on a setup error): it closes
// the rig once, at the latest at cleanup, and warms it up (connections
// open, scripts loaded) under a 30 s context, which it returns for the
// measurement's own calls.
func ready(b *testing.B, r *rig, err error) (closeRig func() error, ctx context.Context) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
	closeRig = sync.OnceValue(r.close)
	b.Cleanup(func() { _ = closeRig() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	b.Cleanup(cancel)
	if err := r.warmUp(ctx); err != nil {
		b.Fatal(err)
	}
	return closeRig, ctx
}

package bench

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
)

// BenchmarkKinds measures each kind of the library at cfg.nodes nodes: one
// uncontended acquire+release (as BenchmarkLockUnlock: p50-µs, cmds/op),
// then cfg.workers workers, one Client each, contending (as
// BenchmarkContended: ns/op per section, Redis CPU per section), for a
// Mutex, a Semaphore of 1 permit (the same exclusion through one slot,
// plus its count check once a TTL: the contended run checks mutual
// exclusion, so a semaphore of more permits has no place in it) and an
// Election (Campaign with its term fenced and its value published, then
// resign) and an RWMutex (its write lock, and, uncontended only, a read
// hold: read holds do not exclude each other), with redsync in the same
// run as the base.
func BenchmarkKinds(b *testing.B) {
	cfg := loadConfig(b)
	set := startNodes(b, cfg.nodes)
	for _, k := range kinds() {
		b.Run(fmt.Sprintf("op=lockunlock/lib=%s/nodes=%d", k.name, cfg.nodes), func(b *testing.B) {
			runLockUnlock(b, cfg, set, peer{name: k.name, applies: anyNodes, setup: func(set *nodes, names []string) (*rig, error) {
				return k.setup(set, 1, names[0], 0)
			}})
		})
	}
	for _, k := range kinds() {
		if k.shared {
			continue
		}
		b.Run(fmt.Sprintf("op=contended/lib=%s-%dclients/nodes=%d", k.name, cfg.workers, cfg.nodes), func(b *testing.B) {
			runContended(b, cfg, set, lib{name: k.name, setup: k.setup})
		})
	}
}

// kind is one kind of lock, one Client per worker (separate processes).
type kind struct {
	name   string
	setup  func(set *nodes, workers int, name string, hold time.Duration) (*rig, error)
	shared bool // holds that do not exclude each other: no contended run
}

func kinds() []kind {
	return []kind{
		{name: "redsync", setup: setupRedsync},
		{name: "mutex", setup: redlockWith(setupRedlockPerWorker)},
		{name: "semaphore1", setup: setupKind(func(c *redlock.Client, name string) locker { return acquirer{c.Semaphore(name, 1)} })},
		{name: "election", setup: setupKind(func(c *redlock.Client, name string) locker { return campaigner{c.Election(name)} })},
		{name: "rwmutex-write", setup: setupKind(func(c *redlock.Client, name string) locker { return taker{c.RWMutex(name).Lock} })},
		{name: "rwmutex-read", shared: true, setup: setupKind(func(c *redlock.Client, name string) locker { return taker{c.RWMutex(name).RLock} })},
	}
}

// setupKind gives each worker its own Client and the locker made on it.
func setupKind(make func(c *redlock.Client, name string) locker) func(*nodes, int, string, time.Duration) (*rig, error) {
	return func(set *nodes, workers int, name string, _ time.Duration) (*rig, error) {
		r := &rig{share: 1, calls: &callCounter{}}
		for range workers {
			client, err := redlock.New(r.newClients(set))
			if err != nil {
				return nil, errors.Join(err, r.close())
			}
			r.closers = append(r.closers, client.Close)
			r.lockers = append(r.lockers, make(client, name))
		}
		return r, nil
	}
}

type acquirer struct{ s *redlock.Semaphore }

func (a acquirer) lock(ctx context.Context) (func() error, error) {
	lease, err := a.s.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return func() error { return lease.Unlock(context.Background()) }, nil
}

type campaigner struct{ e *redlock.Election }

func (c campaigner) lock(ctx context.Context) (func() error, error) {
	lease, err := c.e.Campaign(ctx, "bench")
	if err != nil {
		return nil, err
	}
	return func() error { return lease.Unlock(context.Background()) }, nil
}

// taker is a locker of one Lease-returning call (RWMutex.Lock, RLock).
type taker struct {
	take func(context.Context) (*redlock.Lease, error)
}

func (t taker) lock(ctx context.Context) (func() error, error) {
	lease, err := t.take(ctx)
	if err != nil {
		return nil, err
	}
	return func() error { return lease.Unlock(context.Background()) }, nil
}

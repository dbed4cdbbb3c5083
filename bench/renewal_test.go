package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/quorumlock/redlock"
	"github.com/redis/go-redis/v9"
)

// renewWorkers bounds the goroutines that acquire, extend and release the
// many leases of BenchmarkRenewal.
const renewWorkers = 64

// BenchmarkRenewal measures what keeping many leases costs: cfg.leases
// (BENCH_LEASES, 10,000) locks on distinct names with TTL cfg.renewTTL
// (BENCH_RENEW_TTL, 3 s), held for a window of cfg.renewHold
// (BENCH_RENEW_HOLD, 4 s) after all were acquired, on cfg.nodes nodes.
// Ours: one Client, watchdog on (it renews every TTL/3 by itself, batching
// due leases into one script call per node). redsync: a loop that calls
// Extend on every held mutex once per period (TTL/3), renewWorkers at a
// time, from before the first acquisition until each mutex is released.
// Run with -benchtime 1x.
//
// Per lease per period (TTL/3) of the window: calls (commands sent), trips
// (round trips), cmds (INFO, script internals included) and renewals (ours:
// Observer.Renewed events, each a quorum renewal; redsync: Extend calls that
// returned true); calls/renewal and cmds/renewal divide by the renewals
// that happened instead (the same when a library keeps up). redis-cpu-%
// and client-cpu-% are the nodes' and this process's CPU time over the
// window, in % of one core. acquire-s is the time to acquire all leases.
// lost counts the leases that expired or were lost before their release
// (ours: Err set, or Unlock failing; redsync: a failed Extend, or Unlock
// finding the lock expired): a library that cannot keep up loses leases.
// release-errs counts releases that failed otherwise (node timeouts on an
// overloaded machine). Both are reported, not fatal.
// pass-max-ms is redsync's longest Extend pass in the window (over a
// period means it fell behind).
func BenchmarkRenewal(b *testing.B) {
	cfg := loadConfig(b)
	set := startNodes(b, cfg.nodes)
	for _, l := range []struct {
		name string
		run  func(*testing.B, config, *nodes)
	}{{"redlock", runRenewalRedlock}, {"redsync", runRenewalRedsync}} {
		b.Run(fmt.Sprintf("lib=%s/nodes=%d", l.name, cfg.nodes), func(b *testing.B) {
			l.run(b, cfg, set)
		})
	}
}

// renewalResult is one run's raw numbers.
type renewalResult struct {
	window   counts        // counted over the hold window
	renewals int64         // in the window
	lost     int           // leases lost before their release
	relErrs  int64         // releases that failed otherwise
	acquire  time.Duration // all leases
	passMax  time.Duration // redsync only
}

func (res renewalResult) report(b *testing.B, cfg config) {
	periods := float64(cfg.renewHold) / float64(cfg.renewTTL/3)
	per := float64(cfg.leases) * periods
	hold := cfg.renewHold.Seconds()
	w := res.window
	b.ReportMetric(0, "ns/op") // a wall time per op means nothing here
	b.ReportMetric(float64(w.calls)/per, "calls/lease/period")
	b.ReportMetric(float64(w.trips)/per, "trips/lease/period")
	b.ReportMetric(float64(w.cmds)/per, "cmds/lease/period")
	b.ReportMetric(float64(res.renewals)/per, "renewals/lease/period")
	if res.renewals > 0 {
		b.ReportMetric(float64(w.calls)/float64(res.renewals), "calls/renewal")
		b.ReportMetric(float64(w.cmds)/float64(res.renewals), "cmds/renewal")
	}
	b.ReportMetric(100*w.redisCPU.Seconds()/hold, "redis-cpu-%")
	if w.selfCPU > 0 {
		b.ReportMetric(100*w.selfCPU.Seconds()/hold, "client-cpu-%")
	}
	b.ReportMetric(res.acquire.Seconds(), "acquire-s")
	b.ReportMetric(float64(res.lost), "lost")
	b.ReportMetric(float64(res.relErrs), "release-errs")
	if res.passMax > 0 {
		b.ReportMetric(millis(res.passMax), "pass-max-ms")
	}
	if res.lost > 0 {
		// Reported, not failed: losing leases under load is a result here.
		b.Logf("%d of %d leases lost before their release", res.lost, cfg.leases)
	}
}

// lossFlags marks leases lost before their release, each once.
type lossFlags []atomic.Bool

func (f lossFlags) count() int {
	n := 0
	for i := range f {
		if f[i].Load() {
			n++
		}
	}
	return n
}

func runRenewalRedlock(b *testing.B, cfg config, set *nodes) {
	r := &rig{share: renewWorkers, calls: &callCounter{}}
	b.Cleanup(func() { _ = r.close() })
	client, renewed, closeClient := renewalClient(b, cfg, r.newClients(set))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.warmUp(ctx); err != nil {
		b.Fatal(err)
	}

	b.ResetTimer()
	leases, res, err := acquireAll(ctx, client, lockNames("renewal", cfg.leases))
	if err != nil {
		b.Fatalf("acquire: %v", err)
	}
	before, err := set.snapshot(ctx, r.calls)
	if err != nil {
		b.Fatal(err)
	}
	renewedBefore := renewed.Load()
	time.Sleep(cfg.renewHold)
	after, err := set.snapshot(ctx, r.calls)
	if err != nil {
		b.Fatal(err)
	}
	res.renewals = renewed.Load() - renewedBefore
	res.window = after.since(set, before)
	b.StopTimer()

	res.lost, res.relErrs = releaseAll(b, ctx, leases)
	if err := closeClient(); err != nil {
		b.Errorf("close: %v", err)
	}
	res.report(b, cfg)
}

// renewalClient is the Client of a renewal run (TTL cfg.renewTTL, the
// watchdog on), a count of its renewals, and its Close, which may be
// called early (also run at cleanup).
func renewalClient(b *testing.B, cfg config, clients []redis.UniversalClient) (*redlock.Client, *atomic.Int64, func() error) {
	renewed := new(atomic.Int64)
	client, err := redlock.New(clients, redlock.WithTTL(cfg.renewTTL),
		redlock.WithObserver(redlock.Observer{
			Renewed: func(redlock.RenewedEvent) { renewed.Add(1) },
		}))
	if err != nil {
		b.Fatal(err)
	}
	closeClient := sync.OnceValue(client.Close)
	b.Cleanup(func() { _ = closeClient() })
	return client, renewed, closeClient
}

// acquireAll locks every name with client, renewWorkers at a time, and
// returns the leases and the time it took (in renewalResult.acquire).
func acquireAll(ctx context.Context, client *redlock.Client, names []string) ([]*redlock.Lease, renewalResult, error) {
	leases := make([]*redlock.Lease, len(names))
	start := time.Now()
	err := forEach(len(names), renewWorkers, func(i int) error {
		// Lock, not TryLock: on a loaded machine a node call can time out,
		// and Lock tries again where TryLock would end the run.
		lease, err := client.Mutex(names[i]).Lock(ctx)
		leases[i] = lease
		return err
	})
	return leases, renewalResult{acquire: time.Since(start)}, err
}

// releaseAll unlocks every lease, renewWorkers at a time, and counts the
// leases lost before their release and the releases that failed otherwise
// (the first of those logged).
func releaseAll(b *testing.B, ctx context.Context, leases []*redlock.Lease) (lost int, other int64) {
	lostFlags := make(lossFlags, len(leases))
	var others atomic.Int64
	_ = forEach(len(leases), renewWorkers, func(i int) error {
		if leases[i].Err() != nil {
			lostFlags[i].Store(true)
		}
		err := leases[i].Unlock(ctx)
		switch {
		case err == nil:
		case errors.Is(err, redlock.ErrLost), errors.Is(err, redlock.ErrNotHeld):
			lostFlags[i].Store(true)
		default:
			if others.Add(1) == 1 {
				b.Logf("release %d: %v", i, err)
			}
		}
		return nil
	})
	return lostFlags.count(), others.Load()
}

func runRenewalRedsync(b *testing.B, cfg config, set *nodes) {
	r := &rig{share: renewWorkers, calls: &callCounter{}}
	b.Cleanup(func() { _ = r.close() })
	var pools []redsyncredis.Pool
	for _, c := range r.newClients(set) {
		pools = append(pools, goredis.NewPool(c))
	}
	rs := redsync.New(pools...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.warmUp(ctx); err != nil {
		b.Fatal(err)
	}

	names := lockNames("renewal", cfg.leases)
	ext := &extender{
		mutexes: make([]*redsync.Mutex, cfg.leases),
		locks:   make([]sync.Mutex, cfg.leases),
		held:    make([]bool, cfg.leases),
		lost:    make(lossFlags, cfg.leases),
	}
	for i, name := range names {
		// Default tries (32): retries a node call that timed out.
		ext.mutexes[i] = rs.NewMutex(name, redsync.WithExpiry(cfg.renewTTL))
	}

	b.ResetTimer()
	start := time.Now()
	extCtx, stopExtender := context.WithCancel(ctx)
	var extWG sync.WaitGroup
	extWG.Go(func() { ext.run(extCtx, cfg.renewTTL/3) })
	defer func() { stopExtender(); extWG.Wait() }()
	err := forEach(cfg.leases, renewWorkers, ext.lock)
	res := renewalResult{acquire: time.Since(start)}
	if err != nil {
		b.Fatalf("acquire: %v", err)
	}
	before, err := set.snapshot(ctx, r.calls)
	if err != nil {
		b.Fatal(err)
	}
	extendedBefore := ext.extended.Load()
	passesBefore := ext.passCount()
	time.Sleep(cfg.renewHold)
	after, err := set.snapshot(ctx, r.calls)
	if err != nil {
		b.Fatal(err)
	}
	res.renewals = ext.extended.Load() - extendedBefore
	res.window = after.since(set, before)
	res.passMax = ext.maxPass(passesBefore, ext.passCount())
	b.StopTimer()

	// The extender keeps going while the mutexes are released, as it
	// would in an application that releases them one by one.
	var other atomic.Int64
	_ = forEach(cfg.leases, renewWorkers, func(i int) error {
		if err := ext.unlock(ctx, i); err != nil && other.Add(1) == 1 {
			b.Logf("release %d: %v", i, err)
		}
		return nil
	})
	stopExtender()
	extWG.Wait()
	res.lost, res.relErrs = ext.lost.count(), other.Load()
	res.report(b, cfg)
}

// extender is the loop a redsync user writes to keep many mutexes: every
// period, Extend each held mutex once, renewWorkers at a time. A pass that
// takes longer than the period delays the next one (ticks are dropped).
type extender struct {
	mutexes  []*redsync.Mutex
	locks    []sync.Mutex // one per mutex: Lock, Extend, Unlock never overlap
	held     []bool       // under locks[i]
	lost     lossFlags
	extended atomic.Int64 // Extend calls that returned true

	mu     sync.Mutex
	passes []time.Duration
}

// lock acquires mutex i and hands it to the extender.
func (e *extender) lock(i int) error {
	e.locks[i].Lock()
	defer e.locks[i].Unlock()
	if err := e.mutexes[i].LockContext(context.Background()); err != nil {
		return err
	}
	e.held[i] = true
	return nil
}

// unlock takes mutex i from the extender and releases it. A lock that had
// expired counts as lost; other errors are returned.
func (e *extender) unlock(ctx context.Context, i int) error {
	e.locks[i].Lock()
	defer e.locks[i].Unlock()
	if !e.held[i] {
		return nil
	}
	e.held[i] = false
	ok, err := e.mutexes[i].UnlockContext(ctx)
	var taken *redsync.ErrTaken
	switch {
	case errors.Is(err, redsync.ErrLockAlreadyExpired), errors.As(err, &taken), err == nil && !ok:
		e.lost[i].Store(true)
		return nil
	}
	return err
}

func (e *extender) run(ctx context.Context, period time.Duration) {
	ticker := time.NewTicker(period)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		start := time.Now()
		_ = forEach(len(e.mutexes), renewWorkers, func(i int) error {
			e.locks[i].Lock()
			defer e.locks[i].Unlock()
			if ctx.Err() != nil || !e.held[i] {
				return nil
			}
			if ok, _ := e.mutexes[i].ExtendContext(ctx); ok {
				e.extended.Add(1)
			} else if ctx.Err() == nil {
				e.lost[i].Store(true)
			}
			return nil
		})
		e.mu.Lock()
		e.passes = append(e.passes, time.Since(start))
		e.mu.Unlock()
	}
}

func (e *extender) passCount() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.passes)
}

// maxPass is the longest of passes [from, to) (0 when none).
func (e *extender) maxPass(from, to int) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	if from >= to {
		return 0
	}
	return slices.Max(e.passes[from:to])
}

// forEach calls fn(i) for every i in [0, n), workers at a time, and
// returns every error (a worker stops at its first).
func forEach(n, workers int, fn func(i int) error) error {
	var next atomic.Int64
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					errs[w] = fmt.Errorf("item %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/quorumlock/redlock/redlocktest/checker"
	"github.com/quorumlock/redlock/redlocktest/faultproxy"
	"github.com/quorumlock/redlock/redlocktest/redisproc"
	"github.com/quorumlock/redlock/redlocktest/workload"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// nodeCount is the size of every chaos cluster: five independent nodes,
// quorum three.
const nodeCount = 5

// setup describes a chaos cluster.
type setup struct {
	clients     int           // redlock Clients, each with its own proxies
	nodeTimeout time.Duration // redlock.WithNodeTimeout, and the go-redis timeouts
	nodeArgs    []string      // extra redis-server arguments for every node
	nodeEnv     func(i int) []string
	options     []redlock.Option // given to redlock.New, after the node timeout
}

// cluster is nodeCount real redis-server processes, one proxy per (client,
// node) pair, and the redlock Clients that reach the nodes through them.
type cluster struct {
	t       *testing.T
	nodes   []*redisproc.Server
	proxies [][]*faultproxy.Proxy // [client][node]
	clients []*redlock.Client
	faults  atomic.Int64 // faults injected, for the report
	// trueClocks: no node was started with a clock of its own (nodeEnv);
	// clockFindings counts the clock check's reports (Observer.Quarantined
	// with a *node.ClockQuarantine), which must then stay 0.
	trueClocks    bool
	clockFindings atomic.Int64
}

// newCluster starts the nodes, the proxies and the Clients; t.Cleanup
// stops all of them, Clients first.
func newCluster(t *testing.T, s setup) *cluster {
	t.Helper()
	binary := redlocktest.RequireRedis(t)
	base := t.TempDir()
	c := &cluster{t: t, trueClocks: s.nodeEnv == nil}
	for i := range nodeCount {
		cfg := redisproc.Config{
			Dir:    filepath.Join(base, fmt.Sprintf("node%d", i)),
			Args:   s.nodeArgs,
			Binary: binary,
		}
		if s.nodeEnv != nil {
			cfg.Env = s.nodeEnv(i)
		}
		server, err := redisproc.Start(cfg)
		if err != nil {
			t.Fatalf("start node %d: %v", i, err)
		}
		t.Cleanup(func() {
			if err := server.Kill(); err != nil {
				t.Errorf("kill node %d: %v", i, err)
			}
		})
		c.nodes = append(c.nodes, server)
	}
	for k := range s.clients {
		var proxies []*faultproxy.Proxy
		var nodes []redis.UniversalClient
		for _, server := range c.nodes {
			proxy, err := faultproxy.New(server.Addr())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := proxy.Close(); err != nil {
					t.Errorf("close proxy: %v", err)
				}
			})
			proxies = append(proxies, proxy)
			rc := redis.NewClient(&redis.Options{
				Addr:                     proxy.Addr(),
				DialTimeout:              s.nodeTimeout,
				ReadTimeout:              s.nodeTimeout,
				WriteTimeout:             s.nodeTimeout,
				MaxRetries:               -1,
				DialerRetries:            1,
				ContextTimeoutEnabled:    true,
				MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
			})
			t.Cleanup(func() { _ = rc.Close() })
			nodes = append(nodes, rc)
		}
		// The run's own observer, if any, replaces this one.
		findings := redlock.WithObserver(redlock.Observer{Quarantined: func(e redlock.QuarantineEvent) {
			var fast *node.ClockQuarantine
			if errors.As(e.Reason, &fast) {
				c.clockFindings.Add(1)
				t.Logf("client %d: %v", k, e.Reason)
			}
		}})
		opts := append([]redlock.Option{redlock.WithNodeTimeout(s.nodeTimeout), findings}, s.options...)
		client, err := redlock.New(nodes, opts...)
		if err != nil {
			t.Fatalf("client %d: %v", k, err)
		}
		// Heal first: Close releases what the Client holds, through the proxies.
		t.Cleanup(func() {
			for _, proxy := range proxies {
				heal(proxy)
			}
			_ = client.Close()
		})
		c.proxies = append(c.proxies, proxies)
		c.clients = append(c.clients, client)
	}
	return c
}

// admin is a direct client (no proxy) for node i, closed at cleanup.
func (c *cluster) admin(i int) *redis.Client {
	return c.nodeClient(c.nodes[i].Addr())
}

func (c *cluster) nodeClient(addr string) *redis.Client {
	client := redis.NewClient(&redis.Options{
		Addr:                     addr,
		DialTimeout:              2 * time.Second,
		ReadTimeout:              2 * time.Second,
		WriteTimeout:             2 * time.Second,
		MaxRetries:               -1,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	c.t.Cleanup(func() { _ = client.Close() })
	return client
}

// fault counts one injected fault; failing to inject it fails the test.
func (c *cluster) fault(what string, err error) {
	c.t.Helper()
	if err != nil {
		c.t.Errorf("inject %s: %v", what, err)
		return
	}
	c.faults.Add(1)
}

// reach lets client k reach only the given nodes: its links to the others
// are cut, its links to these healed.
func (c *cluster) reach(k int, nodes ...int) {
	reachable := make([]bool, nodeCount)
	for _, i := range nodes {
		reachable[i] = true
	}
	for i, proxy := range c.proxies[k] {
		if reachable[i] {
			proxy.Heal()
		} else if !proxy.Cuts() {
			proxy.Cut()
			c.faults.Add(1)
		}
	}
}

// healAll ends every network fault of every client.
func (c *cluster) healAll() {
	for _, proxies := range c.proxies {
		for _, proxy := range proxies {
			heal(proxy)
		}
	}
}

// heal ends every network fault of one link; what was held goes through.
func heal(proxy *faultproxy.Proxy) {
	proxy.Heal()
	proxy.HoldRequests(false)
	proxy.HoldReplies(false)
	proxy.DropReplies(false)
	proxy.SetLatency(0)
	proxy.SetRequestLatency(0)
}

// result is what one run produced.
type result struct {
	check *checker.Checker
	stats *workload.Stats
}

// run runs the workload for d (on every Client unless cfg.Clients says
// otherwise) while faults runs (it gets a ctx that ends with the run),
// then heals the network and waits for the workers.
func (c *cluster) run(d time.Duration, cfg workload.Config, faults func(ctx context.Context)) result {
	c.t.Helper()
	check := checker.New()
	stats := &workload.Stats{}
	cfg.Check = check
	if cfg.Clients == nil {
		cfg.Clients = c.clients
	}
	if cfg.Workers == 0 {
		cfg.Workers = len(cfg.Clients) // one worker per Client and mode
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { workload.Run(ctx, cfg, stats) })
	if faults != nil {
		faults(ctx)
	}
	<-ctx.Done()
	c.healAll() // now: workers still in a round finish sooner
	wg.Wait()
	return result{check: check, stats: stats}
}

// report logs the figures of a run.
func (c *cluster) report(r result) {
	c.t.Helper()
	c.t.Logf("sections %d, grants checked %d, faults injected %d, violations %d (lost updates %d, lost leases %d, fenced writes %d, lock errors %d)",
		r.stats.Sections.Load(), r.check.Len(), c.faults.Load(), len(r.check.Violations()),
		r.stats.LostUpdates.Load(), r.stats.LostLeases.Load(), r.stats.Fenced.Load(), r.stats.LockErrors.Load())
	perName := map[string]int{}
	var highest uint64
	for _, g := range r.check.Grants() {
		perName[g.Name]++
		highest = max(highest, g.Token)
	}
	reasons := map[string]int{}
	for _, v := range r.check.Violations() {
		reasons[v.Reason]++
	}
	c.t.Logf("grants per lock: %v; highest fencing token %d; violations by kind: %v", perName, highest, reasons)
}

// requireSafe asserts a run was safe and made progress: no violation, no
// lost update, and at least minSections critical sections.
func (c *cluster) requireSafe(r result, minSections int64) {
	c.t.Helper()
	c.report(r)
	if err := r.check.Err(); err != nil {
		c.t.Error(err)
	}
	if lost := r.stats.LostUpdates.Load(); lost != 0 {
		c.t.Errorf("%d lost updates", lost)
	}
	if sections := r.stats.Sections.Load(); sections < minSections {
		c.t.Errorf("only %d sections, want at least %d", sections, minSections)
	}
	if n := c.clockFindings.Load(); c.trueClocks && n > 0 {
		c.t.Errorf("the clock check found %d nodes fast, and every clock is true", n)
	}
	if c.faults.Load() == 0 {
		c.t.Error("no fault was injected")
	}
}

// requireViolations asserts a negative control bit: the checker caught the
// unsafety the run set up.
func (c *cluster) requireViolations(r result) {
	c.t.Helper()
	c.report(r)
	violations := r.check.Violations()
	if len(violations) == 0 {
		c.t.Fatal("the negative control produced no violation: the setup no longer breaks the lock, or the checker misses it")
	}
	c.t.Logf("first violation: %v", violations[0])
}

// requireViolation asserts that the checker caught the run's unsafety with
// at least one violation of the given kind (checker.Violation.Reason), and
// logs the first.
func (c *cluster) requireViolation(r result, reason string) {
	c.t.Helper()
	c.report(r)
	for _, v := range r.check.Violations() {
		if v.Reason == reason {
			c.t.Logf("first %q violation: %v", reason, v)
			return
		}
	}
	c.t.Fatalf("the negative control produced no %q violation: the setup no longer breaks the lock that way, or the checker misses it", reason)
}

// requireBite asserts that a negative control bit within runs runs: one
// ended with a violation match accepts. A run under load can miss the
// moment its faults set up; a checker that misses what it saw fails all.
func (c *cluster) requireBite(runs int, want string, run func() result, match func(checker.Violation) bool) {
	c.t.Helper()
	for i := 1; i <= runs; i++ {
		r := run()
		c.report(r)
		for _, v := range r.check.Violations() {
			if match(v) {
				c.t.Logf("run %d: first %s: %v", i, want, v)
				return
			}
		}
	}
	c.t.Fatalf("the negative control produced no %s in %d runs: the setup no longer breaks the lock that way, or the checker misses it", want, runs)
}

// every calls fn at each tick of period until ctx ends, passing the tick number.
func every(ctx context.Context, period time.Duration, fn func(tick int)) {
	ticker := time.NewTicker(period)
	defer ticker.Stop()
	for tick := 0; ; tick++ {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			fn(tick)
		}
	}
}

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// pollEvery makes Lock retry at least every d: a waiter does not sit out
// the holder's TTL, so it is there the moment an unsafe grant is possible.
func pollEvery(d time.Duration) redlock.Option {
	return redlock.WithRetry(func() backoff.BackOff { return backoff.NewConstantBackOff(d) })
}

// pick returns n distinct node indexes at random.
func pick(n int) []int {
	return rand.Perm(nodeCount)[:n]
}

package bench

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/redis/go-redis/v9"
)

// rttProfile is a cross-datacenter layout: the round-trip time from the
// client to each of the nodes.
type rttProfile struct {
	name string
	rtts []time.Duration
}

func msList(ms ...int) []time.Duration {
	out := make([]time.Duration, len(ms))
	for i, v := range ms {
		out[i] = time.Duration(v) * time.Millisecond
	}
	return out
}

// crossDCProfiles are the layouts of issue 25: two nodes near, one at the
// quorum's distance, two far (P1); all spread out (P2); a quorum at 10 ms
// with two nodes far beyond it (P3).
var crossDCProfiles = []rttProfile{
	{"P1", msList(1, 1, 30, 30, 80)},
	{"P2", msList(5, 20, 50, 80, 120)},
	{"P3", msList(1, 10, 10, 100, 100)},
}

// quorumRTT is the RTT of the farthest node of the nearest majority: no
// quorum round can be faster.
func (p rttProfile) quorumRTT() time.Duration {
	sorted := slices.Sorted(slices.Values(p.rtts))
	return sorted[len(sorted)/2]
}

func (p rttProfile) maxRTT() time.Duration { return slices.Max(p.rtts) }

// xdcConfig is what one BenchmarkCrossDC run measures (environment, see
// README.md).
type xdcConfig struct {
	profiles []rttProfile // BENCH_PROFILE: P1,P2,P3
	cycles   int          // BENCH_CYCLES: sequential cycles per figure (100)
	handoffs int          // BENCH_HANDOFFS: handoffs per handoff figure (30)
	fresh    int          // BENCH_FRESH: fresh Clients (5)
}

func loadXDCConfig(b *testing.B) xdcConfig {
	b.Helper()
	cfg := xdcConfig{cycles: 100, handoffs: 30, fresh: 5}
	var err error
	for _, knob := range []struct {
		name string
		v    *int
	}{{"BENCH_CYCLES", &cfg.cycles}, {"BENCH_HANDOFFS", &cfg.handoffs}, {"BENCH_FRESH", &cfg.fresh}} {
		if *knob.v, err = envInt(knob.name, *knob.v); err != nil {
			b.Fatal(err)
		}
	}
	want := os.Getenv("BENCH_PROFILE")
	if want == "" {
		cfg.profiles = crossDCProfiles
		return cfg
	}
	for name := range strings.SplitSeq(want, ",") {
		i := slices.IndexFunc(crossDCProfiles, func(p rttProfile) bool { return strings.EqualFold(p.name, name) })
		if i < 0 {
			b.Fatalf("BENCH_PROFILE=%q: unknown profile %q (want P1, P2, P3)", want, name)
		}
		cfg.profiles = append(cfg.profiles, crossDCProfiles[i])
	}
	return cfg
}

// site is one profile's nodes: each local redis-server behind a delay
// proxy whose RTT is the profile's for that node.
type site struct {
	prof     rttProfile
	set      *nodes
	proxies  []*delayProxy
	measured []time.Duration // PING RTT through each proxy, after calibration
	rows     []xdcRow
}

func startSite(b *testing.B, prof rttProfile) *site {
	b.Helper()
	s := &site{prof: prof, set: startNodes(b, len(prof.rtts))}
	for i, srv := range s.set.servers {
		p, err := newDelayProxy(srv.addr, prof.rtts[i])
		if err != nil {
			b.Fatal(err)
		}
		s.proxies = append(s.proxies, p)
	}
	b.Cleanup(s.close)
	return s
}

func (s *site) close() {
	for _, p := range s.proxies {
		_ = p.close()
	}
	s.set.stop()
}

// urls are the proxies as Dial takes them.
func (s *site) urls() []string {
	out := make([]string, len(s.proxies))
	for i, p := range s.proxies {
		out[i] = "redis://" + p.addr()
	}
	return out
}

// goRedisClients makes one go-redis client per proxy, with go-redis's
// defaults but ContextTimeoutEnabled (as the other benchmarks do).
func (s *site) goRedisClients() []*redis.Client {
	out := make([]*redis.Client, len(s.proxies))
	for i, p := range s.proxies {
		out[i] = redis.NewClient(&redis.Options{Addr: p.addr(), ContextTimeoutEnabled: true})
	}
	return out
}

// calibrationPings is how many PINGs one calibration round times per node.
const calibrationPings = 21

// calibrate measures each proxy: the median of calibrationPings PING RTTs
// through it, in up to three rounds while it is more than 1 ms above the
// profile's, keeping the lowest (the load of the machine only adds to it).
// A timer wakes some 0.3-0.7 ms late on this kind of machine (measured),
// so a delay of whole milliseconds each way comes out about 1.2 ms long:
// when the lowest median is 1 ms or more above the target, the delay is
// cut by the whole milliseconds of the excess, once, and measured again.
// Only downwards and only once: correcting by every round's offset chased
// the load (P1's 30 ms nodes ended at 27 and 33 ms). The result, in
// s.measured, includes the client's and the server's own time (~0.1-0.4
// ms on loopback); check names a node still more than 1 ms off.
func (s *site) calibrate(ctx context.Context) error {
	s.measured = make([]time.Duration, len(s.proxies))
	clients := s.goRedisClients()
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	for i := range s.proxies {
		wg.Go(func() {
			m, err := calibrateOne(ctx, clients[i], s.proxies[i], s.prof.rtts[i])
			if err != nil {
				err = fmt.Errorf("node %d: calibrate: %w", i, err)
				failed.Store(&err)
			}
			s.measured[i] = m
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		return *err
	}
	return nil
}

// check names the nodes whose measured RTT is more than 1 ms off.
func (s *site) check() []string {
	var off []string
	for i, m := range s.measured {
		if (m - s.prof.rtts[i]).Abs() > time.Millisecond {
			off = append(off, fmt.Sprintf("node %d: RTT %v, want %v", i, m, s.prof.rtts[i]))
		}
	}
	return off
}

func calibrateOne(ctx context.Context, c *redis.Client, p *delayProxy, target time.Duration) (time.Duration, error) {
	if err := c.Ping(ctx).Err(); err != nil { // connect outside the timing
		return 0, err
	}
	best, err := lowestMedian(ctx, c, target)
	if err != nil {
		return 0, err
	}
	if excess := (best - target).Truncate(time.Millisecond); excess > 0 {
		p.setRTT(target - excess)
		return lowestMedian(ctx, c, target)
	}
	return best, nil
}

// lowestMedian is the lowest median PING RTT of up to three rounds,
// stopping at one within 1 ms of target.
func lowestMedian(ctx context.Context, c *redis.Client, target time.Duration) (time.Duration, error) {
	best := time.Duration(-1)
	for range 3 {
		m, err := medianPing(ctx, c)
		if err != nil {
			return 0, err
		}
		if best < 0 || m < best {
			best = m
		}
		if best-target <= time.Millisecond {
			break
		}
	}
	return best, nil
}

func medianPing(ctx context.Context, c *redis.Client) (time.Duration, error) {
	rtts := make([]time.Duration, 0, calibrationPings)
	for range calibrationPings {
		began := time.Now()
		if err := c.Ping(ctx).Err(); err != nil {
			return 0, err
		}
		rtts = append(rtts, time.Since(began))
	}
	return percentile(sortedCopy(rtts), 0.5), nil
}

// nodeCommands reads each node's total_commands_processed (INFO stats,
// straight to the node, not through its proxy).
func (s *site) nodeCommands(ctx context.Context) ([]int64, error) {
	out := make([]int64, len(s.set.admins))
	for i, admin := range s.set.admins {
		info, err := admin.Info(ctx, "stats").Result()
		if err != nil {
			return nil, fmt.Errorf("node %d: INFO stats: %w", i, err)
		}
		if out[i], err = totalCommands(info); err != nil {
			return nil, fmt.Errorf("node %d: %w", i, err)
		}
	}
	return out, nil
}

// nodeErrs counts the NodeError events of our Clients, per node, and
// keeps the last one's text.
type nodeErrs []nodeErr

type nodeErr struct {
	n    atomic.Int64
	last atomic.Pointer[string]
}

func (e nodeErrs) observer() redlock.Observer {
	return redlock.Observer{NodeError: func(err *redlock.NodeError) {
		if err.Node >= 0 && err.Node < len(e) {
			e[err.Node].n.Add(1)
			text := err.Err.Error()
			e[err.Node].last.Store(&text)
		}
	}}
}

// snapshot is nil for nil counters (a redsync figure).
func (e nodeErrs) snapshot() []int64 {
	if e == nil {
		return nil
	}
	out := make([]int64, len(e))
	for i := range e {
		out[i] = e[i].n.Load()
	}
	return out
}

// lastErr is the text of node i's last NodeError ("" if none).
func (e nodeErrs) lastErr(i int) string {
	if p := e[i].last.Load(); p != nil {
		return *p
	}
	return ""
}

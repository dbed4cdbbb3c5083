package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/node"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// BenchmarkCluster (issue 32) runs the same load on cc.members members
// that are plain redis-server nodes (kind=plain) and that are Redis
// Clusters of cc.shards masters each (kind=cluster), one kind after the
// other, each on servers of its own:
//
//   - case=cycles: cc.workers worker processes (the test binary run
//     again, as BenchmarkContendedProcesses does), one Client each, loop
//     Lock+Unlock for cfg.duration, each cycle on a name drawn at random
//     from cc.names: workers meet on a name now and then, as a fleet does
//     (goroutines of one Client would share its notices and hide that).
//   - case=renewal: one Client holds cc.leases leases on distinct names
//     with the watchdog on (TTL cfg.renewTTL, renewed every TTL/3) for
//     cfg.renewHold. On a Cluster member the leases' keys are in different
//     slots, renewed in one call per shard, whose guard judges each
//     slot's marker: what that costs (redis-cpu-µs/lease-s: every
//     server's CPU per lease held a second).
//
// Redis CPU is INFO cpu (used_cpu_sys + used_cpu_user) summed over every
// redis-server process (member-…: per member); shard-…-max/mean is the
// busiest shard of a member over the mean of its shards (the worst
// member), 1 for a plain node. calls and trips count what reached each
// server: a ClusterClient's pipeline split over three shards is three
// trips. marker-stamps are the restart guard's slow path (see shardStat).
// Run with -benchtime 1x.
func BenchmarkCluster(b *testing.B) {
	cfg := loadConfig(b)
	cc := loadClusterConfig(b)
	for _, kind := range []string{"plain", "cluster"} {
		m := startMembers(b, kind, cc)
		b.Run(fmt.Sprintf("case=cycles/members=%d/kind=%s", cc.members, kind), func(b *testing.B) {
			runSpread(b, cfg, cc, m)
		})
		b.Run(fmt.Sprintf("case=renewal/members=%d/kind=%s", cc.members, kind), func(b *testing.B) {
			runMemberRenewal(b, cfg, cc, m)
		})
		m.stop()
	}
}

// clusterConfig is BenchmarkCluster's part of the environment.
type clusterConfig struct {
	members int // BENCH_MEMBERS: members of the lock's set, each kind
	shards  int // BENCH_SHARDS: masters of each Cluster member
	workers int // BENCH_CLUSTER_WORKERS: worker processes of case=cycles
	names   int // BENCH_CLUSTER_NAMES: the names they lock
	leases  int // BENCH_CLUSTER_LEASES: leases held in case=renewal
}

func loadClusterConfig(b *testing.B) clusterConfig {
	b.Helper()
	cc := clusterConfig{members: 3, shards: 3, workers: 64, names: 1024, leases: 1000}
	for _, knob := range []struct {
		env   string
		value *int
	}{{"BENCH_MEMBERS", &cc.members}, {"BENCH_SHARDS", &cc.shards}, {"BENCH_CLUSTER_WORKERS", &cc.workers},
		{"BENCH_CLUSTER_NAMES", &cc.names}, {"BENCH_CLUSTER_LEASES", &cc.leases}} {
		n, err := envInt(knob.env, *knob.value)
		if err != nil {
			b.Fatal(err)
		}
		*knob.value = n
	}
	return cc
}

// memberSet is the members of one kind, as the benchmark sees them.
type memberSet struct {
	// addrs: one per member, its shards' addresses joined by "|" (one for
	// a plain node), as the worker processes get them.
	addrs []string
	// shards: an admin client of every redis-server process, by member
	// (INFO only, never used by the library).
	shards [][]*redis.Client
	stop   func()
}

// startMembers starts cc.members members of kind, ready to vote at once:
// plain nodes are declared new by startNodes, Clusters as `redlock init`
// declares them.
func startMembers(b *testing.B, kind string, cc clusterConfig) *memberSet {
	b.Helper()
	m := &memberSet{}
	if kind == "plain" {
		set := startNodes(b, cc.members)
		m.addrs, m.stop = set.addrs(), set.stop
		for _, admin := range set.admins {
			m.shards = append(m.shards, []*redis.Client{admin})
		}
		return m
	}
	var scripters []redis.Scripter
	var servers []interface{ Kill() error }
	for range cc.members {
		rc := redlocktest.StartRedisCluster(b, cc.shards)
		m.addrs = append(m.addrs, strings.Join(rc.Addrs(), "|"))
		admins := make([]*redis.Client, cc.shards)
		for j := range admins {
			admins[j] = rc.Admin(b, j)
			servers = append(servers, rc.Shards[j])
		}
		m.shards = append(m.shards, admins)
		scripters = append(scripters, rc.Client(b))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := node.DeclareSet(ctx, scripters, redlock.DefaultKeyPrefix); err != nil {
		b.Fatalf("declaring the Cluster members: %v", err)
	}
	for _, c := range scripters {
		_ = c.(*redis.ClusterClient).Close() // used to declare only
	}
	m.stop = sync.OnceFunc(func() {
		for _, s := range servers {
			_ = s.Kill()
		}
	})
	return m
}

// memberClients makes one go-redis client per member address, as a user
// would: a ClusterClient where the address lists shards ("a|b|c"). r.calls
// counts what reaches each server: a ClusterClient's shard clients carry
// the hook, so a pipeline split over three shards is three round trips.
func (r *rig) memberClients(addrs []string) []redis.UniversalClient {
	out := make([]redis.UniversalClient, 0, len(addrs))
	for _, addr := range addrs {
		if !strings.Contains(addr, "|") {
			c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
			c.AddHook(r.calls)
			r.clients = append(r.clients, c)
			out = append(out, c)
			continue
		}
		c := redis.NewClusterClient(&redis.ClusterOptions{
			Addrs:                    strings.Split(addr, "|"),
			ContextTimeoutEnabled:    true,
			MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
			NewClient: func(opt *redis.Options) *redis.Client {
				shard := redis.NewClient(opt)
				shard.AddHook(r.calls)
				return shard
			},
		})
		r.closers = append(r.closers, c.Close)
		out = append(out, c)
	}
	return out
}

// The worker processes of case=cycles.
const (
	spreadLib      = "redlock-spread"
	procNamesEnv   = "REDLOCK_BENCH_NAMES" // how many names, procNameEnv+"-<i>"
	spreadWarmUpBy = 16                    // warm-up cycles on other names: every shard's connection opened
)

// namePicker is a locker that locks one of several names each time.
type namePicker interface {
	// picked lists the index of the name of every Lock that succeeded.
	picked() []int
}

// spreadLocker locks a name drawn at random from its mutexes.
type spreadLocker struct {
	mutexes []*redlock.Mutex
	rng     *rand.Rand
	picks   []int
}

func (l *spreadLocker) lock(ctx context.Context) (func() error, error) {
	i := l.rng.IntN(len(l.mutexes))
	unlock, err := redlockLocker{l.mutexes[i]}.lock(ctx)
	if err == nil {
		l.picks = append(l.picks, i)
	}
	return unlock, err
}

func (l *spreadLocker) picked() []int { return l.picks }

// setupSpread is a worker process's rig: one Client over the members
// (set's addresses), one spreadLocker, and spreadWarmUpBy lockers of other
// names for the warm-up alone.
func setupSpread(set *nodes, name string, _ time.Duration) (*rig, error) {
	count, err := envInt(procNamesEnv, 1)
	if err != nil {
		return nil, err
	}
	r := &rig{share: 1, calls: &callCounter{}}
	client, err := redlock.New(r.memberClients(set.addrs()))
	if err != nil {
		return nil, errors.Join(err, r.close())
	}
	// The Client first: it waits for its background work on the clients.
	r.closers = append([]func() error{client.Close}, r.closers...)
	seed := uint64(time.Now().UnixNano())
	l := &spreadLocker{rng: rand.New(rand.NewPCG(seed, uint64(os.Getpid())))}
	for i := range count {
		l.mutexes = append(l.mutexes, client.Mutex(name+"-"+strconv.Itoa(i)))
	}
	r.lockers = append(r.lockers, l)
	for range spreadWarmUpBy {
		r.lockers = append(r.lockers, redlockLocker{l.mutexes[l.rng.IntN(count)]})
	}
	return r, nil
}

// shardStat is what one redis-server process counted.
type shardStat struct {
	cmds int64         // INFO stats total_commands_processed
	cpu  time.Duration // INFO cpu used_cpu_sys + used_cpu_user
	// stamps: SET calls (INFO commandstats), which the lock's scripts here
	// make only to stamp a marker: the restart guard's slow path (see
	// node/scripts/guard.lua, judged), once a second per marker that
	// votes; a Cluster has a marker per slot.
	stamps int64
}

// shardStats reads every server's counters, one INFO each, by member.
func shardStats(ctx context.Context, shards [][]*redis.Client) ([][]shardStat, error) {
	out := make([][]shardStat, len(shards))
	for i, member := range shards {
		for j, admin := range member {
			info, err := admin.Info(ctx, "stats", "cpu", "commandstats").Result()
			if err != nil {
				return nil, fmt.Errorf("member %d shard %d: INFO: %w", i, j, err)
			}
			st, err := parseShardStat(info)
			if err != nil {
				return nil, fmt.Errorf("member %d shard %d: %w", i, j, err)
			}
			out[i] = append(out[i], st)
		}
	}
	return out, nil
}

func parseShardStat(info string) (shardStat, error) {
	var st shardStat
	var err error
	if st.cmds, err = totalCommands(info); err != nil {
		return st, err
	}
	sys, err1 := infoFloat(info, "used_cpu_sys:")
	user, err2 := infoFloat(info, "used_cpu_user:")
	if err := errors.Join(err1, err2); err != nil {
		return st, err
	}
	st.cpu = time.Duration((sys + user) * float64(time.Second))
	for line := range strings.SplitSeq(info, "\r\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_set:calls="); ok {
			calls, _, _ := strings.Cut(rest, ",")
			if st.stamps, err = strconv.ParseInt(calls, 10, 64); err != nil {
				return st, fmt.Errorf("INFO commandstats: %q: %w", line, err)
			}
		}
	}
	return st, nil
}

// shardSpent is what each server did between two shardStats, without the
// first one's INFO (a server counts an INFO after answering it, so the
// second one's is not in the difference).
func shardSpent(before, after [][]shardStat) [][]shardStat {
	out := make([][]shardStat, len(after))
	for i := range after {
		for j, now := range after[i] {
			was := before[i][j]
			out[i] = append(out[i], shardStat{cmds: now.cmds - was.cmds - 1, cpu: now.cpu - was.cpu,
				stamps: now.stamps - was.stamps})
		}
	}
	return out
}

// shardTotals sums every server's counters.
func shardTotals(spent [][]shardStat) shardStat {
	var total shardStat
	for _, member := range spent {
		for _, st := range member {
			total.cmds, total.cpu, total.stamps = total.cmds+st.cmds, total.cpu+st.cpu, total.stamps+st.stamps
		}
	}
	return total
}

// reportBalance reports how evenly the load fell on each member's shards
// (max over mean within a member, the worst member) and the busiest
// server's CPU, in % of one core over d.
func reportBalance(b *testing.B, spent [][]shardStat, d time.Duration) {
	worstCmds, worstCPU, busiest := 0.0, 0.0, time.Duration(0)
	for _, member := range spent {
		var cmds, cpus []float64
		for _, st := range member {
			cmds, cpus = append(cmds, float64(st.cmds)), append(cpus, st.cpu.Seconds())
			busiest = max(busiest, st.cpu)
		}
		worstCmds, worstCPU = max(worstCmds, maxOverMean(cmds)), max(worstCPU, maxOverMean(cpus))
	}
	b.ReportMetric(worstCmds, "shard-cmds-max/mean")
	b.ReportMetric(worstCPU, "shard-cpu-max/mean")
	b.ReportMetric(100*busiest.Seconds()/d.Seconds(), "busiest-shard-cpu-%")
}

func maxOverMean(values []float64) float64 {
	var sum float64
	for _, v := range values {
		sum += v
	}
	if sum <= 0 {
		return 0
	}
	return slices.Max(values) * float64(len(values)) / sum
}

// runSpread is case=cycles: cc.workers processes lock random names of
// cc.names on the members m for cfg.duration.
func runSpread(b *testing.B, cfg config, cc clusterConfig, m *memberSet) {
	workers := startWorkers(b, cc.workers, spreadLib, m.addrs, lockName("spread"), 0,
		procNamesEnv+"="+strconv.Itoa(cc.names))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before, err := shardStats(ctx, m.shards)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	deadline, reports := runWorkers(b, workers, cfg.duration)
	b.StopTimer()
	after, err := shardStats(ctx, m.shards)
	if err != nil {
		b.Fatal(err)
	}
	spent := shardSpent(before, after)
	st := analyzeSpread(reports, deadline)
	if st.overlaps > 0 {
		b.Errorf("mutual exclusion violated: %d grants of a name before its previous holder's Unlock", st.overlaps)
	}
	if st.cycles == 0 {
		b.Fatalf("no cycle completed (%d workers stopped on an error, first: %s)", st.errs, st.firstErr)
	}
	reportSpread(b, cfg, cc, st, spent)
	reportBalance(b, spent, cfg.duration)
}

// spreadStats is what the workers' reports say.
type spreadStats struct {
	cycles     int             // Locks granted before the deadline
	locks      []time.Duration // their Lock calls
	overlaps   int             // grants of a name before its previous Unlock: must be 0
	errs       int             // workers stopped by an unexpected Lock error
	firstErr   string
	unlockErrs int
	unlockErr  string // one of them
	calls      int64
	trips      int64
	clientCPU  time.Duration
}

func analyzeSpread(reports []procReport, deadline time.Time) spreadStats {
	var st spreadStats
	byName := map[int][]section{}
	for w, report := range reports {
		for k, s := range report.log(w).sections {
			if s.granted.Before(deadline) {
				st.cycles++
				st.locks = append(st.locks, s.granted.Sub(s.asked))
			}
			byName[report.Names[k]] = append(byName[report.Names[k]], s)
		}
		if report.Err != "" {
			st.errs++
			st.firstErr = cmpOr(st.firstErr, report.Err)
		}
		st.unlockErrs += report.UnlockErrs
		st.unlockErr = cmpOr(st.unlockErr, report.UnlockErr)
		st.calls, st.trips = st.calls+report.Calls, st.trips+report.Trips
		st.clientCPU += time.Duration(report.CPU)
	}
	for _, sections := range byName {
		slices.SortFunc(sections, func(a, b section) int { return a.granted.Compare(b.granted) })
		for i := 1; i < len(sections); i++ {
			if sections[i].granted.Before(sections[i-1].released) {
				st.overlaps++
			}
		}
	}
	return st
}

// cmpOr is the first of a and b that is not empty.
func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func reportSpread(b *testing.B, cfg config, cc clusterConfig, st spreadStats, spent [][]shardStat) {
	if st.errs > 0 {
		b.Logf("%d workers stopped on a Lock error, first: %s", st.errs, st.firstErr)
	}
	if st.unlockErrs > 0 {
		b.Logf("%d Unlock errors, one: %s", st.unlockErrs, st.unlockErr)
	}
	cycles := float64(st.cycles)
	total := shardTotals(spent)
	cmds, cpu := total.cmds, total.cpu
	locks := sortedCopy(st.locks)
	b.ReportMetric(float64(cfg.duration.Nanoseconds())/cycles, "ns/op")
	b.ReportMetric(cycles/cfg.duration.Seconds(), "cycles/s")
	b.ReportMetric(micros(percentile(locks, 0.50)), "lock-p50-µs")
	b.ReportMetric(micros(percentile(locks, 0.99)), "lock-p99-µs")
	b.ReportMetric(float64(st.calls)/cycles, "calls/cycle")
	b.ReportMetric(float64(st.trips)/cycles, "trips/cycle")
	b.ReportMetric(float64(cmds)/cycles, "cmds/cycle")
	b.ReportMetric(micros(cpu)/cycles, "redis-cpu-µs/cycle")
	b.ReportMetric(micros(cpu)/cycles/float64(cc.members), "member-cpu-µs/cycle")
	b.ReportMetric(micros(st.clientCPU)/cycles, "client-cpu-µs/cycle")
	b.ReportMetric(float64(total.stamps)/cycles, "marker-stamps/cycle")
	b.ReportMetric(float64(st.errs), "errors")
	b.ReportMetric(float64(st.unlockErrs), "unlock-errs")
}

// runMemberRenewal is case=renewal: one Client, watchdog on, holds
// cc.leases leases on the members m for cfg.renewHold.
func runMemberRenewal(b *testing.B, cfg config, cc clusterConfig, m *memberSet) {
	r := &rig{share: renewWorkers, calls: &callCounter{}}
	b.Cleanup(func() { _ = r.close() })
	client, renewed, closeClient := renewalClient(b, cfg, r.memberClients(m.addrs))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute+cfg.renewHold)
	defer cancel()

	b.ResetTimer()
	leases, res, err := acquireAll(ctx, client, lockNames("member-renewal", cc.leases))
	if err != nil {
		b.Fatalf("acquire: %v", err)
	}
	before, err := shardStats(ctx, m.shards)
	if err != nil {
		b.Fatal(err)
	}
	calls, trips, self, renewedBefore := r.calls.n.Load(), r.calls.trips.Load(), processCPU(), renewed.Load()
	time.Sleep(cfg.renewHold)
	after, err := shardStats(ctx, m.shards)
	if err != nil {
		b.Fatal(err)
	}
	res.window = counts{calls: r.calls.n.Load() - calls, trips: r.calls.trips.Load() - trips, selfCPU: processCPU() - self}
	res.renewals = renewed.Load() - renewedBefore
	b.StopTimer()
	spent := shardSpent(before, after)
	total := shardTotals(spent)
	res.window.cmds, res.window.redisCPU = total.cmds, total.cpu

	res.lost, res.relErrs = releaseAll(b, ctx, leases)
	if err := closeClient(); err != nil {
		b.Errorf("close: %v", err)
	}
	leaseCfg := cfg
	leaseCfg.leases = cc.leases
	res.report(b, leaseCfg)
	hold := cfg.renewHold.Seconds()
	b.ReportMetric(float64(res.window.calls)/hold, "calls/s")
	b.ReportMetric(float64(res.window.trips)/hold, "trips/s")
	b.ReportMetric(100*res.window.redisCPU.Seconds()/hold/float64(cc.members), "member-cpu-%")
	b.ReportMetric(micros(res.window.redisCPU)/hold/float64(cc.leases), "redis-cpu-µs/lease-s")
	b.ReportMetric(float64(total.stamps)/hold, "marker-stamps/s")
	reportBalance(b, spent, cfg.renewHold)
}

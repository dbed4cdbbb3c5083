package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/node"
	"github.com/redis/go-redis/v9"
)

const inspectUsage = `usage: redlock inspect [-nodes URLs] [-json] [-prefix redlock:] NAME

Shows the lock NAME as the library judges it (Client.Inspect: held or
not, by whom as a fingerprint, holds, how long a quorum still holds it,
waiters, fence) and as each node sees it: whether the node answered (and
its error if not), the owner id holding the lock there with its number of
holds and remaining TTL, the fair queue (owner ids in line, their tickets
and how long until each waiter's heartbeat runs out), and the fencing
counter. It also says whether each node votes, as the library's checks
would judge it: the restart guard, asked of the node with -guard (a node
that may have forgotten a lease, restarted or flushed or new, does not
vote until -guard after that), and the clock check (a node whose clock
runs faster than 1 + -drift times this host's over -clock-sample does not
count). Read-only: it runs HGETALL, PTTL, ZRANGE, GET and TIME, and the
library's read-only inspect and guard scripts, each node bounded by
-timeout, and never changes the lock.

Exit statuses:
  0    every node answered
  2    bad usage
  125  some node did not answer (the report still shows the others)

Example:
  redlock inspect -nodes redis://10.0.0.1:6379,redis://10.0.0.2:6379,redis://10.0.0.3:6379 nightly-backup
  redlock inspect -json nightly-backup | jq '.nodes[].owner'

Flags:
`

// inspectConfig holds inspect's flags.
type inspectConfig struct {
	nodeOptions
	name        string
	json        bool
	guard       time.Duration
	clockSample time.Duration
	drift       float64
}

// parseInspectFlags returns inspect's config, or false and the exit
// status after it printed the help or one usage error line.
func parseInspectFlags(args []string, stderr io.Writer) (inspectConfig, int, bool) {
	var cfg inspectConfig
	f := newFlags("inspect", inspectUsage, stderr)
	f.nodeFlags(&cfg.nodeOptions, "key prefix the lock was taken with")
	f.timeoutFlag(time.Second, "how long each node may take to answer")
	f.BoolVar(&cfg.json, "json", false, "print JSON instead of a table")
	f.DurationVar(&cfg.guard, "guard", redlock.DefaultTTL, "the restart guard of the lock's Clients (by default their longest TTL)")
	f.DurationVar(&cfg.clockSample, "clock-sample", 200*time.Millisecond, "how long to watch each node's clock for its rate (0: not at all)")
	f.Float64Var(&cfg.drift, "drift", redlock.DefaultDriftFactor, "the drift factor of the lock's Clients")
	given, code, ok := f.parseAll(args)
	if !ok {
		return cfg, code, false
	}
	err := f.readNodes()
	switch {
	case len(given) == 0:
		return cfg, f.bad("no lock name: redlock inspect NAME"), false
	case len(given) > 1:
		return cfg, f.bad("unexpected argument %q after the lock name", given[1]), false
	case err != nil:
		return cfg, f.bad("%v", err), false
	case cfg.timeout <= 0:
		return cfg, f.bad("-timeout must be positive, got %v", cfg.timeout), false
	case cfg.guard < 0:
		return cfg, f.bad("-guard must not be negative, got %v", cfg.guard), false
	case cfg.clockSample < 0 || cfg.clockSample > time.Minute:
		return cfg, f.bad("-clock-sample must be in [0, 1m], got %v", cfg.clockSample), false
	case !(cfg.drift >= 0 && cfg.drift < 0.5):
		return cfg, f.bad("-drift must be in [0, 0.5), got %v", cfg.drift), false
	}
	cfg.name = given[0]
	return cfg, exitOK, true
}

// inspect is the inspect subcommand.
func inspect(args []string, stdout, stderr io.Writer) int {
	cfg, code, ok := parseInspectFlags(args, stderr)
	if !ok {
		return code
	}
	ns, err := dialNodes(cfg.urls, cfg.timeout)
	if err != nil {
		fmt.Fprintf(stderr, "redlock inspect: %v\n", err)
		return exitUsage
	}
	defer ns.close()

	rep := lockReport{Name: cfg.name, Prefix: cfg.prefix, Quorum: ns.quorum(), Nodes: make([]nodeState, len(ns.clients))}
	keys := keysFor(cfg.prefix, cfg.name)
	var wg sync.WaitGroup
	for i, client := range ns.clients {
		wg.Go(func() {
			shard, k, err := lockShard(client, keys, cfg.timeout)
			if err != nil {
				rep.Nodes[i] = nodeState{Node: i, Addr: ns.addrs[i], PTTLms: -2, Queue: []waiter{}, Error: oneLine(err)}
				return
			}
			rep.Nodes[i] = readNode(shard, i, ns.addrs[i], k, cfg.timeout)
			judgeNode(shard, k.marker, &rep.Nodes[i], cfg)
		})
	}
	wg.Wait()
	rep.summarize()
	rep.Summary = librarySummary(ns, cfg)
	for _, n := range rep.Nodes {
		if n.Votes {
			rep.Voting++
		}
	}

	if cfg.json {
		err = writeJSON(stdout, &rep)
	} else {
		err = writeTable(stdout, &rep)
	}
	if err != nil {
		fmt.Fprintf(stderr, "redlock inspect: write: %s\n", oneLine(err))
		return exitError
	}
	var failed []*redlock.NodeError
	for _, n := range rep.Nodes {
		if !n.Reachable {
			failed = append(failed, &redlock.NodeError{Node: n.Node, Addr: n.Addr, Err: errors.New(n.Error)})
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(stderr, "redlock inspect: %d of %d nodes did not answer: %s\n", len(failed), len(ns.clients), describeNodes(failed))
		return exitError
	}
	return exitOK
}

// lockKeys are the Redis names of one lock, laid out as the library's
// core.KeysFor lays them out (internal/core/keys.go): the name in a hash tag after the
// prefix, so every key of a lock sits in one Cluster slot.
type lockKeys struct{ lock, fence, queue, alive, marker string }

func keysFor(prefix, name string) lockKeys {
	base := prefix + "{" + name + "}"
	return lockKeys{lock: base, fence: base + ":fence", queue: base + ":queue", alive: base + ":alive", marker: prefix + "node"}
}

// lockShard is the client that serves the lock's keys on a node: the
// node's own, or on a Cluster or Ring member its lock's shard; and the
// keys as that shard names them (a Cluster has a marker per slot).
func lockShard(client redis.UniversalClient, k lockKeys, timeout time.Duration) (*redis.Client, lockKeys, error) {
	k.marker = node.MarkerFor(client, k.marker, k.lock)
	switch c := client.(type) {
	case *redis.Client:
		return c, k, nil
	case *redis.ClusterClient:
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		shard, err := c.MasterForKey(ctx, k.lock)
		return shard, k, err
	case *redis.Ring:
		shard, err := c.GetShardClientForKey(k.lock)
		return shard, k, err
	}
	return nil, k, fmt.Errorf("a %T is not a node inspect can read", client)
}

// ownerField is the lock hash's field naming the owner; every other field
// is one hold.
const ownerField = "owner"

// readNode reads one node's view of the lock in one round trip. A node that
// does not answer TIME is unreachable; any other failed read (a key of the
// wrong type) is reported with the node still reachable.
func readNode(client *redis.Client, index int, addr string, k lockKeys, timeout time.Duration) nodeState {
	state := nodeState{Node: index, Addr: addr, PTTLms: -2, Queue: []waiter{}}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	pipe := client.Pipeline()
	r := nodeReplies{now: pipe.Time(ctx), hash: pipe.HGetAll(ctx, k.lock), pttl: pipe.Do(ctx, "PTTL", k.lock),
		queue: pipe.ZRangeWithScores(ctx, k.queue, 0, -1), alive: pipe.ZRangeWithScores(ctx, k.alive, 0, -1),
		fence: pipe.Get(ctx, k.fence), marker: pipe.Get(ctx, k.marker)}
	sent := time.Now()
	_, _ = pipe.Exec(ctx) // each command's own error is checked below
	got := time.Now()
	if err := r.now.Err(); err != nil {
		state.Error = oneLine(err)
		return state
	}
	state.Reachable = true
	state.clock = clockReading{sent: sent, got: got, node: r.now.Val()}
	state.ClockOffsetMS = float64(r.now.Val().Sub(sent.Add(got.Sub(sent)/2))) / float64(time.Millisecond)
	if err := state.read(r); err != nil {
		state.Error = oneLine(err)
	}
	return state
}

// nodeReplies are the answers to readNode's pipeline.
type nodeReplies struct {
	now           *redis.TimeCmd
	hash          *redis.MapStringStringCmd
	pttl          *redis.Cmd
	queue, alive  *redis.ZSliceCmd
	fence, marker *redis.StringCmd
}

// read fills state from the replies of a node that answered, and returns
// the reads that failed (redis.Nil, a missing key, is no failure).
func (state *nodeState) read(r nodeReplies) error {
	var errs []error
	note := func(what string, err error) {
		if err != nil && !errors.Is(err, redis.Nil) {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	note("HGETALL", r.hash.Err())
	for field, value := range r.hash.Val() {
		if field == ownerField {
			state.Owner = value
		} else {
			state.Holds++
		}
	}
	if v, err := r.pttl.Int64(); err == nil {
		state.PTTLms = v
	} else {
		note("PTTL", err)
	}
	note("ZRANGE queue", r.queue.Err())
	note("ZRANGE alive", r.alive.Err())
	state.Queue = append(state.Queue, queueOf(r.queue.Val(), r.alive.Val(), r.now.Val().UnixMilli())...)
	if v, err := r.fence.Int64(); err == nil {
		state.Fence = v
	} else {
		note("GET fence", err)
	}
	value, err := r.marker.Result()
	note("GET marker", state.readMarker(value, err))
	return errors.Join(errs...)
}

// queueOf is the fair queue in line order, each waiter with the time
// left until its heartbeat deadline (alive) at the node's time nowMS.
func queueOf(queue, alive []redis.Z, nowMS int64) []waiter {
	deadlines := make(map[string]int64)
	for _, z := range alive {
		deadlines[fmt.Sprint(z.Member)] = int64(z.Score)
	}
	var line []waiter
	for _, z := range queue {
		w := waiter{Owner: fmt.Sprint(z.Member), Ticket: int64(z.Score)}
		if deadline, ok := deadlines[w.Owner]; ok {
			remaining := deadline - nowMS
			w.HeartbeatMS = &remaining
		}
		line = append(line, w)
	}
	return line
}

// readMarker records the marker GET answered (value, err), and returns
// the error to report, if any.
func (state *nodeState) readMarker(value string, err error) error {
	switch {
	case errors.Is(err, redis.Nil):
		state.Marker = markerMissing
		return nil
	case err != nil:
		return err
	}
	if state.Marker = describeMarker(value); state.Marker == "" {
		return fmt.Errorf("%q is not a time", value)
	}
	return nil
}

// describeMarker renders a marker (see node/scripts/guard.lua): "complete",
// "declared" (by `redlock init`, for the process then running), or its
// time and the rule that made it; "" when it is none of these.
func describeMarker(value string) string {
	ms, rest, _ := strings.Cut(value, " ")
	tag, _, _ := strings.Cut(rest, " ") // the rule; a run_id may follow
	since, err := strconv.ParseInt(ms, 10, 64)
	switch {
	case err != nil || since < 0:
		return ""
	case since == 0 && tag == "":
		return markerComplete
	case since == 0:
		return markerDeclared
	case tag == "":
		return time.UnixMilli(since).UTC().Format(time.RFC3339Nano)
	}
	return time.UnixMilli(since).UTC().Format(time.RFC3339Nano) + " (" + tag + ")"
}

// What a node's marker says (nodeState.Marker), besides a time.
const (
	markerComplete = "complete"
	markerDeclared = "declared"
	markerMissing  = "missing"
)

// judgeGuard asks the node how its restart guard judges it now (the
// library's own script, making no marker).
func judgeGuard(client *redis.Client, marker string, state *nodeState, cfg inspectConfig) {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	err := node.ProbeMarker(ctx, client, marker, cfg.guard)
	var q *node.Quarantine
	switch {
	case errors.As(err, &q):
		state.Votes = false
		state.QuarantinedUntil = q.Until.UTC().Format(time.RFC3339Nano)
		state.Why = append(state.Why, q.Error())
	case err != nil:
		state.Why = append(state.Why, "restart guard not checked: "+oneLine(err))
	}
}

// clockResolution is what one TIME reading may be off by (as in the
// library's clock check, node/clock.go).
const clockResolution = 100 * time.Microsecond

// clockReading is one TIME of a node, read between sent and got.
type clockReading struct{ sent, got, node time.Time }

// judgeNode says whether a node that answered votes, as the library's
// checks would judge it: the restart guard from its marker, the clock
// check from a second reading of its clock cfg.clockSample later.
func judgeNode(client *redis.Client, marker string, state *nodeState, cfg inspectConfig) {
	if !state.Reachable {
		return
	}
	state.Votes = true
	first := state.clock
	judgeGuard(client, marker, state, cfg)
	if cfg.clockSample == 0 {
		return
	}
	time.Sleep(cfg.clockSample)
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	now, err := client.Time(ctx).Result()
	got := time.Now()
	if err != nil {
		state.Why = append(state.Why, "clock not checked: "+oneLine(err))
		return
	}
	// The node's clock moved now - first.node while at most got -
	// first.sent passed here: the least rate that explains it.
	state.ClockRate = float64(now.Sub(first.node)-clockResolution) / float64(got.Sub(first.sent))
	if state.ClockRate > 1+cfg.drift {
		state.Votes = false
		state.ClockFast = true
		state.Why = append(state.Why, fmt.Sprintf("clock runs at least %.3gx as fast as this host's (over %v): its answers do not count",
			state.ClockRate, cfg.clockSample))
	}
}

// librarySummary is the library's own reading of the lock (Client.Inspect)
// over the same connections.
func librarySummary(ns *nodeSet, cfg inspectConfig) *lockSummary {
	client, err := redlock.New(ns.universal(), redlock.WithKeyPrefix(cfg.prefix), redlock.WithNodeTimeout(cfg.timeout))
	if err != nil {
		return &lockSummary{Error: oneLine(err)}
	}
	defer func() { _ = client.Close() }()
	info, err := client.Inspect(context.Background(), cfg.name)
	summary := &lockSummary{Held: info.Held, Owner: info.Owner, Holds: info.Holds, PTTLms: info.PTTL.Milliseconds(),
		Waiting: info.Waiting, Fence: info.Fence, ForcedMs: forcedFor(info).Milliseconds()}
	if err != nil {
		summary.Error = oneLine(err)
	}
	return summary
}

// forcedFor is how long a handing a ForceUnlock ended still keeps info's
// lock from everyone on some node (0: on none).
func forcedFor(info redlock.LockInfo) time.Duration {
	var longest time.Duration
	for _, n := range info.Nodes {
		if n.Err == nil && n.Forced {
			longest = max(longest, n.PTTL)
		}
	}
	return longest
}

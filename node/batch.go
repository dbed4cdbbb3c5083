package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// maxBatch bounds how many script calls share one pipeline.
const maxBatch = 128

// batcher makes concurrent script calls to one node share round trips:
// calls that arrive while a pipeline is in flight go out together in the
// next one. A lone call goes out at once, run by its own goroutine, so it
// pays nothing for the batching; when calls queued up meanwhile, a flusher
// goroutine (tracked, gone when the queue is empty) sends them.
type batcher struct {
	client Client

	mu       sync.Mutex
	loaded   map[*luaScript]bool // known to be in the node's script cache
	library  int                 // the function library's state here (see functions.go)
	askAfter time.Time           // with library unknown: ask for it again after this
	// lanes: the calls waiting to be sent, one lane per shard on a Redis
	// Cluster member (by its address; "" for a plain node and for a call
	// whose shard is unknown), so that a shard that does not answer holds
	// up its own calls only.
	lanes   map[string]*lane
	flusher sync.WaitGroup
	health  breaker
	// checkClock: the node's TIME in timed scripts' replies goes to clock,
	// or on a Redis Cluster or Ring to the clock of the shard that
	// answered (see clockOf).
	checkClock bool
	clock      clock
	// scatter: a Redis Cluster or Ring, a script cache per shard (see
	// scatter.go); shards: their clocks, one per shard.
	scatter bool
	shards  *shardClocks
	// longest: the longest guard any node of the set answered (see
	// Node.ShareGuard), shared by the set's nodes.
	longest *atomic.Int64
}

// lane is one sender's queue: calls sent in order, one pipeline at a time.
type lane struct {
	queue   []*pending
	running bool // a caller or the flusher is sending
}

type pending struct {
	ctx    context.Context
	script *luaScript
	keys   []string
	args   []any
	check  ClockCheck
	cmd    *redis.Cmd
	done   chan struct{}
	fcall  bool // sent as FCALL: its answer says nothing of the script cache
}

// run sends the script call and waits for its reply or ctx; order (may be
// nil) learns when the call has its place in the queue. An answer that
// fails check comes back as a *ClockQuarantine.
func (b *batcher) run(ctx context.Context, order *Order, script *luaScript, check ClockCheck, keys []string, args ...any) *redis.Cmd {
	return b.submit(order, &pending{ctx: ctx, script: script, keys: keys, args: args, check: check})
}

func (b *batcher) submit(order *Order, p *pending) *redis.Cmd {
	ctx := p.ctx
	if err := b.health.allow(); err != nil {
		order.placed()
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(err)
		return cmd
	}
	if !b.checkClock || !p.script.timed {
		p.check = ClockCheck{}
	}
	p.done = make(chan struct{})
	l := b.laneOf(ctx, p)
	b.mu.Lock()
	l.queue = append(l.queue, p)
	lead := !l.running
	l.running = true
	b.mu.Unlock()
	order.placed()
	if lead {
		// Send what is queued now (this call, and any that raced in), then
		// leave the rest to a flusher so that this caller returns promptly.
		b.sendQueued(l)
		b.mu.Lock()
		if len(l.queue) > 0 {
			b.flusher.Go(func() { b.flush(l) })
		} else {
			l.running = false
		}
		b.mu.Unlock()
	}
	select {
	case <-p.done:
		return p.cmd
	case <-ctx.Done():
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(ctx.Err())
		return cmd
	}
}

// laneOf is the lane of p: on a Cluster member that of the shard serving
// its first key as the client's slot map has it.
func (b *batcher) laneOf(ctx context.Context, p *pending) *lane {
	name := ""
	if b.shards != nil && len(p.keys) > 0 {
		if shard, err := b.shards.shardOf(ctx, p.keys[0]); err == nil {
			name = shard.Options().Addr
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.lanes[name]
	if l == nil {
		l = &lane{}
		b.lanes[name] = l
	}
	return l
}

func (b *batcher) flush(l *lane) {
	for {
		b.sendQueued(l)
		b.mu.Lock()
		if len(l.queue) == 0 {
			l.running = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
	}
}

// sendQueued takes up to maxBatch of l's queued calls and sends them.
func (b *batcher) sendQueued(l *lane) {
	b.mu.Lock()
	n := min(len(l.queue), maxBatch)
	taken := l.queue[:n:n]
	l.queue = l.queue[n:]
	b.mu.Unlock()
	batch := taken[:0:0]
	for _, p := range taken {
		if err := p.ctx.Err(); err != nil {
			// Its caller has given up: never sent, so it cannot run late.
			p.cmd = redis.NewCmd(p.ctx)
			p.cmd.SetErr(fmt.Errorf("%w: %w", ErrNotSent, err))
			close(p.done)
			continue
		}
		batch = append(batch, p)
	}
	if len(batch) == 0 {
		return
	}
	ctx, cancel := batchContext(batch)
	defer cancel()
	if waited, err := b.probe(ctx, batch); err != nil {
		// No answer to the probe: the calls are not sent after it (each
		// would wait out the same silence), and fail as never sent.
		b.health.record(false, err, waited)
		for _, p := range batch {
			p.cmd = redis.NewCmd(p.ctx)
			p.cmd.SetErr(fmt.Errorf("%w: reading the node's clock first: %w", ErrNotSent, err))
			close(p.done)
		}
		return
	}
	if len(batch) == 1 {
		// Alone on the wire (one sender per node, or per shard of a
		// Cluster member, at a time), so EVALSHA's fallback to EVAL cannot
		// be overtaken by another call. Sent under
		// the call's deadline but not its cancellation: once sent, the
		// sender waits for the reply, so that a call made later cannot
		// reach the node first on another connection.
		p := batch[0]
		sent := time.Now()
		p.cmd = b.runAlone(ctx, p)
		got := time.Now()
		b.markLoaded(p)
		b.health.record(Answered(p.cmd.Err()), p.cmd.Err(), got.Sub(sent))
		b.judge(batch, sent, got)
		close(p.done)
		return
	}
	b.sendPipeline(ctx, batch)
}

// runAlone runs one call: EVALSHA, falling back to EVAL when the node lost
// the script; or, when the script is not known to be loaded, SCRIPT LOAD
// and EVALSHA in one pipeline, one round trip instead of a NOSCRIPT's two.
func (b *batcher) runAlone(ctx context.Context, p *pending) *redis.Cmd {
	if b.scatter {
		return b.runScattered(ctx, p)
	}
	if b.useLibrary(p) {
		return b.callFunction(ctx, p)
	}
	b.mu.Lock()
	loaded, asked := b.loaded[p.script], b.library == libLoaded || b.library == libRefused
	b.mu.Unlock()
	if loaded && asked {
		return p.script.Run(ctx, b.client, p.keys, p.args...)
	}
	pipe := b.client.Pipeline()
	learn := b.askLibrary(ctx, pipe)
	if !loaded {
		pipe.ScriptLoad(ctx, p.script.source)
	}
	cmd := pipe.EvalSha(ctx, p.script.Hash(), p.keys, p.args...)
	_, _ = pipe.Exec(ctx) // the call carries its own error
	learn()
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		cmd = b.client.Eval(ctx, p.script.source, p.keys, p.args...) // alone on the wire: nothing overtaken
	}
	return cmd
}

// callFunction runs one call as FCALL, and by EVAL when the node lost the
// library (alone on the wire, as runAlone's EVALSHA fallback).
func (b *batcher) callFunction(ctx context.Context, p *pending) *redis.Cmd {
	p.fcall = true
	cmd := b.client.(functionCaller).FCall(ctx, p.script.fn, p.keys, p.args...)
	if err := cmd.Err(); notRun(p, err) {
		b.learnNotRun(p, err)
		// EVALSHA, and EVAL when the script is not cached: alone on the
		// wire, nothing is overtaken, and a node kept from FCALL (OOM) is
		// not sent the script's source on every call.
		cmd = p.script.Run(ctx, b.client, p.keys, p.args...)
	}
	return cmd
}

// sendPipeline sends calls as one pipeline of EVALSHA, bounded by the
// latest of their deadlines. A script not known to be cached is loaded at
// the head of the pipeline (on a Cluster, on every shard first), and a
// call answered NOSCRIPT (the cache flushed, the node restarted) did not
// run: it runs again by EVAL after the rest, unless that would overtake a
// later call on its key (see evalUncached). The node runs the calls in
// order, and order matters: a renewal queued before a release must not
// run after it.
func (b *batcher) sendPipeline(ctx context.Context, batch []*pending) {
	pipe := b.client.Pipeline()
	learn := func() {}
	if b.scatter {
		b.ensureLibrary(ctx)
	} else {
		learn = b.askLibrary(ctx, pipe)
	}
	b.mu.Lock()
	var loading []*luaScript
	for _, p := range batch {
		p.fcall = b.library == libLoaded && p.script.fn != "" // as useLibrary, under one lock
		if !p.fcall && !b.loaded[p.script] && !slices.Contains(loading, p.script) {
			loading = append(loading, p.script)
		}
	}
	b.mu.Unlock()
	if b.scatter {
		b.loadEverywhere(ctx, loading)
		loading = nil
	}
	for _, script := range loading {
		pipe.ScriptLoad(ctx, script.source)
	}
	cmds := make([]*redis.Cmd, len(batch))
	for i, p := range batch {
		if p.fcall {
			cmds[i] = pipe.FCall(ctx, p.script.fn, p.keys, p.args...)
		} else {
			cmds[i] = pipe.EvalSha(ctx, p.script.Hash(), p.keys, p.args...)
		}
	}
	sent := time.Now()
	_, _ = pipe.Exec(ctx) // each command carries its own error
	learn()
	b.evalUncached(ctx, batch, cmds)
	got := time.Now()
	answered, last := false, error(nil)
	for i, p := range batch {
		p.cmd = cmds[i]
		b.markLoaded(p)
		answered = answered || Answered(p.cmd.Err())
		last = p.cmd.Err()
	}
	b.health.record(answered, last, got.Sub(sent))
	b.judge(batch, sent, got)
	for _, p := range batch {
		close(p.done)
	}
}

// probeScript only answers the node's time, and, given a marker, the
// longest guard it records; with ARGV[1] "route", KEYS[1] only picks the
// Cluster shard it runs on.
var probeScript = newLibScript("probe", true, `
local value = KEYS[1] and ARGV[1] ~= 'route' and redis.call('GET', KEYS[1])
local m = value and marker_read(value)
node_longest = m and m.longest or 0
return timed({})`, guardSource)

// learn raises the longest guard seen on the set's nodes to longest.
func (b *batcher) learn(longest time.Duration) {
	for {
		seen := b.longest.Load()
		if int64(longest) <= seen || b.longest.CompareAndSwap(seen, int64(longest)) {
			return
		}
	}
}

// probes is how many times probe reads the node's clock, one after
// another. Each pair of readings bounds the clock's rate by the node's
// time between them over the whole span from the first send to the last
// receipt; a stall on the way out of the first or back from the second
// (a busy machine) widens that span and can hide a fast clock from one
// pair. Two probes and the call make three pairs.
const probes = 2

// probe reads the node's clock, alone, when a call in batch asks for a
// clock check and there is no earlier reading to compare its own with (on
// a Cluster member: of the shard serving the call). It costs probes round
// trips on a Client's first call to the node (or shard). It returns the
// error of a probe the node did not answer, and how long it waited.
func (b *batcher) probe(ctx context.Context, batch []*pending) (time.Duration, error) {
	if !b.checkClock {
		return 0, nil
	}
	for _, p := range batch {
		if !p.check.on() {
			continue
		}
		if c := b.clockOf(ctx, p); c == nil || c.baseline() {
			continue
		}
		if waited, err := b.probeClock(ctx, p.keys); err != nil {
			return waited, err
		}
	}
	return 0, nil
}

// probeClock reads the clock of the node, or on a Cluster member of the
// shard serving keys, probes times.
func (b *batcher) probeClock(ctx context.Context, keys []string) (time.Duration, error) {
	for range probes {
		p := &pending{ctx: ctx, script: probeScript}
		if b.shards != nil {
			p.keys, p.args = keys[:1], []any{"route"}
		}
		sent := time.Now()
		p.cmd = b.runAlone(ctx, p)
		got := time.Now()
		b.markLoaded(p)
		b.judge([]*pending{p}, sent, got)
		if err := p.cmd.Err(); !Answered(err) {
			return got.Sub(sent), err
		}
		b.health.timing.observe(got.Sub(sent))
	}
	return 0, nil
}

// judge takes the node's time out of each timed script's answer (the
// script ran between sent and got), hands it to the clock, and replaces
// the answer of each call whose check fails. A call that failed on its
// own (a script error, no answer) keeps its error.
func (b *batcher) judge(batch []*pending, sent, got time.Time) {
	for _, p := range batch {
		if !p.script.timed || p.cmd.Err() != nil {
			continue // no reading, and nothing to count: the call failed
		}
		at, longest, reply, err := untime(p.cmd.Val())
		if err != nil {
			p.cmd = redis.NewCmd(p.ctx)
			p.cmd.SetErr(err)
			continue
		}
		p.cmd.SetVal(reply)
		b.learn(longest)
		c := b.clockOf(p.ctx, p)
		if c == nil {
			continue
		}
		if !b.checkClock {
			c.note(sample{sent: sent, got: got, node: at}) // for the offset (deadlineArg)
			continue
		}
		if verdict := c.observe(sample{sent: sent, got: got, node: at}, []ClockCheck{p.check})[0]; verdict != nil {
			p.cmd = redis.NewCmd(p.ctx)
			p.cmd.SetErr(verdict)
		}
	}
}

// markLoaded records what a call's outcome says of the script cache.
func (b *batcher) markLoaded(p *pending) {
	if b.scatter || p.fcall {
		return // a shard's answer says nothing of the others' caches
	}
	script, err := p.script, p.cmd.Err()
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case err == nil || (!redis.HasErrorPrefix(err, "NOSCRIPT") && isRedisError(err)):
		b.loaded[script] = true // it ran (a script error is still a run)
	case redis.HasErrorPrefix(err, "NOSCRIPT"):
		b.loaded[script] = false
	}
}

func isRedisError(err error) bool {
	var redisErr redis.Error
	return errors.As(err, &redisErr)
}

// batchContext is bounded by the latest deadline among the calls (none if
// any call has none): no call is cut short by another's shorter deadline.
func batchContext(batch []*pending) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, p := range batch {
		deadline, ok := p.ctx.Deadline()
		if !ok {
			return context.WithCancel(context.Background())
		}
		if deadline.After(latest) {
			latest = deadline
		}
	}
	return context.WithDeadline(context.Background(), latest)
}

// wait stops the prober and returns once no goroutine is running.
func (b *batcher) wait() {
	b.health.close()
	b.flusher.Wait()
}

package node

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// A Redis Cluster (or Ring) member runs each script on the shard of its
// keys, and each shard has a script cache of its own, while a SCRIPT LOAD
// in a pipeline goes to any one shard. There a script not known loaded is
// loaded on every shard first (ClusterClient.ScriptLoad does), and a
// NOSCRIPT (a shard restarted, failed over or added since) is answered by
// EVAL on that shard: no call fails for a cache it cannot see.

// loadEverywhere loads scripts on every shard; a script whose load failed
// stays not known loaded (its calls fall back to EVAL where needed).
func (b *batcher) loadEverywhere(ctx context.Context, scripts []*luaScript) {
	for _, script := range scripts {
		if b.client.ScriptLoad(ctx, script.source).Err() == nil {
			b.mu.Lock()
			b.loaded[script] = true
			b.mu.Unlock()
		}
	}
}

// runScattered is runAlone on a Cluster or Ring member.
func (b *batcher) runScattered(ctx context.Context, p *pending) *redis.Cmd {
	b.mu.Lock()
	loaded := b.loaded[p.script]
	b.mu.Unlock()
	if !loaded {
		b.loadEverywhere(ctx, []*luaScript{p.script})
	}
	var cmd *redis.Cmd
	if p.also == nil {
		// Not a pipeline: a Cluster client's costs it a goroutine per shard.
		cmd = b.client.EvalSha(ctx, p.script.Hash(), p.keys, p.args...)
	} else {
		pipe := b.client.Pipeline()
		cmd = pipe.EvalSha(ctx, p.script.Hash(), p.keys, p.args...)
		after := alsoIn(pipe, p)
		_, _ = pipe.Exec(ctx) // the call carries its own error
		after()
	}
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		b.forget(p.script)
		cmd = b.client.Eval(ctx, p.script.source, p.keys, p.args...)
	}
	return cmd
}

// evalUncached runs again, by EVAL, each call of a pipeline that a node
// (or shard) answered NOSCRIPT: it did not run. Not a call followed in the
// pipeline by one that did run on the same node (on a Cluster, in the same
// slot): run now it would overtake that one (a release after a renewal),
// so it keeps its NOSCRIPT, and its caller tries again knowing it did not
// run. A node that lost its cache answers every call NOSCRIPT, so in
// practice all run again.
func (b *batcher) evalUncached(ctx context.Context, batch []*pending, cmds []*redis.Cmd) {
	rerun := make([]bool, len(batch))
	ranAfter := map[int]bool{}
	for i := len(batch) - 1; i >= 0; i-- {
		at := b.orderedWithin(batch[i])
		if !redis.HasErrorPrefix(cmds[i].Err(), "NOSCRIPT") {
			ranAfter[at] = true
			continue
		}
		b.forget(batch[i].script)
		rerun[i] = !ranAfter[at]
	}
	var pipe redis.Pipeliner
	for i, p := range batch {
		if rerun[i] {
			if pipe == nil {
				pipe = b.client.Pipeline()
			}
			cmds[i] = pipe.Eval(ctx, p.script.source, p.keys, p.args...)
		}
	}
	if pipe != nil {
		_, _ = pipe.Exec(ctx) // each command carries its own error
	}
}

// orderedWithin names the calls whose order a node keeps with p's: every
// call on a plain node (0); on a Cluster or Ring, those of p's slot.
func (b *batcher) orderedWithin(p *pending) int {
	if !b.scatter || len(p.keys) == 0 {
		return 0
	}
	return 1 + int(slotOf(p.keys[0]))
}

// forget marks script as not known loaded, so that the next call loads it
// on every shard again.
func (b *batcher) forget(script *luaScript) {
	b.mu.Lock()
	b.loaded[script] = false
	b.mu.Unlock()
}

// shardClocks are a Cluster or Ring member's clocks, one per shard: each
// shard runs the scripts of its keys on its own clock.
type shardClocks struct {
	shardOf func(ctx context.Context, key string) (*redis.Client, error)
	mu      sync.Mutex
	clocks  map[string]*clock // by the shard's address
}

// newShardClocks keeps the clocks of a Cluster's or a Ring's shards.
func newShardClocks(client Client) *shardClocks {
	s := &shardClocks{clocks: map[string]*clock{}}
	switch c := client.(type) {
	case *redis.ClusterClient:
		s.shardOf = c.MasterForKey
	case *redis.Ring:
		s.shardOf = func(_ context.Context, key string) (*redis.Client, error) { return c.GetShardClientForKey(key) }
	default:
		return nil
	}
	return s
}

// clockOf is the clock that judges p's reading: the node's, or on a
// Cluster or Ring member that of the shard serving p's keys as the
// client's slot map (or hash ring) has it (nil when it cannot tell: no
// keys, no slot map yet).
func (b *batcher) clockOf(ctx context.Context, p *pending) *clock {
	if b.shards == nil {
		return &b.clock
	}
	if len(p.keys) == 0 {
		return nil
	}
	shard, err := b.shards.shardOf(ctx, p.keys[0])
	if err != nil {
		return nil
	}
	addr := shard.Options().Addr
	b.shards.mu.Lock()
	defer b.shards.mu.Unlock()
	c := b.shards.clocks[addr]
	if c == nil {
		c = new(clock)
		b.shards.clocks[addr] = c
	}
	return c
}

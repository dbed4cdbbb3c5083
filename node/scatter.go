package node

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// A Redis Cluster (or Ring) member runs each script on the shard of its
// keys, and each shard has a script cache of its own, while a SCRIPT LOAD
// in a pipeline goes to any one shard. There a script not known loaded is
// loaded on every master shard first, and a NOSCRIPT (a shard restarted,
// failed over or added since) is answered by EVAL on that shard: no call
// fails for a cache it cannot see.

// loadEverywhere loads scripts on every master shard, best effort: a
// shard that missed it answers NOSCRIPT and gets EVAL, and the script is
// loaded everywhere again after the next NOSCRIPT. Marked loaded after
// one try, so that a shard down does not cost every call a load.
func (b *batcher) loadEverywhere(ctx context.Context, scripts []*luaScript) {
	for _, script := range scripts {
		load := func(ctx context.Context, shard *redis.Client) error {
			_ = shard.ScriptLoad(ctx, script.source).Err()
			return nil
		}
		if sharded, _ := b.eachShard(ctx, load); !sharded {
			_ = b.client.ScriptLoad(ctx, script.source).Err()
		}
		b.mu.Lock()
		b.loaded[script] = true
		b.mu.Unlock()
	}
}

// eachShard runs fn on every master shard of a Cluster member or every
// shard of a Ring; sharded is false for any other client.
func (b *batcher) eachShard(ctx context.Context, fn func(context.Context, *redis.Client) error) (sharded bool, err error) {
	switch c := b.client.(type) {
	case *redis.ClusterClient:
		return true, c.ForEachMaster(ctx, fn)
	case *redis.Ring:
		return true, c.ForEachShard(ctx, fn)
	}
	return false, nil
}

// runScattered is runAlone on a Cluster or Ring member.
func (b *batcher) runScattered(ctx context.Context, p *pending) *redis.Cmd {
	b.ensureLibrary(ctx)
	if b.useLibrary(p) {
		return b.callFunction(ctx, p)
	}
	b.mu.Lock()
	loaded := b.loaded[p.script]
	b.mu.Unlock()
	if !loaded {
		b.loadEverywhere(ctx, []*luaScript{p.script})
	}
	// Not a pipeline: a Cluster client's costs it a goroutine per shard.
	cmd := b.client.EvalSha(ctx, p.script.Hash(), p.keys, p.args...)
	if err := cmd.Err(); notRun(p, err) {
		b.learnNotRun(p, err)
		cmd = b.client.Eval(ctx, p.script.source, p.keys, p.args...)
	}
	return cmd
}

// evalUncached runs again, by EVAL, each call of a pipeline that a node
// (or shard) answered NOSCRIPT: it did not run. Not a call followed in the
// pipeline by one that ran on a lock it names (a release after a
// renewal): run now it would overtake that one. It fails as not sent
// (ErrNotSent: it did not run), so that a release goes to the sweeper and
// is tried again. A node that lost its cache answers every call NOSCRIPT,
// so in practice all run again.
func (b *batcher) evalUncached(ctx context.Context, batch []*pending, cmds []*redis.Cmd) {
	rerun := make([]bool, len(batch))
	ranAfter := map[string]bool{} // tags of later calls that ran
	untagged, ran := false, false // a later call without tags ran; any did
	for i := len(batch) - 1; i >= 0; i-- {
		tags := hashTags(batch[i].keys)
		if !notRun(batch[i], cmds[i].Err()) {
			for _, tag := range tags {
				ranAfter[tag] = true
			}
			untagged, ran = untagged || len(tags) == 0, true
			continue
		}
		b.learnNotRun(batch[i], cmds[i].Err())
		// A call without tags may touch any lock: it orders with every call.
		overtakes := untagged || (len(tags) == 0 && ran) ||
			slices.ContainsFunc(tags, func(tag string) bool { return ranAfter[tag] })
		rerun[i] = !overtakes
		if !rerun[i] {
			kept := redis.NewCmd(batch[i].ctx)
			kept.SetErr(fmt.Errorf("%w: %v", ErrNotSent, cmds[i].Err())) // not an answer: it did not run
			cmds[i] = kept
		}
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

// hashTags are the hash tags of keys (a lock's name, "{name}"): the locks
// a call touches. The node's marker has none on a plain node, and on a
// Cluster its tag names a slot, which a lock of that slot shares.
func hashTags(keys []string) []string {
	var tags []string
	for _, key := range keys {
		if open := strings.IndexByte(key, '{'); open >= 0 {
			if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
				tags = append(tags, key[open+1:open+1+end])
			}
		}
	}
	return tags
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
	return b.clockFor(ctx, p.keys[0])
}

// clockFor is the clock of the node, or of the shard serving key.
func (b *batcher) clockFor(ctx context.Context, key string) *clock {
	if b.shards == nil {
		return &b.clock
	}
	shard, err := b.shards.shardOf(ctx, key)
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

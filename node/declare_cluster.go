package node

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed scripts/declare_shard.lua
	declareShardSource string

	// Keyless, it reads each slot's marker it finds on the shard: many slots.
	declareShardScript = redis.NewScript("#!lua flags=allow-cross-slot-keys\n" + guardSource + declareShardSource)
)

// declareCluster declares a Redis Cluster member: each master shard passes
// declare.lua's checks (declare_shard.lua, every slot marker it holds
// among them), then, in mode "declare", every slot it serves gets a
// marker declared for the shard's data now. A shard that restarts or
// fails over between the check and the writes changes its replication
// id: the markers then count as stamped on other data (a quarantine).
func declareCluster(ctx context.Context, cluster *redis.ClusterClient, prefix, mode string) error {
	slots, err := cluster.ClusterSlots(ctx).Result()
	if err != nil {
		return err
	}
	served := map[string][]redis.ClusterSlot{}
	for _, r := range slots {
		if len(r.Nodes) > 0 {
			served[r.Nodes[0].Addr] = append(served[r.Nodes[0].Addr], r)
		}
	}
	var mu sync.Mutex
	var refusals []error
	err = cluster.ForEachMaster(ctx, func(ctx context.Context, shard *redis.Client) error {
		if err := declareShard(ctx, shard, prefix, mode, served[shard.Options().Addr]); err != nil {
			mu.Lock()
			refusals = append(refusals, fmt.Errorf("shard %s: %w", shard.Options().Addr, err))
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if len(refusals) > 0 {
		return refusals[0]
	}
	return nil
}

// declareShard checks one shard and, in mode "declare", writes the marker
// of every slot in ranges, in one pipeline.
func declareShard(ctx context.Context, shard *redis.Client, prefix, mode string, ranges []redis.ClusterSlot) error {
	marker := prefix + "node"
	reply, err := declareShardScript.Run(ctx, shard, nil, globEscape(prefix)+"*", marker+":{").Result()
	if err != nil {
		return err
	}
	list, ok := reply.([]any)
	if !ok || len(list) != 4 || list[0] != "ok" {
		return decodeDeclared(reply)
	}
	replid, run, evictions := fmt.Sprint(list[1]), fmt.Sprint(list[2]), fmt.Sprint(list[3])
	if _, err := strconv.ParseUint(evictions, 10, 64); err != nil {
		return fmt.Errorf("%w to declare: %v", ErrBadReply, reply)
	}
	if mode != "declare" {
		return nil
	}
	value := fmt.Sprintf("0 declared %s 0 0 %s %s", replid, evictions, run)
	pipe := shard.Pipeline()
	for _, r := range ranges {
		for slot := r.Start; slot <= r.End; slot++ {
			pipe.Set(ctx, marker+":{"+slotTag(uint16(slot))+"}", value, 0)
			if pipe.Len() == declareChunk {
				if _, err := pipe.Exec(ctx); err != nil {
					return err
				}
			}
		}
	}
	_, err = pipe.Exec(ctx)
	return err
}

// declareChunk bounds the SETs of one round trip: a shard's 5,000 or more
// markers in one pipeline could outlast a short read timeout.
const declareChunk = 1024

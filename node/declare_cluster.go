package node

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed scripts/declare_shard.lua
	declareShardSource string

	// Keyless, it reads each slot's marker it finds on the shard: many slots.
	declareShardScript = redis.NewScript("#!lua flags=allow-cross-slot-keys\n" + guardSource + declareCommon + declareShardSource)
)

// declareCluster declares a Redis Cluster member: each master shard passes
// declare.lua's checks (declare_shard.lua, every slot marker it holds
// among them) and, in mode "declare", in the same script every slot it
// serves gets a marker declared for the shard's data now.
func declareCluster(ctx context.Context, cluster *redis.ClusterClient, prefix, mode string) error {
	var mu sync.Mutex
	var refusals []error
	err := cluster.ForEachMaster(ctx, func(ctx context.Context, shard *redis.Client) error {
		if err := declareShard(ctx, shard, prefix, mode); err != nil {
			mu.Lock()
			refusals = append(refusals, fmt.Errorf("shard %s: %w", shard.Options().Addr, err))
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return errors.Join(refusals...)
}

// servedBy is the slots the shard serves, as it sees them itself (by its
// node id, not an address the client may have rewritten).
func servedBy(ctx context.Context, shard *redis.Client) ([]redis.ClusterSlot, error) {
	id, err := shard.ClusterMyID(ctx).Result()
	if err != nil {
		return nil, err
	}
	slots, err := shard.ClusterSlots(ctx).Result()
	if err != nil {
		return nil, err
	}
	var served []redis.ClusterSlot
	for _, r := range slots {
		if len(r.Nodes) > 0 && r.Nodes[0].ID == id {
			served = append(served, r)
		}
	}
	if len(served) == 0 {
		return nil, errors.New("it serves no slot: not declared")
	}
	return served, nil
}

// declareShard checks one shard and, in mode "declare", writes the marker
// of every slot it serves, in the same script.
func declareShard(ctx context.Context, shard *redis.Client, prefix, mode string) error {
	marker := prefix + "node"
	args := []any{globEscape(prefix) + "*", marker + ":{", mode}
	if mode == "declare" {
		ranges, err := servedBy(ctx, shard)
		if err != nil {
			return err
		}
		for _, r := range ranges {
			for slot := r.Start; slot <= r.End; slot++ {
				args = append(args, marker+":{"+slotTag(uint16(slot))+"}")
			}
		}
	}
	reply, err := declareShardScript.Run(ctx, shard, nil, args...).Result()
	if err != nil {
		return err
	}
	list, ok := reply.([]any)
	if !ok || len(list) != 4 || list[0] != "ok" {
		return decodeDeclared(reply)
	}
	if _, err := strconv.ParseUint(fmt.Sprint(list[3]), 10, 64); err != nil {
		return fmt.Errorf("%w to declare: %v", ErrBadReply, reply)
	}
	return nil
}

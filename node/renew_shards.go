package node

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// On a Redis Cluster member one script call may touch keys of several
// slots of the shard it runs on, though it declares keys of one slot only
// (renew_slots.lua; as a function, flagged allow-cross-slot-keys): the
// leases due there are renewed in one call per shard, as on a plain node
// in one call, and a shard's failure touches its own leases only. A call
// refused because a slot moved (see moved) is made again slot by slot,
// where each slot now lives.

// RenewEach renews batch as Renew does and answers per item: errs[i] is
// the error of the call that carried item i (nil: renewed[i] is its
// answer). On a plain node every item shares one call and one error.
func (n *Node) RenewEach(ctx context.Context, batch []Renewal) (renewed []Renewed, errs []error) {
	renewed, errs = make([]Renewed, len(batch)), make([]error, len(batch))
	if !n.cluster {
		got, err := n.Renew(ctx, batch)
		for i := range batch {
			if errs[i] = err; err == nil {
				renewed[i] = got[i]
			}
		}
		return renewed, errs
	}
	n.renewGroups(ctx, n.groupBy(ctx, batch, true), batch, renewed, errs)
	return renewed, errs
}

// groupBy splits batch's indexes into the calls that carry them: by the
// shard serving each item's slot as the client's slot map has it, or by
// slot (byShard false, or no slot map yet).
func (n *Node) groupBy(ctx context.Context, batch []Renewal, byShard bool) [][]int {
	at := map[string]int{}
	var groups [][]int
	for i, item := range batch {
		key := MarkerFor(n.client, "", item.Keys.Lock) // the slot's tag
		if byShard && n.calls.shards != nil {
			if shard, err := n.calls.shards.shardOf(ctx, item.Keys.Lock); err == nil {
				key = shard.Options().Addr
			}
		}
		g, ok := at[key]
		if !ok {
			g = len(groups)
			at[key] = g
			groups = append(groups, nil)
		}
		groups[g] = append(groups[g], i)
	}
	return groups
}

// renewGroups makes one call per group, concurrently (they share the
// node's pipelines), and fills in their items' answers. A group refused
// for a slot that moved is split by slot and tried once more.
func (n *Node) renewGroups(ctx context.Context, groups [][]int, batch []Renewal, renewed []Renewed, errs []error) {
	var wg sync.WaitGroup
	for _, group := range groups {
		wg.Go(func() {
			items := make([]Renewal, len(group))
			for j, i := range group {
				items[j] = batch[i]
			}
			got, err := n.renewShard(ctx, items)
			if err != nil && moved(err) && !sameSlot(items) {
				sub := make([]Renewed, len(items))
				subErrs := make([]error, len(items))
				n.renewGroups(ctx, n.groupBy(ctx, items, false), items, sub, subErrs)
				for j, i := range group {
					renewed[i], errs[i] = sub[j], subErrs[j]
				}
				return
			}
			for j, i := range group {
				if errs[i] = err; err == nil {
					renewed[i] = got[j]
				}
			}
		})
	}
	wg.Wait()
}

// renewShard renews items, all of one shard as far as the client knows,
// in one call that judges the marker of each slot they span.
func (n *Node) renewShard(ctx context.Context, items []Renewal) ([]Renewed, error) {
	var markers []string
	seen := map[string]bool{}
	for _, item := range items {
		if m := n.markerKey(item.Keys); !seen[m] {
			seen[m] = true
			markers = append(markers, m)
		}
	}
	script := renewSlotsScript
	if len(markers) == 1 {
		script = renewScript // one slot: no flag needed, any server
	}
	return n.renewCall(ctx, script, items, markers)
}

// sameSlot reports whether every item's lock is in one slot.
func sameSlot(items []Renewal) bool {
	for _, item := range items[1:] {
		if slotOf(item.Keys.Lock) != slotOf(items[0].Keys.Lock) {
			return false
		}
	}
	return true
}

// moved: a Cluster refused the call because a slot it spans is not (or
// not wholly) served where it went: MOVED, ASK, TRYAGAIN or CROSSSLOT
// before it ran, or a script error at the first key of such a slot (the
// markers are read before any lock is touched).
func moved(err error) bool {
	for _, prefix := range []string{"MOVED", "ASK", "TRYAGAIN", "CROSSSLOT"} {
		if redis.HasErrorPrefix(err, prefix) {
			return true
		}
	}
	var redisErr redis.Error
	return errors.As(err, &redisErr) && (strings.Contains(redisErr.Error(), "non local key") ||
		strings.Contains(redisErr.Error(), "do not hash to the same slot"))
}

// spanned is renew_slots.lua's layout of a call of renew.lua's keys and
// args: route (a key of the first slot) declared, the rest in ARGV.
func spanned(keys []string, args []any, route string) ([]string, []any) {
	all := make([]any, 0, 1+len(keys)+len(args))
	all = append(all, len(keys))
	for _, key := range keys {
		all = append(all, key)
	}
	return []string{route}, append(all, args...)
}

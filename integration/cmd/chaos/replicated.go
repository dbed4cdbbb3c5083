package main

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/integration/internal/harness"
	"github.com/quorumlock/redlock/integration/internal/nodes"
	"github.com/quorumlock/redlock/redlocktest/checker"
	"github.com/redis/go-redis/v9"
)

// dialFailover makes n Clients over the replicated topology's members,
// one go-redis failover client per member each (Clients connect through
// Sentinel, as users of such a deployment do), with the options Dial
// gives a node's client. Client k reaches the redis-servers Sentinel
// names through route(k). closeClients closes the Clients, then their
// failover clients (New leaves those to the caller).
func (r *runner) dialFailover(n int, route func(k int) map[string]string, opts []redlock.Option) (
	clients []*redlock.Client, closeClients func() error, err error) {
	var members []*redis.Client
	closeClients = func() error {
		errs := []error{harness.CloseAll(clients)}
		for _, m := range members {
			errs = append(errs, m.Close())
		}
		return errors.Join(errs...)
	}
	for k := range n {
		var set []redis.UniversalClient
		for i := range r.rep.N() {
			o := r.rep.FailoverOptions(i, route(k))
			// As Dial sets a node's client: the node timeout on every call,
			// one dial per call, no retries (the lock retries on its own).
			o.DialTimeout, o.ReadTimeout, o.WriteTimeout = harness.NodeTimeout, harness.NodeTimeout, harness.NodeTimeout
			o.ContextTimeoutEnabled, o.DialerRetries, o.MaxRetries = true, 1, -1
			o.PoolSize, o.PipelinePoolSize = 4, -1
			member := redis.NewFailoverClient(o)
			members = append(members, member)
			set = append(set, member)
		}
		c, err := redlock.New(set, opts...)
		if err != nil {
			return nil, nil, errors.Join(err, closeClients())
		}
		clients = append(clients, c)
	}
	return clients, closeClients, nil
}

// chaosReplicated is chaos on the replicated topology. Each Client
// reaches each redis-server through a link of its own, where the
// one-way faults act on the link to a member's master.
func (r *runner) chaosReplicated(ctx context.Context, sum *summary) (err error) {
	events := planReplicated(r.cfg.seed, r.cfg.duration, r.rep.N(), r.cfg.clients, harness.TTL)
	r.say("%d faults planned over %v (failover: kill the master, the same after cutting the replica's replication, SENTINEL FAILOVER; pause or disconnect the master, kill the replica, cut replication; one Client's link to a master: hold requests, hold replies, delay requests; one member at a time)",
		countFaults(events), r.cfg.duration)
	data, routes := r.rep.Data(), r.rep.Routes()
	published := make([]string, len(data))
	for c, addr := range data {
		published[c] = routes[addr]
	}
	lk, err := newLinks(r.cfg.clients, published)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, lk.Close()) }()
	viaLinks := func(k int) map[string]string {
		route := map[string]string{}
		for c, addr := range data {
			route[addr] = lk.proxies[k][c].Addr()
		}
		return route
	}
	clients, closeClients, err := r.dialFailover(r.cfg.clients, viaLinks, harness.Options())
	if err != nil {
		return err
	}
	ex := &memberRun{rep: r.rep, lk: lk, say: r.say, linked: map[[2]int]int{}}
	return r.work(ctx, sum, clients, closeClients, lk,
		func(ctx context.Context, start time.Time) (int, error) { return ex.execute(ctx, events, start) },
		ex.faulty)
}

// failoverMajority are the members control (a) fails over: a majority.
func (r *runner) failoverMajority() []int {
	n := r.rep.N()/2 + 1
	members := make([]int, n)
	for i := range members {
		members[i] = i
	}
	return members
}

// controlFailover is the replicated topology's control (a): the replicas
// of a majority are cut off from their masters, a holder takes every
// mode's lock (the grants reach those masters only), those masters are
// killed and their sentinels promote the replicas, which lack the grants;
// then a second Client takes every mode's lock. guarded: with the restart
// guard (the default; the promoted replicas must not vote until the
// holder's leases have ended), or without it (the checker must catch two
// owners). The members are healed before it returns.
func (r *runner) controlFailover(ctx context.Context, guarded bool) (_ []checker.Violation, err error) {
	majority := r.failoverMajority()
	// No lock of the run before is still held: the masters vote at once.
	all := make([]int, r.rep.N())
	for i := range all {
		all[i] = i
	}
	if err := r.rep.MarkNew(ctx, all...); err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, r.rep.HealAll(ctx)) }()
	for _, i := range majority {
		if err := r.rep.Inject(ctx, i, nodes.Cut); err != nil {
			return nil, err
		}
	}
	var opts []redlock.Option
	if !guarded {
		opts = append(opts, redlock.WithRestartGuard(0))
	}
	return r.control(ctx, guarded, opts, func(ctx context.Context) error {
		behind := make([]int64, len(majority))
		for j, i := range majority {
			lag, err := r.rep.Behind(ctx, i)
			if err != nil {
				return err
			}
			behind[j] = lag
		}
		r.say("  replicas of members %v behind their masters by %v bytes of writes (the grants)", plusOne(majority), behind)
		begin := time.Now()
		if err := r.rep.FailOver(ctx, majority...); err != nil {
			return err
		}
		r.say("  masters of members %v killed, replicas promoted in %v", plusOne(majority), time.Since(begin).Round(time.Millisecond))
		return nil
	})
}

// plusOne numbers members (nodes) from 1, as the log lines do.
func plusOne(indexes []int) []int {
	out := slices.Clone(indexes)
	for i := range out {
		out[i]++
	}
	return out
}

package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/quorumlock/redlock"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// peer is a library in the uncontended benchmarks (BenchmarkLockUnlock,
// BenchmarkThroughput): one locker per lock name, every name its own lock.
type peer struct {
	name string
	// applies says whether the library can run over n independent nodes.
	applies func(n int) bool
	// setup makes lockers[i] for names[i], all sharing the library's
	// clients as one process would.
	setup func(set *nodes, names []string) (*rig, error)
}

func anyNodes(int) bool  { return true }
func oneNode(n int) bool { return n == 1 }

// peers lists the libraries of the uncontended benchmarks, with default
// options except where a comparison needs otherwise (see README.md).
//
// bsm/redislock is a single-node lock. rueidislock runs over one rueidis
// client, i.e. one Redis deployment: given several standalone addresses,
// rueidis.NewClient tries them as a Cluster and fails ("cluster support
// disabled"), so it runs here only on one node; its KeyMajority then is
// N/2+1 = 1 (one key). See README.md for what it does differently.
func peers() []peer {
	return []peer{
		{"redlock", anyNodes, setupRedlockNames},
		{"redsync", anyNodes, setupRedsyncNames},
		{"redislock", oneNode, setupRedislock},
		{"rueidislock", oneNode, setupRueidislock},
	}
}

// setupRedlockNames: one Client with default options, one Mutex per name.
func setupRedlockNames(set *nodes, names []string) (*rig, error) {
	r := &rig{share: len(names), calls: &callCounter{}}
	client, err := redlock.New(r.newClients(set))
	if err != nil {
		return nil, errors.Join(err, r.close())
	}
	r.closers = append(r.closers, client.Close)
	for _, name := range names {
		r.lockers = append(r.lockers, redlockLocker{client.Mutex(name)})
	}
	return r, nil
}

// setupRedsyncNames: one redsync over shared pools, one Mutex per name,
// with redsync's defaults (expiry 8 s, 32 tries) but for a generous number
// of tries, as in BenchmarkContended (unused here: no name is contended).
func setupRedsyncNames(set *nodes, names []string) (*rig, error) {
	r := &rig{share: len(names), calls: &callCounter{}}
	var pools []redsyncredis.Pool
	for _, c := range r.newClients(set) {
		pools = append(pools, goredis.NewPool(c))
	}
	rs := redsync.New(pools...)
	for _, name := range names {
		m := rs.NewMutex(name, redsync.WithExpiry(redsyncExpiry), redsync.WithTries(1_000_000))
		r.lockers = append(r.lockers, redsyncLocker{m})
	}
	return r, nil
}

// setupRedislock: bsm/redislock on the one node, one go-redis client.
func setupRedislock(set *nodes, names []string) (*rig, error) {
	if len(set.servers) != 1 {
		return nil, fmt.Errorf("redislock: a single-node lock, got %d nodes", len(set.servers))
	}
	r := &rig{share: len(names), calls: &callCounter{}}
	client := redislock.New(r.newClients(set)[0])
	for _, name := range names {
		r.lockers = append(r.lockers, redislockLocker{client: client, name: name})
	}
	return r, nil
}

type redislockLocker struct {
	client *redislock.Client
	name   string
}

func (l redislockLocker) lock(ctx context.Context) (func() error, error) {
	// Obtain makes one attempt by default (NoRetry): fine uncontended.
	lock, err := l.client.Obtain(ctx, l.name, redsyncExpiry, nil)
	if err != nil {
		return nil, err
	}
	return func() error { return lock.Release(context.Background()) }, nil
}

// setupRueidislock: one Locker (one rueidis client, client-side caching on)
// with KeyMajority = N/2+1 and its other defaults. It has no go-redis
// client, so its rig counts no calls; INFO counts its commands.
func setupRueidislock(set *nodes, names []string) (*rig, error) {
	locker, err := rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{InitAddress: set.addrs()},
		KeyMajority:  int32(len(set.servers)/2 + 1),
	})
	if err != nil {
		return nil, fmt.Errorf("rueidislock over %d nodes: %w", len(set.servers), err)
	}
	r := &rig{share: len(names), closers: []func() error{func() error { locker.Close(); return nil }}}
	for _, name := range names {
		r.lockers = append(r.lockers, rueidisLocker{locker: locker, name: name})
	}
	return r, nil
}

type rueidisLocker struct {
	locker rueidislock.Locker
	name   string
}

func (l rueidisLocker) lock(ctx context.Context) (func() error, error) {
	_, cancel, err := l.locker.WithContext(ctx, l.name)
	if err != nil {
		return nil, err
	}
	// cancel releases the keys and returns once every key was released.
	return func() error { cancel(); return nil }, nil
}

// lockNames makes n fresh lock names for one run.
func lockNames(kind string, n int) []string {
	base := lockName(kind)
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", base, i)
	}
	return out
}

// lockTimeout bounds one uncontended Lock call in the benchmarks: far above
// any latency seen, it only keeps a wedged run from hanging.
const lockTimeout = 10 * time.Second

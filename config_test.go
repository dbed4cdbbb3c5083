package redlock_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/redlocktest"
	"github.com/redis/go-redis/v9"
)

func TestConfig_newBadInput(t *testing.T) {
	live := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled: New does no I/O
	t.Cleanup(func() { _ = live.Close() })
	three := []redis.UniversalClient{live, live, live}
	var typedNil *redis.Client
	tests := []struct {
		name  string
		nodes []redis.UniversalClient
		opts  []redlock.Option
	}{
		{"no nodes", nil, nil},
		{"empty node list", []redis.UniversalClient{}, nil},
		{"nil client", []redis.UniversalClient{live, nil, live}, nil},
		{"typed nil client", []redis.UniversalClient{live, typedNil, live}, nil},
		{"nil logger", three, []redlock.Option{redlock.WithLogger(nil)}},
		// Out-of-range option values: see rejectedOptions.
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := redlock.New(tt.nodes, tt.opts...)
			if c != nil || !errors.Is(err, redlock.ErrConfig) {
				t.Fatalf("New: client %v, err %v; want ErrConfig", c, err)
			}
		})
	}
}

func TestConfig_dialBadURL(t *testing.T) {
	for _, urls := range [][]string{nil, {"http://127.0.0.1:6379"}, {"redis://127.0.0.1:6379", "redis://:secret@host:port:x/"}} {
		c, err := redlock.Dial(urls)
		if c != nil || !errors.Is(err, redlock.ErrConfig) {
			t.Fatalf("Dial(%q): client %v, err %v; want ErrConfig", urls, c, err)
		}
		if err != nil && len(urls) > 1 && strings.Contains(err.Error(), "secret") {
			t.Fatalf("Dial error leaks the password: %v", err)
		}
	}
}

func TestConfig_mutexBadInput(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	c := newClient(t, cluster)
	ctx := testContext(t)
	tests := []struct {
		name string
		ctx  context.Context
		m    *redlock.Mutex
	}{
		{"empty name", ctx, c.Mutex("")},
		{"zero TTL on the mutex", ctx, c.Mutex("x", redlock.WithTTL(0))},
		{"quorum above N on the mutex", ctx, c.Mutex("x", redlock.WithQuorum(5))},
		{"empty explicit owner", redlock.WithOwner(ctx, ""), c.Mutex("x")},
		{"nil context", nil, c.Mutex("x")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, call := range []func(context.Context) (*redlock.Lease, error){tt.m.Lock, tt.m.TryLock} {
				lease, err := call(tt.ctx)
				if lease != nil || !errors.Is(err, redlock.ErrConfig) {
					t.Fatalf("lease %v, err %v; want ErrConfig", lease, err)
				}
			}
		})
	}
	if keys := cluster.KeyCount(t); keys != 0 {
		t.Fatalf("bad input left %d keys", keys)
	}
}

// rejectedOptions lists, for a 3-node Client, every option value whose
// arithmetic the library cannot carry, or that leaves no sound lock.
var rejectedOptions = []struct {
	name string
	opts []redlock.Option
}{
	{"drift NaN", []redlock.Option{redlock.WithDriftFactor(math.NaN())}},
	{"drift +Inf", []redlock.Option{redlock.WithDriftFactor(math.Inf(1))}},
	{"drift -Inf", []redlock.Option{redlock.WithDriftFactor(math.Inf(-1))}},
	// With a TTL under the 2ms slack, a NaN drift allowance (MinInt64 once
	// converted, on amd64) wraps the validity window round to centuries.
	{"drift NaN, TTL 1ms", []redlock.Option{redlock.WithDriftFactor(math.NaN()), redlock.WithTTL(time.Millisecond)}},
	{"drift +Inf, TTL 1ms", []redlock.Option{redlock.WithDriftFactor(math.Inf(1)), redlock.WithTTL(time.Millisecond)}},
	{"drift negative", []redlock.Option{redlock.WithDriftFactor(-0.1)}},
	{"drift one half", []redlock.Option{redlock.WithDriftFactor(0.5)}},
	{"drift 0.9", []redlock.Option{redlock.WithDriftFactor(0.9)}},
	{"drift one", []redlock.Option{redlock.WithDriftFactor(1)}},
	{"TTL zero", []redlock.Option{redlock.WithTTL(0)}},
	{"TTL negative", []redlock.Option{redlock.WithTTL(-time.Second)}},
	{"TTL MinInt64", []redlock.Option{redlock.WithTTL(math.MinInt64)}},
	{"TTL inside the drift allowance", []redlock.Option{redlock.WithTTL(time.Millisecond)}},
	{"TTL just above MaxTTL", []redlock.Option{redlock.WithTTL(redlock.MaxTTL + 1)}},
	{"TTL MaxInt64", []redlock.Option{redlock.WithTTL(math.MaxInt64)}},
	{"node timeout zero", []redlock.Option{redlock.WithNodeTimeout(0)}},
	{"node timeout negative", []redlock.Option{redlock.WithNodeTimeout(-time.Second)}},
	{"node timeout just above MaxTimeout", []redlock.Option{redlock.WithNodeTimeout(redlock.MaxTimeout + 1)}},
	{"node timeout MaxInt64", []redlock.Option{redlock.WithNodeTimeout(math.MaxInt64)}},
	{"queue timeout zero", []redlock.Option{redlock.WithFair(), redlock.WithQueueTimeout(0)}},
	{"queue timeout negative", []redlock.Option{redlock.WithFair(), redlock.WithQueueTimeout(-time.Second)}},
	{"queue timeout just above MaxTimeout", []redlock.Option{redlock.WithFair(), redlock.WithQueueTimeout(redlock.MaxTimeout + 1)}},
	{"queue timeout MaxInt64", []redlock.Option{redlock.WithFair(), redlock.WithQueueTimeout(math.MaxInt64)}},
	// A Mutex may turn WithFair on over a Client's default queue timeout.
	{"queue timeout MaxInt64 without WithFair", []redlock.Option{redlock.WithQueueTimeout(math.MaxInt64)}},
	{"quorum zero", []redlock.Option{redlock.WithQuorum(0)}},
	{"quorum negative", []redlock.Option{redlock.WithQuorum(-1)}},
	{"quorum above N", []redlock.Option{redlock.WithQuorum(4)}},
	{"quorum not a majority", []redlock.Option{redlock.WithQuorum(1)}},
}

// acceptedEdges are values at the edge of the allowed ranges: they must
// still give a working lock.
var acceptedEdges = []struct {
	name string
	opts []redlock.Option
}{
	{"drift zero", []redlock.Option{redlock.WithDriftFactor(0)}},
	{"drift just below one half", []redlock.Option{redlock.WithDriftFactor(math.Nextafter(0.5, 0))}},
	{"TTL MaxTTL", []redlock.Option{redlock.WithTTL(redlock.MaxTTL)}},
	{"node timeout MaxTimeout", []redlock.Option{redlock.WithNodeTimeout(redlock.MaxTimeout)}},
	{"queue timeout MaxTimeout", []redlock.Option{redlock.WithFair(), redlock.WithQueueTimeout(redlock.MaxTimeout)}},
	{"quorum N", []redlock.Option{redlock.WithQuorum(3)}},
}

func TestConfig_rejectedAtNew(t *testing.T) {
	live := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled: New does no I/O
	t.Cleanup(func() { _ = live.Close() })
	three := []redis.UniversalClient{live, live, live}
	for _, tt := range rejectedOptions {
		t.Run(tt.name, func(t *testing.T) {
			c, err := redlock.New(three, tt.opts...)
			if c != nil {
				_ = c.Close()
			}
			if c != nil || !errors.Is(err, redlock.ErrConfig) {
				t.Fatalf("New: client %v, err %v; want ErrConfig", c, err)
			}
		})
	}
}

func TestConfig_rejectedAtMutex(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	c := newClient(t, cluster)
	ctx := testContext(t)
	for _, tt := range rejectedOptions {
		t.Run(tt.name, func(t *testing.T) {
			lease, err := c.Mutex("rejected", tt.opts...).TryLock(ctx)
			if lease != nil {
				keys := cluster.KeyCount(t)
				_ = lease.Unlock(ctx)
				t.Fatalf("TryLock granted a lease (Until %v, %d keys on the nodes), err %v; want ErrConfig",
					lease.Until(), keys, err)
			}
			if !errors.Is(err, redlock.ErrConfig) {
				t.Fatalf("TryLock: %v; want ErrConfig", err)
			}
		})
	}
	if keys := cluster.KeyCount(t); keys != 0 {
		t.Fatalf("rejected options left %d keys", keys)
	}
}

func TestConfig_acceptedEdges(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	for _, tt := range acceptedEdges {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, cluster, tt.opts...) // fails the test on an error
			for _, m := range []*redlock.Mutex{c.Mutex("edge"), newClient(t, cluster).Mutex("edge", tt.opts...)} {
				lease, err := m.TryLock(ctx)
				if err != nil {
					t.Fatalf("TryLock: %v", err)
				}
				if !lease.Until().After(time.Now()) {
					t.Fatalf("lease valid until %v, already past", lease.Until())
				}
				mustUnlock(t, lease)
			}
		})
	}
}

// A lease with WithTTL(MaxTTL) is a key on every node, expiring about
// MaxTTL from now.
func TestConfig_ttlAtMaxTTL(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	c := newClient(t, cluster, redlock.WithTTL(redlock.MaxTTL))
	lease := mustLock(t, ctx, c.Mutex("long"))
	if left := time.Until(lease.Until()); left < redlock.MaxTTL/2 || left > redlock.MaxTTL {
		t.Fatalf("Until is %v away, want about %v", left, redlock.MaxTTL)
	}
	key := redlock.DefaultKeyPrefix + "{long}"
	for i := range cluster.Servers {
		// Lock returns once a quorum granted: the last node's grant may
		// still be on its way.
		admin, pttl := cluster.Admin(t, i), time.Duration(0)
		waitFor(t, 5*time.Second, fmt.Sprintf("node %d's key", i), func() bool {
			var err error
			pttl, err = admin.PTTL(ctx, key).Result()
			return err == nil && pttl > 0
		})
		if pttl < redlock.MaxTTL-time.Minute || pttl > redlock.MaxTTL {
			t.Fatalf("node %d: PTTL %v, want about %v", i, pttl, redlock.MaxTTL)
		}
	}
	mustUnlock(t, lease)
	// Unlock returns once a quorum released: the last release may still
	// be on its way.
	waitFor(t, 5*time.Second, "no key left after Unlock", func() bool { return cluster.KeyCount(t) == 0 })
}

// A fair waiter with the longest queue timeout queues up on the nodes
// (its queue keys live about twice the timeout) and gets the lock.
func TestConfig_queueTimeoutAtMaxTimeout(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := testContext(t)
	opts := []redlock.Option{redlock.WithFair(), redlock.WithQueueTimeout(redlock.MaxTimeout)}
	holder := mustLock(t, ctx, newClient(t, cluster, opts...).Mutex("q"))
	waited := lockInBackground(t, ctx, newClient(t, cluster, opts...).Mutex("q"))
	key := redlock.DefaultKeyPrefix + "{q}:queue"
	for i := range cluster.Servers {
		admin := cluster.Admin(t, i)
		waitFor(t, 5*time.Second, "the waiter queued", func() bool {
			pttl, err := admin.PTTL(ctx, key).Result()
			return err == nil && pttl > 2*redlock.MaxTimeout-time.Minute && pttl <= 2*redlock.MaxTimeout
		})
	}
	mustUnlock(t, holder)
	if _, ok := waited(); !ok {
		t.Fatal("the waiter did not get the lock")
	}
}

// A nil *Lease (a Lock's result used despite its error) is a clear error,
// not a panic.
func TestConfig_nilLeaseIsAConfigError(t *testing.T) {
	var l *redlock.Lease
	if err := l.Unlock(context.Background()); !errors.Is(err, redlock.ErrConfig) {
		t.Errorf("Unlock of a nil Lease: %v, want ErrConfig", err)
	}
	if err := l.Extend(context.Background()); !errors.Is(err, redlock.ErrConfig) {
		t.Errorf("Extend of a nil Lease: %v, want ErrConfig", err)
	}
}

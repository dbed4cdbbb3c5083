package redlock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/quorumlock/redlock"
	"github.com/quorumlock/redlock/internal/redistest"
	"github.com/redis/go-redis/v9"
)

func TestNew_badInput(t *testing.T) {
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
		{"quorum above N", three, []redlock.Option{redlock.WithQuorum(4)}},
		{"quorum zero", three, []redlock.Option{redlock.WithQuorum(0)}},
		{"quorum negative", three, []redlock.Option{redlock.WithQuorum(-1)}},
		{"quorum not a majority", three, []redlock.Option{redlock.WithQuorum(1)}},
		{"negative drift", three, []redlock.Option{redlock.WithDriftFactor(-0.1)}},
		{"drift of one", three, []redlock.Option{redlock.WithDriftFactor(1)}},
		{"zero TTL", three, []redlock.Option{redlock.WithTTL(0)}},
		{"negative TTL", three, []redlock.Option{redlock.WithTTL(-time.Second)}},
		{"TTL inside the drift allowance", three, []redlock.Option{redlock.WithTTL(time.Millisecond)}},
		{"zero node timeout", three, []redlock.Option{redlock.WithNodeTimeout(0)}},
		{"nil logger", three, []redlock.Option{redlock.WithLogger(nil)}},
		{"fair without queue timeout", three, []redlock.Option{redlock.WithFair(), redlock.WithQueueTimeout(0)}},
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

func TestDial_badURL(t *testing.T) {
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

func TestMutex_badInput(t *testing.T) {
	cluster := redistest.Start(t, 3)
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

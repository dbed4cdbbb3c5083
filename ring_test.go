package redlock_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/quorumlock/redlock"
	"github.com/redis/go-redis/v9"
)

// A go-redis Ring moves a key to another shard when its heartbeat finds
// the key's shard down: a lock's keys would move without their leases and
// be granted again there (issue 40, row 6). New refuses a Ring member,
// naming the cause and the remedy.
func TestConfig_ringMemberIsRefused(t *testing.T) {
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1", "b": "127.0.0.1:2"}})
	t.Cleanup(func() { _ = ring.Close() })
	plain := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = plain.Close() })
	c, err := redlock.New([]redis.UniversalClient{plain, ring, plain})
	if c != nil {
		_ = c.Close()
	}
	if c != nil || !errors.Is(err, redlock.ErrConfig) {
		t.Fatalf("New with a Ring member: client %v, err %v; want ErrConfig", c, err)
	}
	for _, says := range []string{"node 1", "Ring", "shard", "plain client", "Redis Cluster"} {
		if !strings.Contains(err.Error(), says) {
			t.Errorf("New's error %q does not say %q", err, says)
		}
	}
}

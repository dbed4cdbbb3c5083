package redlocktest_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/quorumlock/redlock/redlocktest"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func context2s(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestSetGetOnEveryNode(t *testing.T) {
	cluster := redlocktest.Start(t, 3)
	ctx := context2s(t)
	if len(cluster.Addrs()) != 3 || len(cluster.URLs()) != 3 {
		t.Fatalf("want 3 addrs and urls, got %v %v", cluster.Addrs(), cluster.URLs())
	}
	ports := map[int]bool{}
	for _, node := range cluster.Servers {
		ports[node.Port()] = true
	}
	if len(ports) != 3 {
		t.Fatalf("nodes share ports: %v", cluster.Addrs())
	}
	for i, client := range cluster.Clients(t) {
		value := "value-" + strconv.Itoa(i)
		if err := client.Set(ctx, "key", value, 0).Err(); err != nil {
			t.Fatalf("SET on node %d: %v", i, err)
		}
		got, err := cluster.Admin(t, i).Get(ctx, "key").Result()
		if err != nil || got != value {
			t.Fatalf("GET on node %d: %q %v", i, got, err)
		}
	}
	if count := cluster.KeyCount(t); count != 3 {
		t.Fatalf("KeyCount = %d, want 3", count)
	}
}

func TestPauseResume(t *testing.T) {
	cluster := redlocktest.Start(t, 1)
	node := cluster.Servers[0]
	client := redis.NewClient(&redis.Options{
		Addr:        node.Addr(),
		ReadTimeout: 200 * time.Millisecond,
		MaxRetries:  -1,
	})
	t.Cleanup(func() { _ = client.Close() })
	ctx := context2s(t)
	if err := client.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING: %v", err)
	}

	if err := node.Pause(); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	started := time.Now()
	err := client.Ping(ctx).Err()
	var netErr net.Error
	if !errors.As(err, &netErr) || !netErr.Timeout() {
		t.Fatalf("PING on paused node: want a timeout, got %v", err)
	}
	if elapsed := time.Since(started); elapsed > time.Second {
		t.Fatalf("timeout took %v, want about 200ms", elapsed)
	}
	if count := cluster.KeyCount(t); count != 0 {
		t.Fatalf("KeyCount with the only node paused = %d, want 0", count)
	}

	if err := node.Resume(); err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if err := client.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after Resume: %v", err)
	}
}

func TestKillRefusesConnections(t *testing.T) {
	cluster := redlocktest.Start(t, 2)
	ctx := context2s(t)
	clients := cluster.Clients(t)
	if err := clients[0].Set(ctx, "key", "value", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if err := cluster.Servers[0].Kill(); err != nil {
		t.Fatalf("Kill: %v", err)
	}
	if err := cluster.Servers[0].Kill(); err != nil {
		t.Fatalf("second Kill: %v", err)
	}
	// The pooled connection sees EOF/reset; a fresh one must be refused.
	fresh := redis.NewClient(&redis.Options{Addr: cluster.Servers[0].Addr(), MaxRetries: -1, DialerRetries: 1})
	defer fresh.Close()
	if err := fresh.Ping(ctx).Err(); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("PING on killed node: want connection refused, got %v", err)
	}
	if err := clients[1].Ping(ctx).Err(); err != nil {
		t.Fatalf("other node affected: %v", err)
	}
	if count := cluster.KeyCount(t); count != 0 {
		t.Fatalf("KeyCount = %d, want 0 (killed node skipped)", count)
	}
}

func TestRestart(t *testing.T) {
	cluster := redlocktest.Start(t, 1)
	node := cluster.Servers[0]
	port := node.Port()
	ctx := context2s(t)
	admin := cluster.Admin(t, 0)
	if err := admin.Set(ctx, "key", "value", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	if err := admin.Save(ctx).Err(); err != nil {
		t.Fatalf("SAVE: %v", err)
	}
	if err := admin.Set(ctx, "unsaved", "value", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}

	if err := node.Restart(true); err != nil {
		t.Fatalf("Restart(true): %v", err)
	}
	if node.Port() != port {
		t.Fatalf("port changed: %d -> %d", port, node.Port())
	}
	if got, err := admin.Get(ctx, "key").Result(); err != nil || got != "value" {
		t.Fatalf("saved key after Restart(true): %q %v", got, err)
	}
	if n, err := admin.Exists(ctx, "unsaved").Result(); err != nil || n != 0 {
		t.Fatalf("unsaved key after SIGKILL restart: exists=%d %v", n, err)
	}

	if err := node.Restart(false); err != nil {
		t.Fatalf("Restart(false): %v", err)
	}
	if node.Port() != port {
		t.Fatalf("port changed: %d -> %d", port, node.Port())
	}
	if n, err := admin.Exists(ctx, "key").Result(); err != nil || n != 0 {
		t.Fatalf("key after Restart(false): exists=%d %v", n, err)
	}
	if count := cluster.KeyCount(t); count != 0 {
		t.Fatalf("KeyCount = %d, want 0", count)
	}
}

func TestRequireRedisSkipsWithoutBinary(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(redlocktest.RequireRedisEnv, "")
	var skipped bool
	t.Run("missing", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		redlocktest.RequireRedis(t)
	})
	if !skipped {
		t.Fatal("RequireRedis did not skip without redis-server in PATH")
	}
}

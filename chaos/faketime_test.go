package chaos

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/quorumlock/redlock/redlocktest"
)

func requireFaketime(t *testing.T) string { return redlocktest.RequireFaketime(t) }

func fastClock(libfaketime string, speed int) []string {
	return redlocktest.FastClock(libfaketime, speed)
}

// checkFastClock verifies that node i's clock runs about speed times as
// fast: a key's PTTL must drain that fast.
func (c *cluster) checkFastClock(i, speed int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	admin := c.admin(i)
	const ttl, wait = time.Hour, 200 * time.Millisecond
	if err := admin.Set(ctx, "chaos:clock-probe", "1", ttl).Err(); err != nil {
		c.t.Fatalf("clock probe on node %d: %v", i, err)
	}
	start := time.Now()
	first, err := admin.PTTL(ctx, "chaos:clock-probe").Result()
	if err != nil {
		c.t.Fatal(err)
	}
	time.Sleep(wait)
	second, err := admin.PTTL(ctx, "chaos:clock-probe").Result()
	elapsed := time.Since(start)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := admin.Del(ctx, "chaos:clock-probe").Err(); err != nil {
		c.t.Fatal(err)
	}
	rate := float64(first-second) / float64(elapsed)
	if rate < float64(speed)*0.6 || rate > float64(speed)*1.4 {
		c.t.Fatalf("node %d: PTTL drained %v in %v real time (%.1fx), want about %dx: libfaketime is not in effect",
			i, first-second, elapsed, rate, speed)
	}
	c.t.Logf("node %d: clock runs %.1fx (PTTL drained %v in %v)", i, rate, (first - second).Round(time.Millisecond), elapsed.Round(time.Millisecond))
}

// clockBehind is the environment of a redis-server whose wall clock is
// behind the real one by d (see fastClock for why glibc is preloaded).
func clockBehind(libfaketime string, d time.Duration) []string {
	return []string{
		"LD_PRELOAD=" + libfaketime + " libc.so.6",
		fmt.Sprintf("FAKETIME=-%d", int(d.Seconds())),
		"FAKETIME_DONT_FAKE_MONOTONIC=1",
	}
}

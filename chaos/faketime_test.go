package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/quorumlock/redlock/internal/redistest"
)

// libfaketimeEnv names a libfaketime.so.1 to use instead of the usual places.
const libfaketimeEnv = "REDLOCK_LIBFAKETIME"

// requireFaketime returns the path of libfaketime.so.1, or skips the test
// with an install hint (fails it when REDLOCK_REQUIRE_REDIS=1).
func requireFaketime(t *testing.T) string {
	t.Helper()
	candidates := []string{os.Getenv(libfaketimeEnv)}
	for _, pattern := range []string{
		"/usr/lib/*-linux-gnu/faketime/libfaketime.so.1", // Debian, Ubuntu
		"/usr/lib64/faketime/libfaketime.so.1",
		"/usr/lib/faketime/libfaketime.so.1",
		"/usr/local/lib/faketime/libfaketime.so.1",
	} {
		matches, _ := filepath.Glob(pattern)
		candidates = append(candidates, matches...)
	}
	for _, path := range candidates {
		if path == "" {
			continue
		}
		if info, err := os.Stat(path); err == nil && info.Mode().IsRegular() {
			return path
		}
	}
	message := fmt.Sprintf("libfaketime.so.1 not found: install it with `apt-get install -y faketime` (or set %s)", libfaketimeEnv)
	if os.Getenv(redistest.RequireRedisEnv) == "1" {
		t.Fatalf("%s (%s=1)", message, redistest.RequireRedisEnv)
	}
	t.Skipf("%s (set %s=1 to fail instead of skip)", message, redistest.RequireRedisEnv)
	return ""
}

// fastClock is the environment of a redis-server whose wall clock runs
// speed times as fast as the real one, from the moment it starts.
//
// Three things are needed, found by trying:
//   - Debian's redis-server is linked against the system jemalloc, and
//     libfaketime 0.9.10 cannot initialise under jemalloc: its constructor's
//     dlsym calls calloc, jemalloc's first allocation calls clock_gettime,
//     libfaketime is not ready, reports "Unexpected recursive calls to
//     clock_gettime()" and the server hangs or dies (libfaketime issues #130,
//     #327, #478). Preloading glibc right after libfaketime makes malloc
//     and friends resolve to glibc's, before jemalloc's, and libfaketime's
//     own dlsym(RTLD_NEXT) still finds glibc's clocks behind it. (glibc
//     first instead breaks libfaketime: RTLD_NEXT then finds nothing.)
//     Redis works on glibc's allocator; only INFO's jemalloc statistics
//     become meaningless.
//   - FAKETIME="+0 xN": start at the real time, then run N times as fast.
//     Redis 7.0 expires keys against gettimeofday (mstime), which
//     libfaketime speeds up: a key's PTTL drains N times as fast
//     (checkFastClock verifies it on every fast node).
//   - FAKETIME_DONT_FAKE_MONOTONIC=1 leaves CLOCK_MONOTONIC alone, so the
//     event loop's timers (serverCron, client timeouts) keep real time;
//     expiry does not use it. Not needed for the clock to run fast, it
//     keeps the fault to the one clock it is about.
//
// FAKETIME_NO_CACHE is not needed: it only makes libfaketime re-read a
// FAKETIME spec that changes at run time, and ours is fixed.
func fastClock(libfaketime string, speed int) []string {
	return []string{
		"LD_PRELOAD=" + libfaketime + " libc.so.6",
		fmt.Sprintf("FAKETIME=+0 x%d", speed),
		"FAKETIME_DONT_FAKE_MONOTONIC=1",
	}
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

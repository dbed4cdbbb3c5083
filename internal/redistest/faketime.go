package redistest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// libfaketimeEnv names a libfaketime.so.1 to use instead of the usual places.
const libfaketimeEnv = "REDLOCK_LIBFAKETIME"

// RequireFaketime returns the path of libfaketime.so.1, or skips the test
// with an install hint (fails it when REDLOCK_REQUIRE_REDIS=1).
func RequireFaketime(t testing.TB) string {
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
	if os.Getenv(RequireRedisEnv) == "1" {
		t.Fatalf("%s (%s=1)", message, RequireRedisEnv)
	}
	t.Skipf("%s (set %s=1 to fail instead of skip)", message, RequireRedisEnv)
	return ""
}

// FastClock is the environment of a redis-server whose wall clock runs
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
//     (the chaos suite's checkFastClock verifies it).
//   - FAKETIME_DONT_FAKE_MONOTONIC=1 leaves CLOCK_MONOTONIC alone, so the
//     event loop's timers (serverCron, client timeouts) keep real time;
//     expiry does not use it. Not needed for the clock to run fast, it
//     keeps the fault to the one clock it is about.
//
// FAKETIME_NO_CACHE is not needed: it only makes libfaketime re-read a
// FAKETIME spec that changes at run time, and ours is fixed.
func FastClock(libfaketime string, speed int) []string {
	return []string{
		"LD_PRELOAD=" + libfaketime + " libc.so.6",
		fmt.Sprintf("FAKETIME=+0 x%d", speed),
		"FAKETIME_DONT_FAKE_MONOTONIC=1",
	}
}

package redlocktest

import (
	"cmp"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/quorumlock/redlock/redlocktest/redisproc"
)

// libfaketimeEnv names a libfaketime.so.1 to use instead of the usual places.
const libfaketimeEnv = "REDLOCK_LIBFAKETIME"

// RequireFaketime returns what LD_PRELOAD must name before "libc.so.6" for
// a server with a faked clock (see FastClock): the path of
// libfaketime.so.1 and, for a server that frees with jemalloc's sdallocx
// (Valkey 8), a shim built here that hands sdallocx to glibc's free. It
// skips the test with an install hint when either cannot be had (fails it
// when REDLOCK_REQUIRE_REDIS=1).
func RequireFaketime(t testing.TB) string {
	t.Helper()
	preload, err := findFaketime()
	if err == nil {
		var shim string
		if shim, err = sizedFreeShim(t); shim != "" {
			preload += " " + shim
		}
	}
	if err == nil {
		return preload
	}
	if os.Getenv(RequireRedisEnv) == "1" {
		t.Fatalf("%v (%s=1)", err, RequireRedisEnv)
	}
	t.Skipf("%v (set %s=1 to fail instead of skip)", err, RequireRedisEnv)
	return ""
}

// findFaketime returns the path of libfaketime.so.1.
func findFaketime() (string, error) {
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
			return path, nil
		}
	}
	return "", fmt.Errorf("libfaketime.so.1 not found: install it with `apt-get install -y faketime` (or set %s)", libfaketimeEnv)
}

// shimSource is sdallocx, jemalloc's sized free, as glibc's free: with
// glibc's malloc preloaded (see FastClock) every block is glibc's, and
// jemalloc's sdallocx on one of them crashes the server at startup.
const shimSource = `#include <stdlib.h>
void sdallocx(void *ptr, size_t size, int flags) { (void)size; (void)flags; free(ptr); }
`

// sizedFreeShim builds the sdallocx shim in a t.TempDir() if the server
// binary (redisproc.LookPath) imports sdallocx, and returns its path; ""
// if the server does not need it (Redis 7.0 frees with plain free).
func sizedFreeShim(t testing.TB) (string, error) {
	binary, err := redisproc.LookPath("")
	if err != nil {
		return "", err
	}
	file, err := elf.Open(binary)
	if err != nil {
		return "", fmt.Errorf("redlocktest: read %s: %w", binary, err)
	}
	symbols, err := file.ImportedSymbols()
	file.Close()
	// A binary without dynamic symbols imports no sdallocx (nor would
	// LD_PRELOAD reach it).
	if err != nil || !slices.ContainsFunc(symbols, func(s elf.ImportedSymbol) bool { return s.Name == "sdallocx" }) {
		return "", nil
	}
	compiler, dir := cmp.Or(os.Getenv("CC"), "gcc"), t.TempDir()
	source, shim := filepath.Join(dir, "sdallocx.c"), filepath.Join(dir, "sdallocx.so")
	if err := os.WriteFile(source, []byte(shimSource), 0o644); err != nil {
		return "", err
	}
	out, err := exec.Command(compiler, "-shared", "-fPIC", "-O2", "-o", shim, source).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("redlocktest: %s frees with sdallocx; building its shim for libfaketime needs a C compiler "+
			"(`apt-get install -y gcc`, or set CC): %s: %w %s", filepath.Base(binary), compiler, err, strings.TrimSpace(string(out)))
	}
	return shim, nil
}

// FastClock is the environment of a redis-server whose wall clock runs
// speed times as fast as the real one, from the moment it starts;
// libfaketime is what RequireFaketime returned.
//
// Three things are needed, found by trying:
//   - Debian's redis-server and valkey-server are linked against the
//     system jemalloc, and libfaketime 0.9.10 cannot initialise under
//     jemalloc: an earlier library's constructor (libgpg-error's) calls
//     malloc, jemalloc's set-up calls clock_gettime, libfaketime initialises
//     there, one of its dlsym lookups fails and allocates its error, which
//     re-enters jemalloc and clock_gettime: libfaketime reports "Unexpected
//     recursive calls to clock_gettime()" and the server hangs or dies
//     (libfaketime issues #130, #327, #478). Preloading glibc right after
//     libfaketime makes malloc and friends resolve to glibc's, before
//     jemalloc's, and libfaketime's own dlsym(RTLD_NEXT) still finds glibc's
//     clocks behind it. (glibc first instead breaks libfaketime: RTLD_NEXT
//     then finds nothing.) The server works on glibc's allocator; only
//     INFO's jemalloc statistics become meaningless. Valkey 8 also frees
//     with jemalloc's sdallocx, which glibc lacks: RequireFaketime's shim
//     sends those frees to glibc too.
//   - FAKETIME="+0 xN": start at the real time, then run N times as fast.
//     Redis 7.0 and Valkey 8.0 expire keys against the wall clock
//     (mstime), which libfaketime speeds up: a key's PTTL drains N times as fast
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

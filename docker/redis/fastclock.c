/*
 * fastclock.so: an LD_PRELOAD shim that makes a process's wall clock run
 * FASTCLOCK_RATE times as fast as the real one, starting from the real time
 * when the process starts.
 *
 * Why not libfaketime: Debian's redis-server is linked against jemalloc,
 * whose initialization calls clock_gettime while libfaketime's own
 * initialization calls malloc (through dlsym); under libfaketime the server
 * hangs before it logs a line (wolfcw/libfaketime#130: known, no fix). This
 * shim needs neither dlsym nor malloc: it reads the clock with the raw
 * system call.
 *
 * Only CLOCK_REALTIME (gettimeofday, time, clock_gettime) is sped up: Redis
 * computes key expiry from it, so a fast node expires a key early, which is
 * the "clock running fast" the Redlock drift factor allows for. The
 * monotonic clocks, which drive the event loop, are left alone.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long long base_ns; /* real time at load; 0 until init ran */
static double rate = 1.0;

static long long real_ns(clockid_t id)
{
	struct timespec ts;
	syscall(SYS_clock_gettime, id, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((constructor)) static void init(void)
{
	const char *s = getenv("FASTCLOCK_RATE");
	if (s != NULL && strtod(s, NULL) > 0)
		rate = strtod(s, NULL);
	base_ns = real_ns(CLOCK_REALTIME);
}

static long long fast_ns(clockid_t id)
{
	long long now = real_ns(id);
	if (base_ns == 0 || rate == 1.0)
		return now;
	return base_ns + (long long)((double)(now - base_ns) * rate);
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
	long long ns;
	if (id != CLOCK_REALTIME && id != CLOCK_REALTIME_COARSE)
		return syscall(SYS_clock_gettime, id, ts);
	ns = fast_ns(id);
	ts->tv_sec = ns / 1000000000LL;
	ts->tv_nsec = ns % 1000000000LL;
	return 0;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
	long long ns = fast_ns(CLOCK_REALTIME);
	(void)tz;
	tv->tv_sec = ns / 1000000000LL; /* glibc declares tv nonnull */
	tv->tv_usec = (ns % 1000000000LL) / 1000;
	return 0;
}

time_t time(time_t *t)
{
	time_t now = (time_t)(fast_ns(CLOCK_REALTIME) / 1000000000LL);
	if (t != NULL)
		*t = now;
	return now;
}

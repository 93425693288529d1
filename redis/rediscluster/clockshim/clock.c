/*
 * lockbench's clock for a redis-server (package rediscluster, clock.go):
 * preloaded (LD_PRELOAD), it answers the wall-clock calls -- gettimeofday,
 * time, clock_gettime of CLOCK_REALTIME(_COARSE) -- with the kernel's time
 * plus the offset, in milliseconds, written in the file that
 * LOCKBENCH_CLOCK_FILE names, read again at every call. Every other clock
 * (the monotonic ones Redis times its event loop with) is the kernel's.
 * The machine's clock is never touched.
 *
 * It makes raw system calls and no library call that could allocate:
 * Debian's redis-server allocates with jemalloc, which reads the clock
 * while it starts, before a preloaded library that looks up the C
 * library's functions (dlsym) can, which is why libfaketime cannot run it
 * (it stops with "Cannot recover from unexpected recursive calls to
 * clock_gettime()").
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* offset_ns reads the file's signed decimal milliseconds; 0 when there is
 * no file or it cannot be read. */
static long long offset_ns(void) {
	static const char *path;
	static int looked;
	char buf[32];
	if (!looked) {
		path = getenv("LOCKBENCH_CLOCK_FILE");
		looked = 1;
	}
	if (!path)
		return 0;
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	long n = syscall(SYS_read, fd, buf, sizeof buf - 1);
	syscall(SYS_close, fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	long long v = 0;
	int neg = 0;
	char *p = buf;
	if (*p == '-') {
		neg = 1;
		p++;
	} else if (*p == '+') {
		p++;
	}
	for (; *p >= '0' && *p <= '9'; p++)
		v = v * 10 + (*p - '0');
	return (neg ? -v : v) * 1000000LL;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
	long r = syscall(SYS_clock_gettime, id, ts);
	if (r != 0 || (id != CLOCK_REALTIME && id != CLOCK_REALTIME_COARSE))
		return (int)r;
	long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + offset_ns();
	ts->tv_sec = ns / 1000000000LL;
	ts->tv_nsec = ns % 1000000000LL;
	return 0;
}

int gettimeofday(struct timeval *tv, void *tz) {
	struct timespec ts;
	(void)tz;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return -1;
	if (tv) {
		tv->tv_sec = ts.tv_sec;
		tv->tv_usec = ts.tv_nsec / 1000;
	}
	return 0;
}

time_t time(time_t *t) {
	struct timespec ts;
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
		return (time_t)-1;
	if (t)
		*t = ts.tv_sec;
	return ts.tv_sec;
}

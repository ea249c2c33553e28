/* The chaos bench's clock fault: CLOCK_REALTIME (and what derives from it) plus an offset
 * that the chaos thread steps while the cluster runs; monotonic clocks untouched, as an NTP
 * step leaves them. Preloaded (LD_PRELOAD) into `inplace up` and so every component.
 *
 * Why not libfaketime: it wraps pthread_cond_init/destroy/timedwait around a process-wide
 * rwlock; a thread waiting on a condition holds it, a fork copies it held, and a child that
 * runs code before exec (Python's PyOS_AfterFork_Child, which uvloop's subprocess spawn and
 * `preexec_fn` both call) re-creates the GIL's condition and blocks on it for ever.
 *
 * This library takes no lock and allocates nothing after start: the offset is an int64 of
 * nanoseconds at the start of a file, mapped shared and read with two loads. The mapping is
 * made in the constructor (before any thread exists) and is inherited by a fork. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int (*real_clock_gettime)(clockid_t, struct timespec *);
static volatile const int64_t *offset_ns;

__attribute__((constructor)) static void clockstep_init(void)
{
    real_clock_gettime = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    const char *path = getenv("INPLACE_CHAOS_CLOCK_OFFSET");
    if (path == NULL)
        return;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    void *map = mmap(NULL, sizeof(int64_t), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (map != MAP_FAILED)
        offset_ns = map;
}

static int64_t current_offset(void)
{
    if (offset_ns == NULL)
        return 0;
    int64_t seen = *offset_ns, again;
    while ((again = *offset_ns) != seen) /* a write in progress: read until it settles */
        seen = again;
    return seen;
}

static int realtime_based(clockid_t clock)
{
    return clock == CLOCK_REALTIME || clock == CLOCK_REALTIME_COARSE ||
           clock == CLOCK_REALTIME_ALARM || clock == CLOCK_TAI;
}

int clock_gettime(clockid_t clock, struct timespec *ts)
{
    int result = real_clock_gettime ? real_clock_gettime(clock, ts)
                                     : (int)syscall(SYS_clock_gettime, clock, ts);
    if (result == 0 && realtime_based(clock)) {
        int64_t offset = current_offset();
        ts->tv_sec += offset / 1000000000;
        ts->tv_nsec += offset % 1000000000;
        if (ts->tv_nsec >= 1000000000) {
            ts->tv_nsec -= 1000000000;
            ts->tv_sec += 1;
        } else if (ts->tv_nsec < 0) {
            ts->tv_nsec += 1000000000;
            ts->tv_sec -= 1;
        }
    }
    return result;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
    (void)tz;
    struct timespec ts;
    int result = clock_gettime(CLOCK_REALTIME, &ts);
    if (result == 0) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    return result;
}

time_t time(time_t *out)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return (time_t)-1;
    if (out != NULL)
        *out = ts.tv_sec;
    return ts.tv_sec;
}

int timespec_get(struct timespec *ts, int base)
{
    return base == TIME_UTC && clock_gettime(CLOCK_REALTIME, ts) == 0 ? base : 0;
}

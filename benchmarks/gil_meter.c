/* GIL meter for benchmarks/io.py --serial-fraction: CPU time spent with the GIL released.
 *
 * Loaded with LD_PRELOAD in front of libpython, it wraps PyEval_SaveThread and
 * PyEval_RestoreThread, the pair every extension module (NumPy's loops, Pillow's decoders)
 * calls around work done without the GIL, and adds up the calling thread's CPU time
 * (CLOCK_THREAD_CPUTIME_ID) between the two. The process's CPU time minus that sum is the CPU
 * time spent holding the GIL: the serial part of a multi-threaded pipeline. CPU clocks, not
 * wall clocks, so the figure holds on a machine that other processes keep busy (a sampling
 * profiler counts a preempted GIL holder as holding it).
 *
 * It also keeps each thread's own sums, for the per-step breakdown of io.py --phases (a step's
 * GIL-held time is the thread's CPU time over the step minus what the thread released in it).
 *
 * Build: cc -O2 -shared -fPIC -o gil_meter.so gil_meter.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <time.h>

typedef void *(*save_thread_fn)(void);
typedef void (*restore_thread_fn)(void *);

static _Atomic long long released_ns;
static _Atomic long long releases;
static __thread long long released_at;
static __thread long long thread_released_ns;
static __thread long long thread_releases;

static long long thread_cpu_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return now.tv_sec * 1000000000LL + now.tv_nsec;
}

void *PyEval_SaveThread(void) {
    static save_thread_fn real;
    if (!real) real = (save_thread_fn)dlsym(RTLD_NEXT, "PyEval_SaveThread");
    void *state = real();
    released_at = thread_cpu_ns();
    return state;
}

void PyEval_RestoreThread(void *state) {
    static restore_thread_fn real;
    if (!real) real = (restore_thread_fn)dlsym(RTLD_NEXT, "PyEval_RestoreThread");
    long long released = thread_cpu_ns() - released_at;
    atomic_fetch_add(&released_ns, released);
    atomic_fetch_add(&releases, 1);
    thread_released_ns += released;
    thread_releases += 1;
    real(state); /* waiting for the GIL sleeps: no CPU time to count */
}

long long gil_meter_released_ns(void) { return released_ns; }
long long gil_meter_releases(void) { return releases; }
long long gil_meter_thread_released_ns(void) { return thread_released_ns; }
long long gil_meter_thread_releases(void) { return thread_releases; }

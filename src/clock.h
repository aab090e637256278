/*
 * clock.h - the library's clocks and timed waits, in one place: a leaf
 * (libc and pthreads only), so every module may use it.
 */
#ifndef SIPC_CLOCK_H
#define SIPC_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* Monotonic milliseconds (CLOCK_MONOTONIC): deadlines, timeouts. */
int64_t sipc__now_ms(void);

/* Monotonic nanoseconds: short intervals (a worker's time per reply). */
int64_t sipc__now_ns(void);

/* Wall-clock milliseconds since the epoch (CLOCK_REALTIME): only for
 * what outlives the process (journal records, file names). */
int64_t sipc__wall_ms(void);

/* A condition variable that waits on CLOCK_MONOTONIC. */
void sipc__cond_init(pthread_cond_t *cv);

/* The CLOCK_MONOTONIC time `ms_from_now` ms ahead, for
 * pthread_cond_timedwait() on a sipc__cond_init() variable. */
void sipc__abstime(struct timespec *ts, int64_t ms_from_now);

/*
 * A wait with a bound that ran out: the waiting code goes on without
 * what it waited for, and says so here (what: a static string naming
 * the wait).  Counted per thread until sipc__bounds_take(), which the
 * reaper calls after each slot's pass: it logs the count and adds it
 * to sipc_stats.bounds_expired.  So no bound expires in silence.
 */
void sipc__bound_expired(const char *what);
/* How many bounds ran out on this thread since the last take (0: none),
 * the last one's name in *ret_what; resets the count. */
unsigned sipc__bounds_take(const char **ret_what);

#endif

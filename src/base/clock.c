/*
 * clock.c - the library's clocks (base/base.h).  Any thread; the only state
 * is the per-thread count of expired bounds.
 */
#include "base/base.h"

static int64_t
ms_of(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
sipc__now_ms(void)
{
	return ms_of(CLOCK_MONOTONIC);
}

int64_t
sipc__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t
sipc__wall_ms(void)
{
	return ms_of(CLOCK_REALTIME);
}

void
sipc__cond_init(pthread_cond_t *cv)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(cv, &a);
	pthread_condattr_destroy(&a);
}

void
sipc__abstime(struct timespec *ts, int64_t ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (ms % 1000) * 1000000;
	if (ts->tv_nsec >= 1000000000) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000;
	}
}

static _Thread_local unsigned bounds_expired;
static _Thread_local const char *bound_last;

void
sipc__bound_expired(const char *what)
{
	bounds_expired++;
	bound_last = what;
}

unsigned
sipc__bounds_take(const char **ret_what)
{
	unsigned n = bounds_expired;

	*ret_what = bound_last != NULL ? bound_last : "?";
	bounds_expired = 0;
	bound_last = NULL;
	return n;
}

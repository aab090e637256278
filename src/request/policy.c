/*
 * policy.c - restart backoff, restart intensity and the settle decision
 * for requests whose worker ended.  Pure logic: no threads, no clocks, no
 * I/O; the only outside input is arc4random_uniform() for jitter.
 *
 * Threads: whichever thread plans restarts (the reaper) and settles
 * requests.  Locks: none here; see request/request.h for what the caller must hold.
 *
 * Why full jitter: after a burst of crashes (a bad input that kills every
 * worker, a dependency that went away) all slots restart at once; an
 * equal-jitter or fixed delay keeps them in lockstep and the next crash
 * hits them together again.  Drawing the whole delay uniformly from
 * [0, ceiling] spreads them out.  Start-up failures are the exception:
 * a missing executable fails in microseconds, so their draw starts at
 * the base delay.
 *
 * Why the reset needs "had been ready": a worker that hangs in start-up
 * until the handshake timeout can have a long uptime without ever being
 * healthy; it must not reset the backoff.
 */
#include "request/request.h"

#include <bsd/stdlib.h>

static unsigned
clampu(unsigned v, unsigned lo, unsigned hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

/* ---------------------------------------------------------- time rings */

static void
times_init(struct sipc__times *ring, unsigned cap)
{
	ring->head = 0;
	ring->n = 0;
	ring->cap = cap;
}

/* Drop entries at or before now - window (they are outside the window
 * (now - window, now]).  Entries are chronological, so the oldest go
 * first. */
static void
times_prune(struct sipc__times *ring, const int64_t *t, int64_t now_ms,
            unsigned window_ms)
{
	int64_t edge = now_ms - (int64_t)window_ms;

	while (ring->n > 0 && t[ring->head] <= edge) {
		ring->head = (ring->head + 1) % ring->cap;
		ring->n--;
	}
}

/* Append; when full the oldest entry is overwritten (callers check the
 * count against the limit before pushing, so this only happens when the
 * oldest entry is the one that the limit no longer needs). */
static void
times_push(struct sipc__times *ring, int64_t *t, int64_t now_ms)
{
	if (ring->n == ring->cap) {
		ring->head = (ring->head + 1) % ring->cap;
		ring->n--;
	}
	t[(ring->head + ring->n) % ring->cap] = now_ms;
	ring->n++;
}

static unsigned
times_count(const struct sipc__times *ring, const int64_t *t, int64_t now_ms,
            unsigned window_ms)
{
	int64_t edge = now_ms - (int64_t)window_ms;
	unsigned i, c = 0;

	for (i = 0; i < ring->n; i++)
		if (t[(ring->head + i) % ring->cap] > edge)
			c++;
	return c;
}

/* ------------------------------------------------------------- restarts */

void
sipc__restart_init(struct sipc__restart *r, const struct sipc_config *cfg)
{
	r->base_ms = clampu(cfg->restart_base_ms, 1, UINT32_MAX / 2);
	r->cap_ms = clampu(cfg->restart_cap_ms, r->base_ms, UINT32_MAX / 2);
	r->reset_ms = cfg->restart_reset_ms;
	r->intensity = clampu(cfg->restart_intensity, 1,
	    SIPC__RESTART_INTENSITY_MAX);
	r->window_ms = clampu(cfg->restart_window_ms, 1, UINT32_MAX / 2);
	r->cooldown_ms = clampu(cfg->cooldown_ms, 1, UINT32_MAX / 2);
	r->exponent = 0;
	r->restarts = 0;
	r->cooldowns = 0;
	times_init(&r->ring, r->intensity);
}

void
sipc__pool_budget_init(struct sipc__pool_budget *pool,
                       const struct sipc_config *cfg)
{
	pool->budget = clampu(cfg->pool_restart_budget, 1,
	    SIPC__POOL_BUDGET_MAX);
	pool->window_ms = clampu(cfg->restart_window_ms, 1, UINT32_MAX / 2);
	times_init(&pool->ring, pool->budget);
}

unsigned
sipc__restart_recent(const struct sipc__restart *r, int64_t now_ms)
{
	return times_count(&r->ring, r->t, now_ms, r->window_ms);
}

/* min(cap, base * 2^exponent) without overflow. */
static unsigned
backoff_ceiling(const struct sipc__restart *r)
{
	uint64_t c = r->base_ms;
	unsigned i;

	for (i = 0; i < r->exponent && c < r->cap_ms; i++)
		c *= 2;
	return c < r->cap_ms ? (unsigned)c : r->cap_ms;
}

int64_t
sipc__restart_plan(struct sipc__restart *r, struct sipc__pool_budget *pool,
                   int64_t now_ms, int64_t uptime_ms, bool failed_before_ready,
                   bool *ret_cooldown)
{
	unsigned ceiling;

	times_prune(&r->ring, r->t, now_ms, r->window_ms);
	times_prune(&pool->ring, pool->t, now_ms, pool->window_ms);
	if (r->ring.n + 1 > r->intensity || pool->ring.n + 1 > pool->budget) {
		r->cooldowns++;
		*ret_cooldown = true;
		return r->cooldown_ms;
	}
	times_push(&r->ring, r->t, now_ms);
	times_push(&pool->ring, pool->t, now_ms);
	r->restarts++;

	if (!failed_before_ready && uptime_ms >= (int64_t)r->reset_ms)
		r->exponent = 0;
	ceiling = backoff_ceiling(r);
	/* Stop counting once the cap is reached: the exponent stays small. */
	if (ceiling < r->cap_ms)
		r->exponent++;

	*ret_cooldown = false;
	if (failed_before_ready)
		return (int64_t)r->base_ms +
		    arc4random_uniform(ceiling - r->base_ms + 1);
	return arc4random_uniform(ceiling + 1);
}

/* --------------------------------------------------------------- settle */

enum sipc__settle
sipc__settle_decide(bool written, bool accepted_proven_not_started,
                    bool idempotent, unsigned attempts,
                    unsigned retries_allowed, unsigned workers_died_with_it,
                    int64_t now_ms, int64_t deadline_ms)
{
	bool expired = deadline_ms != 0 && now_ms >= deadline_ms;

	if (!written || accepted_proven_not_started)
		return expired ? SIPC__SETTLE_TIMEOUT : SIPC__SETTLE_REQUEUE;
	if (workers_died_with_it >= 2)
		return SIPC__SETTLE_POISON;
	if (expired)
		return SIPC__SETTLE_TIMEOUT;
	if (idempotent && attempts <= retries_allowed)
		return SIPC__SETTLE_RETRY;
	return SIPC__SETTLE_UNKNOWN;
}

const char *
sipc__settle_name(enum sipc__settle s)
{
	switch (s) {
	case SIPC__SETTLE_REQUEUE:
		return "requeue";
	case SIPC__SETTLE_RETRY:
		return "retry";
	case SIPC__SETTLE_UNKNOWN:
		return "unknown";
	case SIPC__SETTLE_POISON:
		return "poison";
	case SIPC__SETTLE_TIMEOUT:
		return "timeout";
	}
	return "invalid";
}

/*
 * policy.h - restart and retry policy: pure decisions, no threads, no
 * clocks, no I/O.  Time comes in as int64 milliseconds on one monotonic
 * clock chosen by the caller, so tests are deterministic.
 *
 * Locking: none inside.  A struct sipc__restart belongs to one worker
 * slot; the struct sipc__pool_budget is shared by all slots.  Both must be
 * touched by one thread at a time: in the supervisor only the reaper
 * thread plans restarts, so it owns them; any other caller must hold one
 * lock around every sipc__restart_plan() call.
 */
#ifndef SIPC_POLICY_H
#define SIPC_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "sipc.h"

/* Upper bounds enforced by configuration validation; they size the
 * timestamp rings below, so the state is a fixed-size value. */
#define SIPC__RESTART_INTENSITY_MAX 100
#define SIPC__POOL_BUDGET_MAX 1000

/* Fixed-capacity ring of timestamps in chronological order. */
struct sipc__times {
	unsigned head;            /* index of the oldest entry */
	unsigned n;               /* entries in use */
	unsigned cap;             /* effective capacity (<= array size) */
};

/* Per-slot restart state. */
struct sipc__restart {
	unsigned base_ms, cap_ms, reset_ms, intensity, window_ms, cooldown_ms;
	unsigned exponent;        /* next ceiling = min(cap, base * 2^exponent) */
	uint64_t restarts;        /* planned restarts (not cooldowns), total */
	uint64_t cooldowns;       /* times the intensity limit was hit */
	struct sipc__times ring;  /* decision times of recent restarts */
	int64_t t[SIPC__RESTART_INTENSITY_MAX];
};

/* Pool-wide budget: restarts of all slots within the window. */
struct sipc__pool_budget {
	unsigned budget, window_ms;
	struct sipc__times ring;
	int64_t t[SIPC__POOL_BUDGET_MAX];
};

/* Copy the restart settings of `cfg` (clamped to the bounds above, so an
 * unvalidated config cannot overflow the rings) and clear the history. */
void sipc__restart_init(struct sipc__restart *r, const struct sipc_config *cfg);
void sipc__pool_budget_init(struct sipc__pool_budget *pool,
                            const struct sipc_config *cfg);

/*
 * Plan the respawn of a slot whose worker ended and should be restarted.
 * `now_ms` is the current time, `uptime_ms` how long the ended worker ran,
 * `failed_before_ready` whether it ended before completing the handshake
 * (exec failure, crash at start-up, handshake timeout).
 *
 * Returns the delay in ms before the respawn:
 *   - Intensity: if this restart would be the (R+1)-th of this slot
 *     within the last restart_window_ms, or the (B+1)-th of the pool
 *     (B = pool_restart_budget), *ret_cooldown is set to true and
 *     cooldown_ms is returned.  The slot should refuse work meanwhile
 *     (callers get SIPC_E_UNAVAILABLE).  A cooldown is not recorded as a
 *     restart, so once the window has slid past the old restarts, restarts
 *     are allowed again.
 *   - Otherwise *ret_cooldown is set to false, the restart is recorded
 *     against the slot and the pool, and the delay is drawn with full
 *     jitter: uniform in [0, ceiling], ceiling = min(cap, base * 2^n),
 *     n counting restarts since the last reset.  n resets to 0 when the
 *     ended worker had been ready and ran for at least restart_reset_ms.
 *   - A start-up failure counts against the same limits and its delay is
 *     uniform in [base, ceiling]: never 0, never a tight loop.
 */
int64_t sipc__restart_plan(struct sipc__restart *r,
                           struct sipc__pool_budget *pool, int64_t now_ms,
                           int64_t uptime_ms, bool failed_before_ready,
                           bool *ret_cooldown);

/* Restarts of this slot recorded within the window ending at now_ms. */
unsigned sipc__restart_recent(const struct sipc__restart *r, int64_t now_ms);

/*
 * What to do with a request whose worker ended (or which must be settled
 * otherwise) before a reply arrived.
 *
 *   REQUEUE  it provably never started: queue it for another worker.
 *   RETRY    it may have run, but the caller marked it idempotent and the
 *            retry budget allows another attempt: write it again.
 *   UNKNOWN  it may have run: report SIPC_OUTCOME_UNKNOWN.
 *   POISON   it was in flight on two workers that died: report UNKNOWN
 *            with SIPC_E_POISON and never send it again.
 *   TIMEOUT  its deadline has passed: report SIPC_OUTCOME_TIMEOUT.
 */
enum sipc__settle {
	SIPC__SETTLE_REQUEUE,
	SIPC__SETTLE_RETRY,
	SIPC__SETTLE_UNKNOWN,
	SIPC__SETTLE_POISON,
	SIPC__SETTLE_TIMEOUT,
};

/*
 * Rules, in this order ("deadline passed" means deadline_ms != 0 and
 * now_ms >= deadline_ms):
 *   1. not written, or written but proven not started (the worker
 *      announced ACCEPT support and sent no ACCEPT for it):
 *      deadline passed -> TIMEOUT, else REQUEUE.
 *   2. written and ambiguous, workers_died_with_it >= 2 (counting the
 *      death being settled now) -> POISON (even past the deadline: the
 *      request is dangerous, the caller must know).
 *   3. deadline passed -> TIMEOUT.
 *   4. idempotent and attempts <= retries_allowed -> RETRY
 *      (attempts = times written so far, so retries_allowed extra
 *      attempts are made after the first).
 *   5. otherwise -> UNKNOWN.
 */
enum sipc__settle sipc__settle_decide(bool written,
                                      bool accepted_proven_not_started,
                                      bool idempotent, unsigned attempts,
                                      unsigned retries_allowed,
                                      unsigned workers_died_with_it,
                                      int64_t now_ms, int64_t deadline_ms);

const char *sipc__settle_name(enum sipc__settle s);

#endif

/*
 * policy_test.c - restart backoff with full jitter, backoff reset,
 * restart intensity and pool budget, and the settle decision table.
 * Pure logic: time is simulated, so nothing here sleeps.
 */
#include <stdio.h>
#include <string.h>

#include "request/request.h"
#include "sipc.h"
#include "testlib.h"

#define SAMPLES 4000

static void
policy_cfg(struct sipc_config *c)
{
	sipc_config_init(c);
	c->restart_base_ms = 100;
	c->restart_cap_ms = 3000;
	c->restart_reset_ms = 10000;
	c->restart_intensity = 5;
	c->restart_window_ms = 10000;
	c->pool_restart_budget = 20;
	c->cooldown_ms = 30000;
}

struct span {
	int64_t min, max;
	bool cooldown;
};

/* Draw SAMPLES delays from copies of the state, so the state itself does
 * not move: every draw sees the same exponent and history. */
static struct span
sample(const struct sipc__restart *r, const struct sipc__pool_budget *pool,
       int64_t now, int64_t uptime, bool failed)
{
	static struct sipc__restart rc;
	static struct sipc__pool_budget pc;
	struct span s = { INT64_MAX, INT64_MIN, false };
	int64_t d;
	bool cd;
	int i;

	for (i = 0; i < SAMPLES; i++) {
		rc = *r;
		pc = *pool;
		d = sipc__restart_plan(&rc, &pc, now, uptime, failed, &cd);
		s.cooldown |= cd;
		if (d < s.min)
			s.min = d;
		if (d > s.max)
			s.max = d;
	}
	return s;
}

/* Ceilings 100, 200, ... 1600 then capped at 3000.  Restarts are spaced
 * wider than the window so intensity never interferes. */
/* rules: P1 */
static void
test_policy_backoff_grows_and_is_capped(void)
{
	static struct sipc__restart r;
	static struct sipc__pool_budget pool;
	const int64_t want[] = { 100, 200, 400, 800, 1600, 3000, 3000, 3000 };
	struct sipc_config c;
	struct span s;
	int64_t now = 1000;
	bool cd = true;
	size_t i;

	policy_cfg(&c);
	sipc__restart_init(&r, &c);
	sipc__pool_budget_init(&pool, &c);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		s = sample(&r, &pool, now, 50, false);
		CU_ASSERT_FALSE(s.cooldown);
		CU_ASSERT(s.min >= 0);
		CU_ASSERT(s.max <= want[i]);
		/* Full jitter: both ends of [0, ceiling] are reached. */
		CU_ASSERT(s.max >= want[i] - want[i] / 100);
		CU_ASSERT(s.min <= want[i] / 100);
		if (s.max > want[i] || s.max < want[i] - want[i] / 100)
			printf("\nstep %zu: max %lld, ceiling %lld\n", i,
			    (long long)s.max, (long long)want[i]);
		sipc__restart_plan(&r, &pool, now, 50, false, &cd);
		CU_ASSERT_FALSE(cd);
		now += 20000;
	}
	CU_ASSERT_EQUAL(r.restarts, sizeof(want) / sizeof(want[0]));
}

static void
grow(struct sipc__restart *r, struct sipc__pool_budget *pool, int64_t *now,
     int n)
{
	bool cd;

	while (n-- > 0) {
		sipc__restart_plan(r, pool, *now, 50, false, &cd);
		CU_ASSERT_FALSE(cd);
		*now += 20000;
	}
}

/* rules: P2 */
static void
test_policy_reset_after_stable_uptime(void)
{
	static struct sipc__restart r;
	static struct sipc__pool_budget pool;
	struct sipc_config c;
	struct span s;
	int64_t now = 0;

	policy_cfg(&c);
	sipc__restart_init(&r, &c);
	sipc__pool_budget_init(&pool, &c);
	grow(&r, &pool, &now, 4);                  /* next ceiling 1600 */
	/* Just short of restart_reset_ms: no reset. */
	s = sample(&r, &pool, now, 9999, false);
	CU_ASSERT(s.max > 800);
	/* Long uptime but it never became ready: no reset either. */
	s = sample(&r, &pool, now, 60000, true);
	CU_ASSERT(s.max > 800);
	CU_ASSERT(s.min >= 100);
	/* Stable run: back to the base ceiling. */
	s = sample(&r, &pool, now, 10000, false);
	CU_ASSERT(s.max <= 100);
	CU_ASSERT(s.max >= 99);
	/* And it grows again from there. */
	grow(&r, &pool, &now, 1);
	s = sample(&r, &pool, now, 50, false);
	CU_ASSERT(s.max >= 1600 && s.max <= 3000);
	r.exponent = 0;
	s = sample(&r, &pool, now, 50, false);
	CU_ASSERT(s.max <= 100);
}

/* R = 5 restarts in T = 10 s: the sixth within T cools the slot down. */
/* rules: P3 */
static void
test_policy_intensity_triggers_cooldown(void)
{
	static struct sipc__restart r;
	static struct sipc__pool_budget pool;
	struct sipc_config c;
	int64_t t, d;
	bool cd = true;

	policy_cfg(&c);
	sipc__restart_init(&r, &c);
	sipc__pool_budget_init(&pool, &c);
	for (t = 0; t < 500; t += 100) {
		d = sipc__restart_plan(&r, &pool, t, 10, false, &cd);
		CU_ASSERT_FALSE(cd);
		CU_ASSERT(d >= 0 && d <= 3000);
	}
	CU_ASSERT_EQUAL(sipc__restart_recent(&r, 500), 5);
	cd = false;
	CU_ASSERT_EQUAL(sipc__restart_plan(&r, &pool, 500, 10, false, &cd),
	    30000);
	CU_ASSERT_TRUE(cd);
	cd = false;
	CU_ASSERT_EQUAL(sipc__restart_plan(&r, &pool, 600, 10, true, &cd),
	    30000);
	CU_ASSERT_TRUE(cd);
	CU_ASSERT_EQUAL(r.cooldowns, 2);
	CU_ASSERT_EQUAL(r.restarts, 5);
	/* A cooldown is not recorded as a restart. */
	CU_ASSERT_EQUAL(sipc__restart_recent(&r, 600), 5);
}

/* Restarts at 0, 100, 200, 300, 400.  The window is (now - T, now]. */
/* rules: P3 */
static void
test_policy_window_slides(void)
{
	static struct sipc__restart r;
	static struct sipc__pool_budget pool;
	struct sipc_config c;
	int64_t t;
	bool cd;

	policy_cfg(&c);
	sipc__restart_init(&r, &c);
	sipc__pool_budget_init(&pool, &c);
	for (t = 0; t < 500; t += 100)
		sipc__restart_plan(&r, &pool, t, 10, false, &cd);
	sipc__restart_plan(&r, &pool, 9999, 10, false, &cd);
	CU_ASSERT_TRUE(cd);
	/* At 10000 the restart at 0 has left the window. */
	sipc__restart_plan(&r, &pool, 10000, 10, false, &cd);
	CU_ASSERT_FALSE(cd);
	/* 100, 200, 300, 400, 10000 are in the window at 10050. */
	sipc__restart_plan(&r, &pool, 10050, 10, false, &cd);
	CU_ASSERT_TRUE(cd);
	sipc__restart_plan(&r, &pool, 10100, 10, false, &cd);
	CU_ASSERT_FALSE(cd);
	/* Long after: everything expired, a full budget again. */
	for (t = 100000; t < 100005; t++) {
		sipc__restart_plan(&r, &pool, t, 10, false, &cd);
		CU_ASSERT_FALSE(cd);
	}
	sipc__restart_plan(&r, &pool, t, 10, false, &cd);
	CU_ASSERT_TRUE(cd);
}

/* rules: P3 */
static void
test_policy_pool_budget_across_slots(void)
{
	static struct sipc__restart slot[4];
	static struct sipc__pool_budget pool;
	struct sipc_config c;
	bool cd;
	int i;

	policy_cfg(&c);
	c.pool_restart_budget = 3;
	for (i = 0; i < 4; i++)
		sipc__restart_init(&slot[i], &c);
	sipc__pool_budget_init(&pool, &c);
	for (i = 0; i < 3; i++) {
		sipc__restart_plan(&slot[i], &pool, i, 10, false, &cd);
		CU_ASSERT_FALSE(cd);
	}
	/* Slot 3 never restarted, but the pool budget is spent. */
	CU_ASSERT_EQUAL(sipc__restart_plan(&slot[3], &pool, 5, 10, false, &cd),
	    30000);
	CU_ASSERT_TRUE(cd);
	CU_ASSERT_EQUAL(sipc__restart_recent(&slot[3], 5), 0);
	/* So is slot 0's second restart. */
	sipc__restart_plan(&slot[0], &pool, 6, 10, false, &cd);
	CU_ASSERT_TRUE(cd);
	/* Once the window has slid past slot 0's restart, one is free. */
	sipc__restart_plan(&slot[3], &pool, 10000, 10, false, &cd);
	CU_ASSERT_FALSE(cd);
	sipc__restart_plan(&slot[0], &pool, 10000, 10, false, &cd);
	CU_ASSERT_TRUE(cd);
}

/* rules: P4 */
static void
test_policy_startup_failure_never_zero(void)
{
	static struct sipc__restart r;
	static struct sipc__pool_budget pool;
	struct sipc_config c;
	struct span s;
	int64_t now = 0;

	policy_cfg(&c);
	sipc__restart_init(&r, &c);
	sipc__pool_budget_init(&pool, &c);
	s = sample(&r, &pool, now, 0, true);
	CU_ASSERT_EQUAL(s.min, 100);
	CU_ASSERT_EQUAL(s.max, 100);
	grow(&r, &pool, &now, 3);                  /* ceiling 800 */
	s = sample(&r, &pool, now, 0, true);
	CU_ASSERT(s.min >= 100 && s.min <= 110);
	CU_ASSERT(s.max >= 790 && s.max <= 800);
	/* The smallest base: still never 0. */
	c.restart_base_ms = 1;
	c.restart_cap_ms = 1;
	sipc__restart_init(&r, &c);
	s = sample(&r, &pool, now, 0, true);
	CU_ASSERT_EQUAL(s.min, 1);
	/* An unvalidated base of 0 is clamped, not trusted. */
	c.restart_base_ms = 0;
	c.restart_cap_ms = 0;
	sipc__restart_init(&r, &c);
	s = sample(&r, &pool, now, 0, true);
	CU_ASSERT(s.min >= 1);
}

/* Out-of-range settings are clamped to the ring sizes. */
/* rules: P6 */
static void
test_policy_init_clamps(void)
{
	static struct sipc__restart r;
	static struct sipc__pool_budget pool;
	struct sipc_config c;
	bool cd = false;
	int t, n = 0;

	policy_cfg(&c);
	c.restart_intensity = 100000;
	c.pool_restart_budget = 10000000;
	c.restart_window_ms = 1000000;
	sipc__restart_init(&r, &c);
	sipc__pool_budget_init(&pool, &c);
	CU_ASSERT_EQUAL(r.intensity, SIPC__RESTART_INTENSITY_MAX);
	CU_ASSERT_EQUAL(pool.budget, SIPC__POOL_BUDGET_MAX);
	for (t = 0; t < 1000 && !cd; t++) {
		sipc__restart_plan(&r, &pool, t, 10, false, &cd);
		if (!cd)
			n++;
	}
	CU_ASSERT_EQUAL(n, SIPC__RESTART_INTENSITY_MAX);
}

static const struct {
	bool written, not_started, idem;
	unsigned attempts, allowed, died;
	int64_t now, deadline;
	enum sipc__settle want;
} settle_cases[] = {
	/* never written: requeue, unless the deadline passed */
	{ false, false, false, 0, 2, 0, 100, 0, SIPC__SETTLE_REQUEUE },
	{ false, false, false, 0, 2, 5, 100, 0, SIPC__SETTLE_REQUEUE },
	{ false, false, true, 0, 2, 0, 100, 200, SIPC__SETTLE_REQUEUE },
	{ false, false, false, 0, 2, 0, 200, 200, SIPC__SETTLE_TIMEOUT },
	/* written but provably not started: same as never written */
	{ true, true, false, 1, 2, 1, 100, 0, SIPC__SETTLE_REQUEUE },
	{ true, true, false, 1, 2, 2, 100, 0, SIPC__SETTLE_REQUEUE },
	{ true, true, false, 1, 2, 1, 300, 200, SIPC__SETTLE_TIMEOUT },
	/* ambiguous, not idempotent: unknown */
	{ true, false, false, 1, 2, 1, 100, 0, SIPC__SETTLE_UNKNOWN },
	{ true, false, false, 1, 2, 1, 100, 200, SIPC__SETTLE_UNKNOWN },
	/* ambiguous, idempotent: retry within the budget */
	{ true, false, true, 1, 2, 1, 100, 0, SIPC__SETTLE_RETRY },
	{ true, false, true, 2, 2, 1, 100, 200, SIPC__SETTLE_RETRY },
	{ true, false, true, 3, 2, 1, 100, 0, SIPC__SETTLE_UNKNOWN },
	{ true, false, true, 1, 0, 1, 100, 0, SIPC__SETTLE_UNKNOWN },
	/* two dead workers: poison, whatever else holds */
	{ true, false, true, 2, 5, 2, 100, 0, SIPC__SETTLE_POISON },
	{ true, false, false, 2, 5, 3, 100, 0, SIPC__SETTLE_POISON },
	{ true, false, true, 2, 5, 2, 300, 200, SIPC__SETTLE_POISON },
	/* deadline passed while ambiguous */
	{ true, false, true, 1, 2, 1, 200, 200, SIPC__SETTLE_TIMEOUT },
	{ true, false, false, 1, 2, 1, 201, 200, SIPC__SETTLE_TIMEOUT },
	/* deadline 0 means none, even at time 0 */
	{ true, false, false, 1, 2, 1, 0, 0, SIPC__SETTLE_UNKNOWN },
};

/* rules: R5 */
static void
test_policy_settle_rules(void)
{
	enum sipc__settle got;
	size_t i;

	for (i = 0; i < sizeof(settle_cases) / sizeof(settle_cases[0]); i++) {
		got = sipc__settle_decide(settle_cases[i].written,
		    settle_cases[i].not_started, settle_cases[i].idem,
		    settle_cases[i].attempts, settle_cases[i].allowed,
		    settle_cases[i].died, settle_cases[i].now,
		    settle_cases[i].deadline);
		if (got != settle_cases[i].want) {
			printf("\ncase %zu: got %s, want %s\n", i,
			    sipc__settle_name(got),
			    sipc__settle_name(settle_cases[i].want));
			CU_FAIL("settle decision");
		}
	}
	CU_ASSERT_STRING_EQUAL(sipc__settle_name(SIPC__SETTLE_POISON), "poison");
	CU_ASSERT_STRING_EQUAL(sipc__settle_name((enum sipc__settle)77),
	    "invalid");
}

int
main(void)
{
	tl_suite("policy", (tl_test[]){
	    { "test_policy_backoff_grows_and_is_capped",
	      test_policy_backoff_grows_and_is_capped },
	    { "test_policy_reset_after_stable_uptime",
	      test_policy_reset_after_stable_uptime },
	    { "test_policy_intensity_triggers_cooldown",
	      test_policy_intensity_triggers_cooldown },
	    { "test_policy_window_slides", test_policy_window_slides },
	    { "test_policy_pool_budget_across_slots",
	      test_policy_pool_budget_across_slots },
	    { "test_policy_startup_failure_never_zero",
	      test_policy_startup_failure_never_zero },
	    { "test_policy_init_clamps", test_policy_init_clamps },
	    { "test_policy_settle_rules", test_policy_settle_rules },
	    { NULL, NULL } });
	return tl_run();
}

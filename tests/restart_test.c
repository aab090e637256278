/*
 * restart_test.c - restarts without storms: backoff spacing of start-up
 * failures, the per-slot intensity limit and cool-down (callers get a
 * fast SIPC_E_UNAVAILABLE instead of hanging), the pool-wide budget, and
 * a worker binary that disappears at run time.  Counts are taken over
 * windows with bounds generous enough for a loaded 2-core machine.
 *
 * Threads: the CUnit thread drives every test; callbacks run on library
 * threads and touch only the mutex-guarded log capture
 * (sipctest.c).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sipc.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 10000           /* generous deadline for any event */

/* ---------------------------------------------------- restart helpers */

static bool
pred_any_cooldown(const struct sipc_stats *st, void *arg)
{
	for (unsigned i = 0; i < st->nworkers; i++)
		if (st->workers[i].state == SIPC_WS_COOLDOWN)
			return true;
	return false;
}

/* Crash the pool (every request kills its worker) until a call is
 * refused.  Returns how many requests ended UNKNOWN first. */
static unsigned
crash_until_refused(sipc_supervisor *s, struct sipc_result *ret_refusal)
{
	struct sipc_result r;
	unsigned unknown = 0;
	int64_t end = tl_now_ms() + 2 * WAIT_MS;

	for (;;) {
		st_call_cmd(s, NULL, 3000, 0, &r);
		if (getenv("LIFE_DEBUG")) {
			char b[160];

			sipc_exit_format(&r.exit, b, sizeof(b));
			fprintf(stderr, "%lld %s %s w%u g%u %s\n",
			    (long long)tl_now_ms(), sipc_outcome_name(r.outcome),
			    sipc_strerror(r.error), r.worker_id, r.generation, b);
		}
		if (r.outcome != SIPC_OUTCOME_UNKNOWN || tl_now_ms() > end ||
		    unknown > 50) {
			*ret_refusal = r;
			return unknown;
		}
		CU_ASSERT_EQUAL(r.error, SIPC_E_WORKER_DIED);
		unknown++;
		sipc_result_release(&r);
	}
}

/* A caller facing a pool in cool-down is refused at once. */
static void
assert_fast_unavailable(sipc_supervisor *s)
{
	struct sipc_result r;
	int64_t t0 = tl_now_ms();

	st_call_cmd(s, NULL, 0, 0, &r);     /* no deadline: must not hang */
	CU_ASSERT(tl_now_ms() - t0 < 1000);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_REJECTED);
	CU_ASSERT_EQUAL(r.error, SIPC_E_UNAVAILABLE);
	CU_ASSERT(!r.may_have_run);
	sipc_result_release(&r);
}

/* ------------------------------------------------------------ tests */

/* Crash after 0 requests: restart_intensity 3 per 10 s, then the slot
 * cools down and callers are refused fast. */
/* rules: P3 P5 */
static void
test_restart_intensity_cooldown(void)
{
	char *const argv[] = { "crash", "exit3", "0", NULL };
	struct sipc_config c;
	struct sipc_result r;
	struct sipc_stats st;
	sipc_supervisor *s;
	unsigned unknown;

	st_cfg_base(&c, "crash", argv, 1);
	c.restart_base_ms = 50;
	c.restart_cap_ms = 400;
	c.restart_intensity = 3;
	c.restart_window_ms = 10000;  /* generous: sanitizer builds start slowly */
	c.cooldown_ms = 5000;
	s = st_start(&c, 1, WAIT_MS);
	unknown = crash_until_refused(s, &r);
	/* 1 initial worker + 3 restarts died; the 4th end hit the limit */
	CU_ASSERT(unknown >= 3 && unknown <= 5);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_REJECTED);
	CU_ASSERT_EQUAL(r.error, SIPC_E_UNAVAILABLE);
	sipc_result_release(&r);
	CU_ASSERT(st_stats_wait(s, pred_any_cooldown, NULL, WAIT_MS));
	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	CU_ASSERT_EQUAL(st.workers[0].state, SIPC_WS_COOLDOWN);
	/* exactly the 3 restarts the limit allows: the cool-down that
	 * refused the 4th is not a restart (P3), in the slot or the pool */
	CU_ASSERT_EQUAL(st.workers[0].restarts, 3);
	CU_ASSERT_EQUAL(st.restarts, 3);
	CU_ASSERT_EQUAL(st.workers[0].last_exit.kind, SIPC_EXIT_CODE);
	sipc_stats_release(&st);
	CU_ASSERT(st_log_has("restart intensity exceeded"));
	assert_fast_unavailable(s);
	sipc_destroy(s);
}

/* The pool-wide budget stops restarts even when each slot is under its
 * own limit. */
/* rules: P3 */
static void
test_restart_pool_budget(void)
{
	char *const argv[] = { "crash", "exit3", "0", NULL };
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	unsigned unknown;

	st_cfg_base(&c, "crash", argv, 3);
	c.restart_intensity = 50;
	c.restart_window_ms = 10000;
	c.pool_restart_budget = 3;
	c.cooldown_ms = 5000;
	s = st_start(&c, 3, WAIT_MS);
	unknown = crash_until_refused(s, &r);
	/* 3 restarts allowed pool-wide, then every slot cools down as it
	 * dies: at most 3 initial + 3 restarted workers can die */
	CU_ASSERT(unknown >= 3 && unknown <= 6);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_REJECTED);
	CU_ASSERT_EQUAL(r.error, SIPC_E_UNAVAILABLE);
	sipc_result_release(&r);
	/* the budget: 3 restarts, however many slots then cooled down */
	CU_ASSERT(st_stats_wait(s, pred_any_cooldown, NULL, WAIT_MS));
	CU_ASSERT_EQUAL(st_pool_stats(s).restarts, 3);
	assert_fast_unavailable(s);
	sipc_destroy(s);
}

struct restarts_want { uint64_t n; };

static bool
pred_restarts(const struct sipc_stats *st, void *arg)
{
	return st->restarts >= ((struct restarts_want *)arg)->n;
}

/* A worker that dies before its handshake is restarted with a delay of
 * at least restart_base_ms every time: SPACED restarts take at least
 * (SPACED - 2) x 50 ms (the first may follow the start of the
 * measurement at once; one more for sampling), never a tight loop.  The
 * wait is for the restarts to happen, however slowly a loaded machine
 * execs the fixture: a fixed window saw too few under a sanitizer. */
#define SPACED 12
/* rules: P4 */
static void
test_restart_startup_failure_spacing(void)
{
	char *const argv[] = { "dieatstart", NULL };
	struct sipc_config c;
	struct restarts_want want;
	sipc_supervisor *s;
	uint64_t r0, n;
	int64_t t0, span;

	st_cfg_base(&c, "dieatstart", argv, 1);
	c.restart_base_ms = 50;
	c.restart_cap_ms = 200;
	c.restart_intensity = 100;
	c.restart_window_ms = 60000;
	c.pool_restart_budget = 1000;
	s = st_start(&c, 0, WAIT_MS);
	t0 = tl_now_ms();
	r0 = st_pool_stats(s).restarts;
	want.n = r0 + SPACED;
	CU_ASSERT(st_stats_wait(s, pred_restarts, &want, 6 * WAIT_MS));
	span = tl_now_ms() - t0;
	n = st_pool_stats(s).restarts - r0;
	CU_ASSERT(n >= SPACED);
	CU_ASSERT(n <= (uint64_t)(span / 50) + 2);
	CU_ASSERT_EQUAL(st_worker_stats(s, 0).last_exit.kind, SIPC_EXIT_HANDSHAKE);
	sipc_destroy(s);
}

/* Start-up failures count against the same intensity limit. */
/* rules: P4 */
static void
test_restart_startup_failure_cooldown(void)
{
	char *const argv[] = { "dieatstart", NULL };
	struct sipc_config c;
	sipc_supervisor *s;

	st_cfg_base(&c, "dieatstart", argv, 1);
	c.restart_intensity = 3;
	c.restart_window_ms = 5000;
	c.cooldown_ms = 5000;
	s = st_start(&c, 0, WAIT_MS);
	CU_ASSERT(st_stats_wait(s, pred_any_cooldown, NULL, WAIT_MS));
	CU_ASSERT_EQUAL(st_worker_stats(s, 0).restarts, 3);
	CU_ASSERT_EQUAL(st_pool_stats(s).restarts, 3);
	assert_fast_unavailable(s);
	sipc_destroy(s);
}

/* The worker binary disappears at run time: the slot is not restarted
 * in a tight loop, and callers are not left hanging. */
/* rules: E2 P4 */
static void
test_restart_missing_binary_at_runtime(void)
{
	char dir[] = "/tmp/sipc-restart-XXXXXX", bin[PATH_MAX];
	char *const argv[] = { "echo", NULL };
	struct st_exit_want ef = { 0, SIPC_EXIT_EXEC_FAILED };
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	uint64_t r0, n;
	int64_t t0;

	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	/* a root supervisor's sandboxed worker runs as sandbox_uid */
	CU_ASSERT(chmod(dir, 0755) == 0);
	snprintf(bin, sizeof(bin), "%s/echo", dir);
	CU_ASSERT_FATAL(st_copy_file(tl_fixture("echo"), bin) == 0);
	st_cfg_base(&c, "echo", argv, 1);
	c.path = bin;
	c.restart_intensity = 100;
	c.restart_window_ms = 60000;
	c.pool_restart_budget = 1000;
	s = st_start(&c, 1, WAIT_MS);
	CU_ASSERT_FATAL(unlink(bin) == 0);
	CU_ASSERT_FATAL(rmdir(dir) == 0);
	st_call_cmd(s, "crash exit 3", WAIT_MS, 0, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_UNKNOWN);
	sipc_result_release(&r);
	CU_ASSERT(st_stats_wait(s, st_pred_exit_kind, &ef, WAIT_MS));
	CU_ASSERT_EQUAL(st_worker_stats(s, 0).last_exit.code, ENOENT);
	r0 = st_pool_stats(s).restarts;
	t0 = tl_now_ms();
	/* callers get an outcome, never a hang, and nothing ran */
	st_call_cmd(s, NULL, 300, 0, &r);
	CU_ASSERT(r.outcome == SIPC_OUTCOME_TIMEOUT ||
	    r.outcome == SIPC_OUTCOME_REJECTED);
	CU_ASSERT(!r.may_have_run);
	sipc_result_release(&r);
	/* A fixed window on purpose: restarts are counted over one
	 * second, there is no event to wait for. */
	while (tl_now_ms() - t0 < 1000)
		usleep(20000);
	n = st_pool_stats(s).restarts - r0;
	/* backoff from 20 ms doubling: a handful per second, not hundreds */
	CU_ASSERT(n <= 15);
	CU_ASSERT(st_worker_stats(s, 0).state != SIPC_WS_READY);
	CU_ASSERT(st_log_has("cannot execute"));
	sipc_destroy(s);
}

static const tl_test restart_tests[] = {
	{ "test_restart_intensity_cooldown", test_restart_intensity_cooldown },
	{ "test_restart_pool_budget", test_restart_pool_budget },
	{ "test_restart_startup_failure_spacing",
	  test_restart_startup_failure_spacing },
	{ "test_restart_startup_failure_cooldown",
	  test_restart_startup_failure_cooldown },
	{ "test_restart_missing_binary_at_runtime",
	  test_restart_missing_binary_at_runtime },
	{ NULL, NULL },
};

int
main(void)
{
	st_no_core_files();
	tl_suite("restart", restart_tests);
	return tl_run();
}

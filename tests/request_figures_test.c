/*
 * request_figures_test.c - struct sipc_result's queue_us and run_us:
 * the wait before the first write and the time from that write to the
 * outcome, each inside the wall time the caller saw; 0 run time for a
 * request never written; the pool's sums in sipc_stats are exactly the
 * sums of its results.
 *
 * Threads: the CUnit thread drives every test; completion callbacks run
 * on library threads and touch only an st_outbox (its mutex).  Waits are
 * on events with generous deadlines; no upper bound on a figure (they
 * depend on the machine's load), only what the mechanism makes true.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sipc.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 20000           /* generous deadline for any event */

static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };

/*
 * One worker, one request at a time: a 600 ms sleep, then a 300 ms
 * sleep queued behind it, then one with a 100 ms queue budget that never
 * gets written.  The second waited at least the first's sleep and ran at
 * least its own; the third ran 0 and waited at least its budget; each
 * request's two figures fit inside the time from before its submit to
 * after all outcomes; the stats' sums are the results' sums.
 */
static void
test_request_figures_queue_and_run(void)
{
	struct st_outslot o[3] = { { &box, 0 }, { &box, 1 }, { &box, 2 } };
	struct sipc_config c;
	struct sipc_stats st;
	sipc_supervisor *s;
	int64_t t[3], end;
	uint64_t qsum = 0, rsum = 0;
	unsigned i;

	st_cfg_base(&c, "echo", NULL, 1);
	c.max_inflight = 1;
	s = st_start(&c, 1, WAIT_MS);
	st_outbox_reset(&box);
	t[0] = tl_now_us();
	(void)st_submit_cmd_opts(s, "sleep 600", WAIT_MS, 0, 0, &o[0]);
	t[1] = tl_now_us();
	(void)st_submit_cmd_opts(s, "sleep 300", WAIT_MS, 0, 0, &o[1]);
	t[2] = tl_now_us();
	(void)st_submit_cmd_opts(s, "pid", WAIT_MS, 0, 100, &o[2]);
	CU_ASSERT_FATAL(st_outbox_wait(&box, 3, WAIT_MS));
	end = tl_now_us();
	pthread_mutex_lock(&box.mu);
	TL_EQ(box.res[0].outcome, SIPC_OUTCOME_OK);
	TL_EQ(box.res[1].outcome, SIPC_OUTCOME_OK);
	TL_EQ(box.res[2].error, SIPC_E_QUEUE_TIMEOUT);
	CU_ASSERT(box.res[0].run_us >= 600000);
	CU_ASSERT(box.res[1].run_us >= 300000);
	/* written only once the first had its reply */
	CU_ASSERT(box.res[1].queue_us + (uint64_t)(t[1] - t[0]) >= 600000);
	TL_EQ(box.res[2].run_us, 0);
	/* budgets count in whole ms of the monotonic clock */
	CU_ASSERT(box.res[2].queue_us >= 99000);
	for (i = 0; i < 3; i++) {
		CU_ASSERT(box.res[i].queue_us + box.res[i].run_us <=
		    (uint64_t)(end - t[i]));
		qsum += box.res[i].queue_us;
		rsum += box.res[i].run_us;
		fprintf(stderr, "request %u: queue %llu us, run %llu us\n", i,
		    (unsigned long long)box.res[i].queue_us,
		    (unsigned long long)box.res[i].run_us);
	}
	pthread_mutex_unlock(&box.mu);
	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	TL_EQ(st.queue_us_sum, qsum);
	TL_EQ(st.run_us_sum, rsum);
	sipc_stats_release(&st);
	st_outbox_release(&box);
	sipc_destroy(s);
}

/* A synchronous call's result carries them too. */
static void
test_request_figures_in_call(void)
{
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	int64_t t0, dt;

	st_cfg_base(&c, "echo", NULL, 1);
	s = st_start(&c, 1, WAIT_MS);
	t0 = tl_now_us();
	st_call_cmd(s, "sleep 200", WAIT_MS, 0, &r);
	dt = tl_now_us() - t0;
	TL_EQ(r.outcome, SIPC_OUTCOME_OK);
	CU_ASSERT(r.run_us >= 200000);
	CU_ASSERT(r.queue_us + r.run_us <= (uint64_t)dt);
	sipc_result_release(&r);
	sipc_destroy(s);
}

static const tl_test tests[] = {
	{ "test_request_figures_queue_and_run",
	  test_request_figures_queue_and_run },
	{ "test_request_figures_in_call", test_request_figures_in_call },
	{ NULL, NULL }
};

int
main(void)
{
	st_no_core_files();
	tl_suite("request_figures", tests);
	return tl_run();
}

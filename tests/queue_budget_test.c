/*
 * queue_budget_test.c - queue_timeout_ms: a request no worker was
 * written yet when its queue budget passes ends REJECTED /
 * SIPC_E_QUEUE_TIMEOUT, never written, apart from its run deadline; the
 * budget bounds only the wait before the first write; a request's own
 * budget overrides the supervisor's; a submitter blocked on a full ring
 * stops waiting at it; the key loads and is range-checked.
 *
 * Threads: the CUnit thread drives every test; completion callbacks run
 * on library threads and touch only an st_outbox (its mutex).  Waits are
 * on events with generous deadlines.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sipc.h"
#include "pool/pool.h"
#include "sipctest.h"
#include "slotpeek.h"
#include "testlib.h"

#define WAIT_MS 20000           /* generous deadline for any event */

static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };

static sipc_supervisor *
start(unsigned queue_timeout_ms, unsigned ring_frames)
{
	struct sipc_config c;

	st_cfg_base(&c, "echo", NULL, 1);
	c.max_inflight = 1;
	c.queue_timeout_ms = queue_timeout_ms;
	if (ring_frames > 0)
		c.ring_frames = ring_frames;
	return st_start(&c, 1, WAIT_MS);
}

static struct sipc_result
got(unsigned i)
{
	struct sipc_result r;

	pthread_mutex_lock(&box.mu);
	CU_ASSERT_EQUAL(box.calls[i], 1);
	r = box.res[i];
	pthread_mutex_unlock(&box.mu);
	return r;
}

/* The worker busy for 3 s: the request behind it, with a budget of
 * 300 ms and a run deadline of 20 s, ends at its budget, REJECTED /
 * QUEUE_TIMEOUT, never written; `cfg_ms` or `req_ms` gives the budget. */
static void
budget_passes(unsigned cfg_ms, unsigned req_ms)
{
	struct st_outslot o[2] = { { &box, 0 }, { &box, 1 } };
	sipc_supervisor *s = start(cfg_ms, 0);
	struct sipc_result r;
	int64_t t0, dt;
	uint64_t k0;

	st_outbox_reset(&box);
	k0 = st_taken_total(s, 0);
	/* a budget (of the pool) does not cut what is written at once */
	(void)st_submit_cmd_opts(s, "sleep 3000", WAIT_MS, 0, 0, &o[0]);
	t0 = tl_now_ms();
	(void)st_submit_cmd_opts(s, "pid", WAIT_MS, 0, req_ms, &o[1]);
	CU_ASSERT_FATAL(st_outbox_wait(&box, 1, WAIT_MS));
	dt = tl_now_ms() - t0;
	r = got(1);
	TL_EQ(r.outcome, SIPC_OUTCOME_REJECTED);
	TL_EQ(r.error, SIPC_E_QUEUE_TIMEOUT);
	CU_ASSERT(!r.may_have_run);
	TL_EQ(r.attempts, 0);
	CU_ASSERT(dt >= 300);
	/* the sleep still runs: the budget ended it, not the worker */
	TL_EQ(st_worker_stats(s, 0).completed, 0);
	CU_ASSERT_FATAL(st_outbox_wait(&box, 2, WAIT_MS));
	TL_EQ(got(0).outcome, SIPC_OUTCOME_OK);
	TL_EQ(st_taken_total(s, 0) - k0, 1);
	st_outbox_release(&box);
	sipc_destroy(s);
}

/* rules: X11 */
static void
test_queue_budget_of_request(void)
{
	budget_passes(0, 300);
}

/* rules: X11 */
static void
test_queue_budget_of_pool(void)
{
	budget_passes(300, 0);
}

/* A request's own budget overrides the pool's: 20 s against 300 ms, so
 * it waits out the 1 s sleep and runs. */
static void
test_queue_budget_request_overrides_pool(void)
{
	struct st_outslot o[2] = { { &box, 0 }, { &box, 1 } };
	sipc_supervisor *s = start(300, 0);

	st_outbox_reset(&box);
	(void)st_submit_cmd_opts(s, "sleep 1000", WAIT_MS, 0, 0, &o[0]);
	(void)st_submit_cmd_opts(s, "pid", WAIT_MS, 0, WAIT_MS, &o[1]);
	CU_ASSERT_FATAL(st_outbox_wait(&box, 2, WAIT_MS));
	TL_EQ(got(0).outcome, SIPC_OUTCOME_OK);
	TL_EQ(got(1).outcome, SIPC_OUTCOME_OK);
	st_outbox_release(&box);
	sipc_destroy(s);
}

/* The run deadline passing first ends a queued request TIMEOUT (never
 * written), not by its budget. */
/* rules: X11 X1 */
static void
test_queue_budget_deadline_first_is_timeout(void)
{
	struct st_outslot o[2] = { { &box, 0 }, { &box, 1 } };
	sipc_supervisor *s = start(0, 0);
	struct sipc_result r;

	st_outbox_reset(&box);
	(void)st_submit_cmd_opts(s, "sleep 2000", WAIT_MS, 0, 0, &o[0]);
	(void)st_submit_cmd_opts(s, "pid", 200, 0, 1500, &o[1]);
	CU_ASSERT_FATAL(st_outbox_wait(&box, 1, WAIT_MS));
	r = got(1);
	TL_EQ(r.outcome, SIPC_OUTCOME_TIMEOUT);
	TL_EQ(r.error, SIPC_E_TIMEOUT);
	CU_ASSERT(!r.may_have_run);
	CU_ASSERT_FATAL(st_outbox_wait(&box, 2, WAIT_MS));
	st_outbox_release(&box);
	sipc_destroy(s);
}

/* A submitter blocked on a full ring (one place, taken) stops at its
 * budget: the outcome is delivered on its thread before sipc_submit()
 * returns. */
static void
test_queue_budget_ends_blocked_submit(void)
{
	struct st_outslot o[3] = { { &box, 0 }, { &box, 1 }, { &box, 2 } };
	sipc_supervisor *s = start(0, 1);
	struct sipc_result r;
	int64_t t0;

	st_outbox_reset(&box);
	(void)st_submit_cmd_opts(s, "sleep 3000", WAIT_MS, 0, 0, &o[0]);
	CU_ASSERT_FATAL(st_stats_wait(s, st_pred_one_inflight, NULL, WAIT_MS));
	/* fills the ring */
	(void)st_submit_cmd_opts(s, "pid", WAIT_MS, 0, 0, &o[1]);
	t0 = tl_now_ms();
	/* waits for room */
	(void)st_submit_cmd_opts(s, "pid", WAIT_MS, 0, 300, &o[2]);
	CU_ASSERT(tl_now_ms() - t0 >= 300);
	TL_EQ(st_outbox_total(&box), 1);
	r = got(2);
	TL_EQ(r.outcome, SIPC_OUTCOME_REJECTED);
	TL_EQ(r.error, SIPC_E_QUEUE_TIMEOUT);
	CU_ASSERT_FATAL(st_outbox_wait(&box, 3, WAIT_MS));
	TL_EQ(got(0).outcome, SIPC_OUTCOME_OK);
	TL_EQ(got(1).outcome, SIPC_OUTCOME_OK);
	st_outbox_release(&box);
	sipc_destroy(s);
}

/* The key loads from a file and the environment; out of range is
 * refused by name, changing nothing. */
static void
test_queue_budget_key_loads(void)
{
	char path[] = "/tmp/sipc-qb-XXXXXX", err[256];
	struct sipc_config c;
	sipc_config_store *st = NULL;
	char *env[] = { "SIPC_QUEUE_TIMEOUT_MS=750", NULL };
	char *bad[] = { "SIPC_QUEUE_TIMEOUT_MS=86400001", NULL };
	FILE *f;
	int fd;

	CU_ASSERT_FATAL((fd = mkstemp(path)) >= 0);
	CU_ASSERT_FATAL((f = fdopen(fd, "w")) != NULL);
	fputs("environment = development\nqueue_timeout_ms = 2500\n", f);
	fclose(f);
	sipc_config_init(&c);
	TL_EQ(sipc_config_load_file(path, &c, &st, err, sizeof(err)), 0);
	TL_EQ(c.queue_timeout_ms, 2500);
	TL_EQ(sipc_config_load_env(env, &c, &st, err, sizeof(err)), 0);
	TL_EQ(c.queue_timeout_ms, 750);
	TL_EQ(sipc_config_load_env(bad, &c, &st, err, sizeof(err)), SIPC_E_CONFIG);
	CU_ASSERT(strstr(err, "SIPC_QUEUE_TIMEOUT_MS") != NULL);
	TL_EQ(c.queue_timeout_ms, 750);
	unlink(path);
	sipc_config_store_free(st);
	sipc_config_init(&c);
	TL_EQ(c.queue_timeout_ms, 0);
}

static const tl_test tests[] = {
	{ "test_queue_budget_of_request", test_queue_budget_of_request },
	{ "test_queue_budget_of_pool", test_queue_budget_of_pool },
	{ "test_queue_budget_request_overrides_pool",
	  test_queue_budget_request_overrides_pool },
	{ "test_queue_budget_deadline_first_is_timeout",
	  test_queue_budget_deadline_first_is_timeout },
	{ "test_queue_budget_ends_blocked_submit",
	  test_queue_budget_ends_blocked_submit },
	{ "test_queue_budget_key_loads", test_queue_budget_key_loads },
	{ NULL, NULL }
};

int
main(void)
{
	st_no_core_files();
	tl_suite("queue_budget", tests);
	return tl_run();
}

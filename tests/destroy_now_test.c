/*
 * destroy_now_test.c - sipc_destroy_now() ends the pool at once and
 * gives every pending request its true outcome: REJECTED (never sent)
 * for what was still queued, the worker's reply to the CANCEL for a
 * written request whose handler watches for it, UNKNOWN for one whose
 * handler ignores it; every worker ended, within the bound of
 * sipc_create(3).
 *
 * Threads: the CUnit thread drives every test; completion and log
 * callbacks run on library threads (or, for REJECTED ones, on the
 * destroying thread) and touch only the mutex-guarded captures
 * (sipctest.c).  Waits are on events with generous deadlines.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sipc.h"
#include "sipc_worker.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 20000
#define CANCEL_GRACE_MS 1500
#define GRACE_MS 300
#define SLACK_MS 3000           /* reaping and joining on a loaded host */

static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };

static bool
both_busy(void *arg)
{
	return st_worker_stats(arg, 0).inflight == 1 &&
	    st_worker_stats(arg, 1).inflight == 1;
}

static void
submit_data(sipc_supervisor *s, const char *p, struct st_outslot *o)
{
	struct sipc_request rq = { .payload = p, .len = strlen(p) };

	CU_ASSERT_FATAL(sipc_submit(s, &rq, st_outbox_done, o, NULL) == 0);
}

/*
 * Two workers, one request in flight each (no deadline): one handler
 * watches its cancel fd, one ignores it; two more requests wait in the
 * rings.  sipc_destroy_now() returns well before drain_ms, with one
 * outcome per request, each the true one.
 */
/* rules: S6 */
static void
test_destroy_now_true_outcomes(void)
{
	char *const argv[] = { "cancelwait", NULL };
	struct st_outslot o[4];
	struct sipc_config c;
	sipc_supervisor *s;
	pid_t pid[2];
	int64_t t0, took;
	unsigned i;

	st_cfg_base(&c, "cancelwait", argv, 2);
	c.max_inflight = 1;
	c.cancel_grace_ms = CANCEL_GRACE_MS;
	c.grace_ms = GRACE_MS;
	c.drain_ms = 60000;             /* sipc_destroy() would wait it all */
	s = st_start(&c, 2, WAIT_MS);
	for (i = 0; i < 4; i++)
		o[i] = (struct st_outslot){ &box, i };
	st_submit_cmd(s, "fd 60000", 0, &o[0]);
	st_submit_cmd(s, "ignore 60000", 0, &o[1]);
	CU_ASSERT_FATAL(tl_wait_until(both_busy, s, WAIT_MS));
	submit_data(s, "queued1", &o[2]);
	submit_data(s, "queued2", &o[3]);
	pid[0] = st_worker_stats(s, 0).pid;
	pid[1] = st_worker_stats(s, 1).pid;
	t0 = tl_now_ms();
	CU_ASSERT_EQUAL(sipc_destroy_now(s), 0);
	took = tl_now_ms() - t0;
	if (getenv("SIPC_TEST_VERBOSE") != NULL ||
	    took >= CANCEL_GRACE_MS + GRACE_MS + SLACK_MS)
		fprintf(stderr, "sipc_destroy_now took %" PRId64 " ms\n", took);
	CU_ASSERT(took < CANCEL_GRACE_MS + GRACE_MS + SLACK_MS);
	pthread_mutex_lock(&box.mu);
	for (i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(box.calls[i], 1);
	/* the watching handler's own answer to the CANCEL */
	CU_ASSERT_EQUAL(box.res[0].outcome, SIPC_OUTCOME_WORKER_ERROR);
	CU_ASSERT_EQUAL(box.res[0].worker_error_code, SIPC_WORKER_E_CANCELLED);
	/* the one that ignored it may have run */
	CU_ASSERT_EQUAL(box.res[1].outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT(box.res[1].may_have_run);
	/* never written: safe to resubmit */
	for (i = 2; i < 4; i++) {
		CU_ASSERT_EQUAL(box.res[i].outcome, SIPC_OUTCOME_REJECTED);
		CU_ASSERT(!box.res[i].may_have_run);
		CU_ASSERT_EQUAL(box.res[i].error, SIPC_E_SHUTDOWN);
	}
	pthread_mutex_unlock(&box.mu);
	for (i = 0; i < 2; i++)
		CU_ASSERT(pid[i] > 0 && !tl_pid_alive(pid[i]));
	st_outbox_release(&box);
	st_outbox_reset(&box);
}

/* With nothing in flight it does not wait for any grace. */
/* rules: S6 */
static void
test_destroy_now_idle_pool_at_once(void)
{
	char *const argv[] = { "cancelwait", NULL };
	struct sipc_config c;
	sipc_supervisor *s;
	int64_t t0;

	st_cfg_base(&c, "cancelwait", argv, 2);
	c.cancel_grace_ms = 30000;
	c.grace_ms = GRACE_MS;
	s = st_start(&c, 2, WAIT_MS);
	t0 = tl_now_ms();
	CU_ASSERT_EQUAL(sipc_destroy_now(s), 0);
	CU_ASSERT(tl_now_ms() - t0 < GRACE_MS + SLACK_MS);
	CU_ASSERT_EQUAL(sipc_destroy_now(NULL), 0);
}

static const tl_test tests[] = {
	{ "test_destroy_now_true_outcomes", test_destroy_now_true_outcomes },
	{ "test_destroy_now_idle_pool_at_once",
	  test_destroy_now_idle_pool_at_once },
	{ NULL, NULL }
};

int
main(void)
{
	st_no_core_files();
	tl_suite("destroy_now", tests);
	return tl_run();
}

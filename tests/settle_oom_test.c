/*
 * settle_oom_test.c - the lists the settle code gathers requests in
 * cannot grow (an allocation failure, here the test hook
 * sipc__collect_max): every request still gets its outcome when its
 * worker dies or its deadline passes, in as many rounds as it takes.
 *
 * Threads: the CUnit thread drives every test; completion callbacks run
 * on library threads and touch only an st_outbox (its mutex).  Waits are
 * on events with generous deadlines.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "sipc.h"
#include "pool/pool.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 20000           /* generous deadline for any event */
#define N 100

static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };

static sipc_supervisor *
start(void)
{
	struct sipc_config c;

	st_cfg_base(&c, "echo", NULL, 1);
	c.max_inflight = 128;
	c.restart_intensity = 100;
	return st_start(&c, 1, WAIT_MS);
}

static bool
all_in_flight(const struct sipc_stats *st, void *arg)
{
	return st->workers[0].inflight == *(unsigned *)arg;
}

/*
 * 100 requests in flight on one worker ("hang": never answered), the
 * lists capped at 40: the worker dies, and each of the 100 ends (UNKNOWN:
 * written, may have run), none left waiting.
 */
static void
test_settle_oom_worker_end(void)
{
	static struct st_outslot o[N + 1];
	sipc_supervisor *s = start();
	unsigned i, unknown = 0, want = N;

	st_outbox_reset(&box);
	for (i = 0; i < N; i++) {
		o[i] = (struct st_outslot){ &box, i };
		st_submit_cmd(s, "hang", WAIT_MS, &o[i]);
	}
	CU_ASSERT_FATAL(st_stats_wait(s, all_in_flight, &want, WAIT_MS));
	atomic_store(&sipc__collect_max, 40);
	o[N] = (struct st_outslot){ &box, N };
	st_submit_cmd(s, "crash exit 1", WAIT_MS, &o[N]);
	CU_ASSERT(st_outbox_wait(&box, N + 1, WAIT_MS));
	atomic_store(&sipc__collect_max, 0);
	pthread_mutex_lock(&box.mu);
	for (i = 0; i < N; i++)
		unknown += box.calls[i] == 1 &&
		    box.res[i].outcome == SIPC_OUTCOME_UNKNOWN;
	pthread_mutex_unlock(&box.mu);
	TL_EQ(unknown, N);
	st_outbox_release(&box);
	sipc_destroy(s);
}

/* 100 requests in flight whose deadlines pass together, lists capped at
 * 40: each ends TIMEOUT at its deadline round, none is missed. */
static void
test_settle_oom_deadlines(void)
{
	static struct st_outslot o[N];
	sipc_supervisor *s = start();
	unsigned i, timeouts = 0, want = N;

	st_outbox_reset(&box);
	atomic_store(&sipc__collect_max, 40);
	for (i = 0; i < N; i++) {
		o[i] = (struct st_outslot){ &box, i };
		st_submit_cmd(s, "hang", 1000, &o[i]);
	}
	CU_ASSERT(st_stats_wait(s, all_in_flight, &want, WAIT_MS));
	CU_ASSERT(st_outbox_wait(&box, N, WAIT_MS));
	atomic_store(&sipc__collect_max, 0);
	pthread_mutex_lock(&box.mu);
	for (i = 0; i < N; i++)
		timeouts += box.calls[i] == 1 &&
		    box.res[i].outcome == SIPC_OUTCOME_TIMEOUT;
	pthread_mutex_unlock(&box.mu);
	TL_EQ(timeouts, N);
	st_outbox_release(&box);
	sipc_destroy(s);
}

static const tl_test tests[] = {
	{ "test_settle_oom_worker_end", test_settle_oom_worker_end },
	{ "test_settle_oom_deadlines", test_settle_oom_deadlines },
	{ NULL, NULL }
};

int
main(void)
{
	st_no_core_files();
	tl_suite("settle_oom", tests);
	return tl_run();
}

/*
 * steal_test.c - no request waits behind a slow or stuck handler while
 * another worker could take it (src/pool/steal.c): requests queued to a busy
 * worker and not yet written go to a worker that is free.
 *
 * Threads: the CUnit thread drives every test; completion callbacks run
 * on library threads and touch only `done` under its mutex.  Waits are
 * on events with generous deadlines.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sipc.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 30000
#define MAXREQ 64

struct done {
	pthread_mutex_t mu;
	unsigned n, calls[MAXREQ];
	int64_t sent[MAXREQ], at[MAXREQ];
	enum sipc_outcome outcome[MAXREQ];
};
static struct done done = { .mu = PTHREAD_MUTEX_INITIALIZER };
struct slot_arg { unsigned i; };
static struct slot_arg args[MAXREQ];

static void
on_done(void *arg, struct sipc_result *res)
{
	unsigned i = ((struct slot_arg *)arg)->i;

	pthread_mutex_lock(&done.mu);
	if (done.calls[i]++ == 0) {
		done.at[i] = tl_now_ms();
		done.outcome[i] = res->outcome;
	}
	done.n++;
	pthread_mutex_unlock(&done.mu);
	sipc_result_release(res);
}

static bool
all_done(void *arg)
{
	bool r;

	pthread_mutex_lock(&done.mu);
	r = done.n >= *(unsigned *)arg;
	pthread_mutex_unlock(&done.mu);
	return r;
}

/* Submit "\0CMD cmd" (cmd NULL: a data payload) as request i. */
static void
submit(sipc_supervisor *s, unsigned i, const char *cmd, unsigned timeout_ms)
{
	char p[64];
	size_t len;

	if (cmd == NULL) {
		len = (size_t)snprintf(p, sizeof(p), "quick%u", i);
	} else {
		memcpy(p, "\0CMD", 4);
		len = 4 + (size_t)snprintf(p + 4, sizeof(p) - 4, "%s", cmd);
	}
	struct sipc_request rq = { .payload = p, .len = len,
	    .timeout_ms = timeout_ms };
	args[i].i = i;
	pthread_mutex_lock(&done.mu);
	done.sent[i] = tl_now_ms();
	pthread_mutex_unlock(&done.mu);
	CU_ASSERT_FATAL(sipc_submit(s, &rq, on_done, &args[i], NULL) == 0);
}

static sipc_supervisor *
start(unsigned workers)
{
	char *const argv[] = { "cancelwait", NULL };
	struct sipc_config c;

	pthread_mutex_lock(&done.mu);
	memset(done.calls, 0, sizeof(done.calls));
	done.n = 0;
	pthread_mutex_unlock(&done.mu);
	st_cfg_base(&c, "cancelwait", argv, workers);
	c.max_inflight = 1;             /* a conversion at a time */
	c.cancel_grace_ms = 300;
	return st_start(&c, workers, WAIT_MS);
}

/*
 * 4 workers, one request at a time each: one takes 8 s, three 200 ms,
 * then 40 quick ones.  Every quick one is done within a second of its
 * submit: none waits for the slow one.
 */
/* rules: R9 */
static void
test_steal_quick_ones_pass_a_slow_one(void)
{
	unsigned i, n = 44, late = 0;
	int64_t worst = 0, t;
	sipc_supervisor *s = start(4);

	submit(s, 0, "ignore 8000", WAIT_MS);
	for (i = 1; i < 4; i++)
		submit(s, i, "ignore 200", WAIT_MS);
	for (i = 4; i < n; i++)
		submit(s, i, NULL, WAIT_MS);
	CU_ASSERT_FATAL(tl_wait_until(all_done, &n, WAIT_MS));
	pthread_mutex_lock(&done.mu);
	for (i = 0; i < n; i++) {
		CU_ASSERT_EQUAL(done.calls[i], 1);
		CU_ASSERT_EQUAL(done.outcome[i], SIPC_OUTCOME_OK);
	}
	for (i = 4; i < n; i++) {
		t = done.at[i] - done.sent[i];
		worst = t > worst ? t : worst;
		late += t >= 1000;
	}
	pthread_mutex_unlock(&done.mu);
	if (late > 0)
		fprintf(stderr, "%u of 40 quick requests took 1 s or more "
		    "(worst %" PRId64 " ms)\n", late, worst);
	CU_ASSERT_EQUAL(late, 0);
	sipc_destroy(s);
}

/*
 * One document hangs (its deadline far away); 30 documents of 100 ms
 * each, with a 6-s deadline, submitted together behind it: all of them
 * finish OK on the other three workers within their deadlines.
 */
/* rules: R9 */
static void
test_steal_documents_behind_a_hung_one_in_deadline(void)
{
	unsigned i, n = 31, ok = 0;
	sipc_supervisor *s = start(4);

	submit(s, 0, "ignore 60000", 20000);
	for (i = 1; i < n; i++)
		submit(s, i, "ignore 100", 6000);
	n = 30;                         /* the hung one still runs */
	CU_ASSERT_FATAL(tl_wait_until(all_done, &n, WAIT_MS));
	pthread_mutex_lock(&done.mu);
	for (i = 1; i < 31; i++)
		ok += done.calls[i] == 1 && done.outcome[i] == SIPC_OUTCOME_OK;
	CU_ASSERT_EQUAL(done.calls[0], 0);
	pthread_mutex_unlock(&done.mu);
	if (ok != 30)
		fprintf(stderr, "%u of 30 documents behind a hung one OK\n", ok);
	CU_ASSERT_EQUAL(ok, 30);
	sipc_destroy(s);
	pthread_mutex_lock(&done.mu);
	CU_ASSERT_EQUAL(done.calls[0], 1);   /* destroy ended it */
	pthread_mutex_unlock(&done.mu);
}

static const tl_test tests[] = {
	{ "test_steal_quick_ones_pass_a_slow_one",
	  test_steal_quick_ones_pass_a_slow_one },
	{ "test_steal_documents_behind_a_hung_one_in_deadline",
	  test_steal_documents_behind_a_hung_one_in_deadline },
	{ NULL, NULL }
};

int
main(void)
{
	st_no_core_files();
	tl_suite("steal", tests);
	return tl_run();
}

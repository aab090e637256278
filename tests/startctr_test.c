/*
 * startctr_test.c - CONTRACT.md A5, the start counter, through the whole
 * library with real processes: the startctr fixture (a worker written
 * without the runtime) offers its counter in a chosen way in its first
 * generation and serves echo through the runtime afterwards.
 *
 * - A counter that is missing, unsealed, too short or not a memfd is
 *   refused at the handshake, said in the log, and its descriptor is
 *   closed; the next generation serves.
 * - What the counter says decides, when the worker dies, which of the
 *   requests written to it may have run: those at or before its value,
 *   and those it ACCEPTed; the others move and run once elsewhere.
 * - A descriptor sent with a HELLO that does not announce a counter, or
 *   with any later frame, is never kept by the supervisor.
 *
 * Threads: the CUnit thread; outcomes arrive in an st_outbox on library
 * threads.  Waits are on events with generous deadlines.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sipc.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 20000
#define NREQ 3                  /* what fixtures/startctr.c waits for */

/* Descriptors of this process that are a memfd the fixture made. */
static int
fixture_memfds(void)
{
	return tl_count_fds_to(0, "memfd:sipc-test-ctr");
}

/* A worker whose first generation offers an unfit counter: refused at
 * the handshake with `why` in the log; the second generation serves. */
static void
run_refused(const char *mode, const char *why)
{
	char *argv[] = { "startctr", (char *)mode, NULL };
	struct st_gen_want g = { 0, 2 };
	struct sipc_config c;
	struct sipc_result r;
	struct sipc_worker_stats ws;
	sipc_supervisor *s = NULL;
	char needle[160], err[256];

	st_cfg_base(&c, "startctr", argv, 1);
	st_log_reset();
	/* not st_start(): sipc_wait_ready() reports the first failure */
	CU_ASSERT_FATAL(sipc_create(&c, err, sizeof(err), &s) == 0);
	CU_ASSERT_FATAL(st_stats_wait(s, st_pred_gen_ready, &g, WAIT_MS));
	snprintf(needle, sizeof(needle), "worker's start counter refused: %s",
	    why);
	CU_ASSERT(st_log_has(needle));
	CU_ASSERT(st_log_has("protocol violation: unfit start counter"));
	ws = st_worker_stats(s, 0);
	CU_ASSERT_EQUAL(ws.last_exit.kind, SIPC_EXIT_HANDSHAKE);
	CU_ASSERT_EQUAL(fixture_memfds(), 0);
	st_call_cmd(s, "x", WAIT_MS, 0, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_OK);
	sipc_result_release(&r);
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
}

static void
test_startctr_refused_without_descriptor(void)
{
	run_refused("none", "no descriptor came with the HELLO");
}

static void
test_startctr_refused_unsealed(void)
{
	run_refused("unsealed", "the memfd is not sealed against shrinking");
}

static void
test_startctr_refused_short(void)
{
	run_refused("short", "the memfd is shorter than 8 bytes");
}

static void
test_startctr_refused_not_memfd(void)
{
	run_refused("pipe", "the descriptor takes no seals (not a memfd)");
}

/*
 * NREQ requests written to a first generation that sets its counter to
 * `k` (and with `accept`, ACCEPTs the request after position k), then
 * dies.  The fixture logs the ids in arrival order; the requests at
 * positions 1..k (k+1 with `accept`) end UNKNOWN, may have run, and ran
 * nowhere else; the others move to the second generation and end OK on
 * their second attempt.
 */
static void
run_count(unsigned k, bool accept)
{
	static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };
	char mode[32], log[64], env[96], *envset[] = { env, NULL };
	char *argv[] = { "startctr", mode, NULL };
	struct st_outslot o[NREQ];
	unsigned long long order[NREQ];
	uint64_t ids[NREQ];
	unsigned i, j, started = k + (accept ? 1 : 0);
	struct sipc_config c;
	sipc_supervisor *s;
	FILE *f;
	int fd;

	if (st_skip_sandboxed("shares a file with the worker"))
		return;
	snprintf(mode, sizeof(mode), "count:%u%s", k, accept ? ":accept" : "");
	snprintf(log, sizeof(log), "/tmp/sipc-startctr-XXXXXX");
	CU_ASSERT_FATAL((fd = mkstemp(log)) >= 0);
	close(fd);
	snprintf(env, sizeof(env), "SIPC_STARTCTR_LOG=%s", log);
	st_outbox_reset(&box);
	st_cfg_base(&c, "startctr", argv, 1);
	c.env_set = (const char *const *)envset;
	c.max_inflight = 4;
	s = st_start(&c, 1, WAIT_MS);
	for (i = 0; i < NREQ; i++) {
		o[i] = (struct st_outslot){ &box, i };
		CU_ASSERT_FATAL(sipc_submit(s, &(struct sipc_request){
		    .payload = "data", .len = 4 }, st_outbox_done, &o[i],
		    &ids[i]) == 0);
	}
	CU_ASSERT_FATAL(st_outbox_wait(&box, NREQ, WAIT_MS));
	CU_ASSERT_FATAL((f = fopen(log, "re")) != NULL);
	for (i = 0; i < NREQ; i++)
		CU_ASSERT_FATAL(fscanf(f, "%llu", &order[i]) == 1);
	fclose(f);
	pthread_mutex_lock(&box.mu);
	for (i = 0; i < NREQ; i++) {            /* arrival position i + 1 */
		struct sipc_result *r = NULL;

		for (j = 0; j < NREQ; j++)
			if (ids[j] == order[i])
				r = &box.res[j];
		CU_ASSERT_FATAL(r != NULL);
		if (i < started) {
			CU_ASSERT_EQUAL(r->outcome, SIPC_OUTCOME_UNKNOWN);
			CU_ASSERT(r->may_have_run);
			CU_ASSERT_EQUAL(r->attempts, 1);
		} else {
			CU_ASSERT_EQUAL(r->outcome, SIPC_OUTCOME_OK);
			CU_ASSERT_EQUAL(r->attempts, 2);
			CU_ASSERT(r->reply_len == 4 &&
			    memcmp(r->reply, "data", 4) == 0);
		}
	}
	pthread_mutex_unlock(&box.mu);
	st_outbox_release(&box);
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
	unlink(log);
}

static void
test_startctr_counter_names_started(void)
{
	run_count(1, false);
}

static void
test_startctr_zero_means_none_started(void)
{
	run_count(0, false);
}

static void
test_startctr_accept_frame_counts_too(void)
{
	run_count(1, true);
}

/* A counter past every request written: all of them may have run. */
static void
test_startctr_past_the_end_all_started(void)
{
	run_count(NREQ, false);
}

/* Descriptors the supervisor did not ask for are not kept: one with a
 * HELLO that announces no counter, one with every reply. */
static void
run_unasked(const char *mode)
{
	char *argv[] = { "startctr", (char *)mode, NULL };
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;

	st_cfg_base(&c, "startctr", argv, 1);
	s = st_start(&c, 1, WAIT_MS);
	for (int i = 0; i < 20; i++) {
		st_call_cmd(s, "x", WAIT_MS, 0, &r);
		CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_OK);
		sipc_result_release(&r);
	}
	CU_ASSERT_EQUAL(st_worker_stats(s, 0).generation, 1);
	CU_ASSERT_EQUAL(fixture_memfds(), 0);
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
}

static void
test_startctr_descriptor_without_flag_closed(void)
{
	run_unasked("noflag");
}

static void
test_startctr_descriptors_on_replies_not_taken(void)
{
	run_unasked("later");
}

int
main(void)
{
	tl_suite("startctr", (tl_test[]){
	    { "test_startctr_refused_without_descriptor",
	      test_startctr_refused_without_descriptor },
	    { "test_startctr_refused_unsealed", test_startctr_refused_unsealed },
	    { "test_startctr_refused_short", test_startctr_refused_short },
	    { "test_startctr_refused_not_memfd",
	      test_startctr_refused_not_memfd },
	    { "test_startctr_counter_names_started",
	      test_startctr_counter_names_started },
	    { "test_startctr_zero_means_none_started",
	      test_startctr_zero_means_none_started },
	    { "test_startctr_accept_frame_counts_too",
	      test_startctr_accept_frame_counts_too },
	    { "test_startctr_past_the_end_all_started",
	      test_startctr_past_the_end_all_started },
	    { "test_startctr_descriptor_without_flag_closed",
	      test_startctr_descriptor_without_flag_closed },
	    { "test_startctr_descriptors_on_replies_not_taken",
	      test_startctr_descriptors_on_replies_not_taken },
	    { NULL, NULL } });
	return tl_run();
}

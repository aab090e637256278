/*
 * spares_test.c - warm spares: `spares` more workers start and handshake
 * but are given nothing; a serving worker that ends, is stopped or
 * retires hands its place to a ready spare at once (the next request
 * needs no start), and becomes the spare once restarted.
 *
 * Threads: the CUnit thread only (sipc_call()).  Waits are on events
 * with generous deadlines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sipc.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 20000           /* generous deadline for any event */

static sipc_supervisor *
start(unsigned workers, unsigned spares, unsigned max_requests)
{
	struct sipc_config c;

	st_cfg_base(&c, "echo", NULL, workers);
	c.spares = spares;
	c.max_requests = max_requests;
	return st_start(&c, workers + spares, WAIT_MS);
}

/* Slot `arg` is ready again and is the spare. */
static bool
slot0_spare_ready(const struct sipc_stats *st, void *arg)
{
	return st->nworkers == 2 && st->workers[0].spare &&
	    st->workers[0].state == SIPC_WS_READY && !st->workers[1].spare;
}

/*
 * One worker and one spare: requests go to the worker only.  The worker
 * dies in a request; the next call is served by the spare's own first
 * generation (no start waited for), and the dead slot comes back as the
 * spare.
 */
/* rules: P8 */
static void
test_spares_take_a_dead_workers_place(void)
{
	sipc_supervisor *s = start(1, 1, 0);
	struct sipc_worker_stats w0, w1;
	struct sipc_result r;
	struct sipc_stats st;
	unsigned i, on0 = 0;

	w0 = st_worker_stats(s, 0);
	w1 = st_worker_stats(s, 1);
	CU_ASSERT(!w0.spare);
	CU_ASSERT(w1.spare);
	for (i = 0; i < 20; i++) {
		st_call_cmd(s, NULL, WAIT_MS, 0, &r);
		on0 += r.outcome == SIPC_OUTCOME_OK && r.worker_id == 0;
		sipc_result_release(&r);
	}
	TL_EQ(on0, 20);
	TL_EQ(st_worker_stats(s, 1).completed, 0);
	st_call_cmd(s, "crash exit 3", WAIT_MS, 0, &r);
	TL_EQ(r.outcome, SIPC_OUTCOME_UNKNOWN);
	sipc_result_release(&r);
	st_call_cmd(s, NULL, WAIT_MS, 0, &r);
	TL_EQ(r.outcome, SIPC_OUTCOME_OK);
	TL_EQ(r.worker_id, 1);
	TL_EQ(r.generation, w1.generation);
	sipc_result_release(&r);
	CU_ASSERT(st_stats_wait(s, slot0_spare_ready, NULL, WAIT_MS));
	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	TL_EQ(st.spare_takeovers, 1);
	TL_EQ(st.workers[0].restarts, 1);
	TL_EQ(st.workers[1].restarts, 0);
	sipc_stats_release(&st);
	sipc_destroy(s);
}

/* A spare is ready to take over: READY and not itself retiring, and
 * the serving slot ready too. */
static bool
spare_ready(const struct sipc_stats *st, void *arg)
{
	unsigned i, ok = 0;

	for (i = 0; i < st->nworkers; i++)
		ok += st->workers[i].state == SIPC_WS_READY &&
		    !st->workers[i].retiring;
	return ok == st->nworkers;
}

/*
 * Recycling every two requests with a spare: each retirement hands the
 * place over, so ten calls in a row are all served by a worker that was
 * already ready (attempts 1, OK), the two slots taking turns.
 */
/* rules: P8 */
static void
test_spares_take_over_from_recycled(void)
{
	sipc_supervisor *s = start(1, 1, 2);
	struct sipc_result r;
	struct sipc_stats st;
	unsigned i, ok = 0, turns = 0;
	int last = -1;

	for (i = 0; i < 10; i++) {
		st_call_cmd(s, NULL, WAIT_MS, 0, &r);
		ok += r.outcome == SIPC_OUTCOME_OK && r.attempts == 1;
		turns += last >= 0 && (int)r.worker_id != last;
		last = (int)r.worker_id;
		sipc_result_release(&r);
		/* the next retirement needs the other one ready again */
		CU_ASSERT(st_stats_wait(s, spare_ready, NULL, WAIT_MS));
	}
	TL_EQ(ok, 10);
	TL_EQ(turns, 4);
	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	TL_EQ(st.spare_takeovers, 5);
	TL_EQ(st.recycled_requests, 5);
	TL_EQ(st.restarts, 0);
	sipc_stats_release(&st);
	sipc_destroy(s);
}

/* workers + spares over 1024 is refused by name. */
static void
test_spares_bound(void)
{
	struct sipc_config c;
	sipc_supervisor *s = NULL;
	char err[256] = "";

	st_cfg_base(&c, "echo", NULL, 1000);
	c.spares = 25;
	TL_EQ(sipc_create(&c, err, sizeof(err), &s), SIPC_E_CONFIG);
	CU_ASSERT(strstr(err, "spares") != NULL);
	CU_ASSERT(s == NULL);
}

static const tl_test tests[] = {
	{ "test_spares_take_a_dead_workers_place",
	  test_spares_take_a_dead_workers_place },
	{ "test_spares_take_over_from_recycled",
	  test_spares_take_over_from_recycled },
	{ "test_spares_bound", test_spares_bound },
	{ NULL, NULL }
};

int
main(void)
{
	st_no_core_files();
	tl_suite("spares", tests);
	return tl_run();
}

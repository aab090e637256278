/*
 * spares_test.c - warm spares: `spares` more workers start and handshake
 * but are given nothing; a serving worker that ends, is stopped or
 * retires hands its place to a ready spare at once (the next request
 * needs no start), and becomes the spare once restarted.
 *
 * Threads: the CUnit thread only (sipc_call()).  Waits are on events
 * with generous deadlines.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* The gate FIFO that holds each worker before its HELLO: open it for
 * writing once a worker waits on it (which lets every waiting one go). */
static bool
gate_open(void *arg)
{
	int fd = open(arg, O_WRONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

struct gated { const char *gate; unsigned slot; };

/* Both slots READY, opening the gate for whichever still waits. */
static bool
both_ready(const struct sipc_stats *st, void *arg)
{
	struct gated *g = arg;

	(void)gate_open((void *)g->gate);
	return st->nworkers == 2 && st->workers[0].state == SIPC_WS_READY &&
	    st->workers[1].state == SIPC_WS_READY;
}

/* Slot 0 is the spare again, held at the gate before its HELLO, and
 * slot 1 serves. */
static bool
spare_held(const struct sipc_stats *st, void *arg)
{
	(void)arg;
	return st->nworkers == 2 && st->workers[0].spare &&
	    st->workers[0].state == SIPC_WS_STARTING &&
	    st->workers[0].generation == 2 && !st->workers[1].spare &&
	    st->workers[1].state == SIPC_WS_READY;
}

/* Slot 1 retired holding one request, and one more waits on its ring. */
static bool
retired_busy(const struct sipc_stats *st, void *arg)
{
	(void)arg;
	return st->nworkers == 2 && st->workers[1].retiring &&
	    st->workers[1].inflight == 1 && st->workers[1].queued == 1;
}

/*
 * A worker retires (max_requests 1) while the spare is still starting
 * (the one retired before it, restarted, held before its HELLO), so no
 * place is handed over then; it holds a long request, and the next one
 * waits on its ring, since a spare is given nothing.  Once the spare is
 * READY it takes the place at once: the waiting request is written to
 * it and answered while the retiring worker still holds its own, which
 * it finishes (it is not ended early).  Before, the place changed hands
 * only at the retiring worker's end: the request waited for the long
 * one (here 60 s, three times the wait below).
 */
/* rules: P8 */
static void
test_spares_take_over_when_ready_after_retire(void)
{
	static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };
	char dir[] = "/tmp/sipc-spare-XXXXXX", gate[64], env[96];
	char *envset[] = { env, NULL };
	struct st_outslot ol = { &box, 0 }, ox = { &box, 1 };
	struct sipc_worker_stats w1;
	struct sipc_config c;
	struct sipc_result r;
	struct sipc_stats st;
	sipc_supervisor *s;
	struct gated g;

	if (st_skip_sandboxed("shares a FIFO with the worker"))
		return;
	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(gate, sizeof(gate), "%s/gate", dir);
	CU_ASSERT_FATAL(mkfifo(gate, 0600) == 0);
	snprintf(env, sizeof(env), "SIPC_ECHO_HELLO_GATE=%s", gate);
	st_outbox_reset(&box);
	st_cfg_base(&c, "echo", NULL, 1);
	c.spares = 1;
	c.max_requests = 1;
	c.env_set = (const char *const *)envset;
	c.handshake_ms = 3 * WAIT_MS;
	c.stall_ms = 120000;
	CU_ASSERT_FATAL(sipc_create(&c, NULL, 0, &s) == 0);
	g = (struct gated){ gate, 0 };
	CU_ASSERT_FATAL(st_stats_wait(s, both_ready, &g, WAIT_MS));
	/* slot 0 retires, slot 1 takes its place; slot 0 restarts as the
	 * spare and waits at the gate */
	st_call_cmd(s, NULL, WAIT_MS, 0, &r);
	TL_EQ(r.outcome, SIPC_OUTCOME_OK);
	TL_EQ(r.worker_id, 0);
	sipc_result_release(&r);
	CU_ASSERT_FATAL(st_stats_wait(s, spare_held, NULL, WAIT_MS));
	w1 = st_worker_stats(s, 1);
	/* slot 1's one request: it retires with no READY spare */
	st_submit_cmd(s, "sleep 60000", 120000, &ol);
	st_submit_cmd(s, "sleep 1", 120000, &ox);
	CU_ASSERT_FATAL(st_stats_wait(s, retired_busy, NULL, WAIT_MS));
	TL_EQ(st_outbox_total(&box), 0);
	CU_ASSERT_FATAL(tl_wait_until(gate_open, gate, WAIT_MS));
	CU_ASSERT_FATAL(st_outbox_wait(&box, 1, WAIT_MS));
	pthread_mutex_lock(&box.mu);
	TL_EQ(box.calls[0], 0);           /* the long one still runs */
	TL_EQ(box.calls[1], 1);
	TL_EQ(box.res[1].outcome, SIPC_OUTCOME_OK);
	TL_EQ(box.res[1].worker_id, 0);
	TL_EQ(box.res[1].attempts, 1);
	pthread_mutex_unlock(&box.mu);
	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	/* the retiring worker is the same generation, still at work */
	TL_EQ(st.workers[1].generation, w1.generation);
	TL_EQ(st.workers[1].inflight, 1);
	CU_ASSERT(st.workers[1].retiring);
	CU_ASSERT(st.workers[1].spare);
	CU_ASSERT(!st.workers[0].spare);
	TL_EQ(st.spare_takeovers, 2);
	TL_EQ(st.restarts, 0);
	sipc_stats_release(&st);
	sipc_destroy(s);
	pthread_mutex_lock(&box.mu);
	TL_EQ(box.calls[0], 1);
	pthread_mutex_unlock(&box.mu);
	st_outbox_release(&box);
	unlink(gate);
	rmdir(dir);
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
	{ "test_spares_take_over_when_ready_after_retire",
	    test_spares_take_over_when_ready_after_retire },
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

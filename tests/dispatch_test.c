/*
 * dispatch_test.c - which worker a request goes to (CONTRACT C8):
 * cheap asynchronous requests gather on one worker, work slower than
 * gather_us never waits behind another request while a worker is idle,
 * gather_us = 0 spreads, synchronous calls never gather, and cheap work
 * wakes the lowest-numbered idle worker.
 *
 * Each test keeps every worker busy for as long as its burst takes to
 * submit (a slow fixture), or asks for a bound no echo can miss
 * (gather_us of one second), so what is asserted is the rule, not the
 * machine's speed.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "sipc.h"
#include "pool/pool.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 30000
#define NW 4

static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };

static struct sipc_config
cfg(const char *fixture, char *const *argv, unsigned gather_us)
{
	struct sipc_config c;

	st_cfg_base(&c, fixture, argv, NW);
	c.handshake_ms = WAIT_MS;
	c.gather_us = gather_us;
	return c;
}

/* Submit `n` asynchronous requests into box slots from..from+n-1 and
 * wait for their outcomes, which must all be OK. */
static void
burst(sipc_supervisor *s, unsigned from, unsigned n)
{
	static struct st_outslot o[ST_OUTBOX_MAX];
	static const char data[] = "gather";
	struct sipc_request r = { .payload = data, .len = sizeof(data),
	    .timeout_ms = WAIT_MS };
	unsigned i;

	for (i = from; i < from + n; i++) {
		o[i].box = &box;
		o[i].i = i;
		CU_ASSERT_FATAL(sipc_submit(s, &r, st_outbox_done, &o[i],
		    NULL) == 0);
	}
	CU_ASSERT_FATAL(st_outbox_wait(&box, from + n, WAIT_MS));
	for (i = from; i < from + n; i++)
		CU_ASSERT_EQUAL(box.res[i].outcome, SIPC_OUTCOME_OK);
}

/* How many different workers served box slots from..from+n-1. */
static unsigned
workers_used(unsigned from, unsigned n)
{
	bool seen[NW] = { false };
	unsigned i, k = 0;

	for (i = from; i < from + n; i++) {
		uint32_t w = box.res[i].worker_id;

		CU_ASSERT_FATAL(w < NW);
		if (!seen[w]) {
			seen[w] = true;
			k++;
		}
	}
	return k;
}

static void
run_burst(const char *fixture, char *const *argv, unsigned gather_us,
    unsigned n, unsigned want_workers)
{
	struct sipc_config c = cfg(fixture, argv, gather_us);
	sipc_supervisor *s = st_start(&c, NW, WAIT_MS);

	st_outbox_reset(&box);
	/* One reply first: the worker it came from has a measured time
	 * per reply, and is where the next asynchronous request looks. */
	burst(s, 0, 1);
	burst(s, 1, n);
	if (workers_used(1, n) != want_workers)
		fprintf(stderr, "%u requests went to %u workers, want %u\n",
		    n, workers_used(1, n), want_workers);
	CU_ASSERT_EQUAL(workers_used(1, n), want_workers);
	/* ... and the first of the burst went where the warm-up went. */
	if (want_workers == 1)
		CU_ASSERT_EQUAL(box.res[1].worker_id, box.res[0].worker_id);
	st_outbox_release(&box);
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
}

/* Echo answers in far less than a second: with gather_us at one second
 * all 16 requests of a burst join the worker the first one went to,
 * though three workers sit idle. */
/* rules: C8 */
static void
test_dispatch_cheap_requests_gather(void)
{
	run_burst("echo", NULL, 1000000, 16, 1);
}

/* A second a request against the default 1000 us: each request of a
 * burst of four goes to a worker of its own, never behind another. */
/* rules: C8 */
static void
test_dispatch_slow_requests_spread(void)
{
	char *argv[] = { "slow", "1000", NULL };

	run_burst("slow", argv, 1000, NW, NW);
}

/* gather_us = 0 spreads a burst of 300 ms requests over the four
 * workers (each stays busy while the burst is submitted, so an idle
 * one is always there for the next), where a bound of one second
 * gathers two of them on one. */
/* rules: C8 */
static void
test_dispatch_gather_off_spreads(void)
{
	char *argv[] = { "slow", "300", NULL };
	struct sipc_config c = cfg("slow", argv, 0);
	sipc_supervisor *s = st_start(&c, NW, WAIT_MS);

	st_outbox_reset(&box);
	burst(s, 0, 1);
	burst(s, 1, NW);
	CU_ASSERT_EQUAL(workers_used(1, NW), NW);
	st_outbox_release(&box);
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
	/* the spread above is gather_us's doing, not the fixture's */
	run_burst("slow", argv, 1000000, 2, 1);
}

/* Synchronous calls of 2 s from NW threads, each started once the one
 * before is written (so no two look at an idle worker together), with
 * a bound that would gather two of them: each goes to a worker of its
 * own. */
struct caller {
	sipc_supervisor *s;
	uint32_t worker;
	enum sipc_outcome outcome;
};

static void *
caller_main(void *arg)
{
	struct caller *k = arg;
	static const char data[] = "call";
	struct sipc_request r = { .payload = data, .len = sizeof(data),
	    .timeout_ms = WAIT_MS };
	struct sipc_result res;

	if (sipc_call(k->s, &r, &res) != 0) {
		k->outcome = SIPC_OUTCOME_REJECTED;
		return NULL;
	}
	k->outcome = res.outcome;
	k->worker = res.worker_id;
	sipc_result_release(&res);
	return NULL;
}

struct written { sipc_supervisor *s; unsigned n; };

static bool
n_written(void *arg)
{
	struct written *w = arg;
	unsigned i, sum = 0;

	for (i = 0; i < NW; i++)
		sum += st_worker_stats(w->s, i).inflight;
	return sum >= w->n;
}

/* rules: C8 */
static void
test_dispatch_calls_never_gather(void)
{
	char *argv[] = { "slow", "2000", NULL };
	struct sipc_config c = cfg("slow", argv, 1000000);
	sipc_supervisor *s = st_start(&c, NW, WAIT_MS);
	struct caller k[NW];
	pthread_t t[NW];
	bool seen[NW] = { false };
	unsigned i, used = 0;

	st_outbox_reset(&box);
	burst(s, 0, 1);                 /* a measured worker to gather on */
	st_outbox_release(&box);
	for (i = 0; i < NW; i++) {
		struct written w = { .s = s, .n = i + 1 };

		k[i] = (struct caller){ .s = s, .worker = NW };
		CU_ASSERT_FATAL(pthread_create(&t[i], NULL, caller_main,
		    &k[i]) == 0);
		CU_ASSERT(tl_wait_until(n_written, &w, WAIT_MS));
	}
	for (i = 0; i < NW; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < NW; i++) {
		CU_ASSERT_EQUAL(k[i].outcome, SIPC_OUTCOME_OK);
		CU_ASSERT_FATAL(k[i].worker < NW);
		if (!seen[k[i].worker]) {
			seen[k[i].worker] = true;
			used++;
		}
	}
	CU_ASSERT_EQUAL(used, NW);
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
}

/* The worker holding a written request, other than `not`; NW if none. */
struct holder { sipc_supervisor *s; unsigned not, found; };

static bool
holds_one(void *arg)
{
	struct holder *h = arg;

	for (unsigned i = 0; i < NW; i++)
		if (i != h->not && st_worker_stats(h->s, i).inflight > 0) {
			h->found = i;
			return true;
		}
	return false;
}

/*
 * When the worker being gathered on is full, a worker that already holds
 * requests comes before an idle one.  200 ms requests, gather_us one
 * second: a worker takes requests while (held + 1) x 200 ms fits in a
 * second.  D, the gathering worker, holds one (r0); B holds a call.  Five
 * more asynchronous requests: D takes three, then B, busy, takes the
 * rest, and the two idle workers get none.
 */
/* rules: C8 */
static void
test_dispatch_busy_worker_before_idle(void)
{
	char *argv[] = { "slow", "200", NULL };
	struct sipc_config c = cfg("slow", argv, 1000000);
	sipc_supervisor *s = st_start(&c, NW, WAIT_MS);
	struct holder hd = { .s = s, .not = NW }, hb;
	struct caller k = { .s = s, .worker = NW };
	static struct st_outslot o[8];
	static const char data[] = "busy";
	struct sipc_request r = { .payload = data, .len = sizeof(data),
	    .timeout_ms = WAIT_MS };
	pthread_t t;
	unsigned i;

	st_outbox_reset(&box);
	burst(s, 0, NW);                /* every worker answers once */
	for (i = 0; i < 7; i++)
		o[i] = (struct st_outslot){ &box, NW + i };
	/* r0 goes to the gathering worker D */
	CU_ASSERT_FATAL(sipc_submit(s, &r, st_outbox_done, &o[0], NULL) == 0);
	CU_ASSERT_FATAL(tl_wait_until(holds_one, &hd, WAIT_MS));
	/* a call goes to an idle worker, B */
	CU_ASSERT_FATAL(pthread_create(&t, NULL, caller_main, &k) == 0);
	hb = (struct holder){ .s = s, .not = hd.found };
	CU_ASSERT_FATAL(tl_wait_until(holds_one, &hb, WAIT_MS));
	for (i = 1; i <= 5; i++)
		CU_ASSERT_FATAL(sipc_submit(s, &r, st_outbox_done, &o[i],
		    NULL) == 0);
	pthread_join(t, NULL);
	CU_ASSERT_FATAL(st_outbox_wait(&box, NW + 6, WAIT_MS));
	CU_ASSERT_EQUAL(k.outcome, SIPC_OUTCOME_OK);
	CU_ASSERT_EQUAL(k.worker, hb.found);
	for (i = 0; i <= 5; i++) {
		uint32_t w = box.res[NW + i].worker_id;

		CU_ASSERT_EQUAL(box.res[NW + i].outcome, SIPC_OUTCOME_OK);
		if (w != hd.found && w != hb.found)
			fprintf(stderr, "request %u went to idle worker %u "
			    "(gathering on %u, busy %u)\n", i, w, hd.found,
			    hb.found);
		CU_ASSERT(w == hd.found || w == hb.found);
	}
	st_outbox_release(&box);
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
}

/*
 * Cheap work wakes the lowest-numbered idle worker, not the next in
 * turn.  200 ms requests, gather_us one second: a worker takes requests
 * while (held + 1) x its mean fits in a second, four or five.  After
 * every worker answered once, a burst of eight: G, the worker the last
 * request went to, takes its share, and the rest go to the
 * lowest-numbered other worker.  A call before the burst takes a turn,
 * so turns would begin past worker 0 and send them to another.
 */
/* rules: C8 */
static void
test_dispatch_cheap_wakes_lowest_idle(void)
{
	char *argv[] = { "slow", "200", NULL };
	struct sipc_config c = cfg("slow", argv, 1000000);
	sipc_supervisor *s = st_start(&c, NW, WAIT_MS);
	struct caller k = { .s = s, .worker = NW };
	uint32_t g, low;
	unsigned i;

	/* dispatch's own choice: no request moves for a slow writer */
	atomic_store(&sipc__steal_off, true);
	st_outbox_reset(&box);
	burst(s, 0, NW);                /* every worker answers once */
	/* a call takes the next turn: turns now begin past worker 0 */
	caller_main(&k);
	CU_ASSERT_EQUAL(k.outcome, SIPC_OUTCOME_OK);
	burst(s, NW, 1);                /* G: where the next one looks */
	g = box.res[NW].worker_id;
	low = g == 0 ? 1 : 0;
	burst(s, NW + 1, 8);
	for (i = NW + 1; i < NW + 9; i++) {
		uint32_t w = box.res[i].worker_id;

		if (w != g && w != low)
			fprintf(stderr, "request %u went to worker %u "
			    "(gathering on %u, lowest idle %u)\n", i, w, g,
			    low);
		CU_ASSERT(w == g || w == low);
	}
	CU_ASSERT_EQUAL(workers_used(NW + 1, 8), 2);
	st_outbox_release(&box);
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
	atomic_store(&sipc__steal_off, false);
}

/* ------------------------------------------------------- requeues */

/* Each of the two workers holds 2 written and 2 queued. */
static bool
pred_two_full(const struct sipc_stats *st, void *arg)
{
	(void)arg;
	return st->nworkers == 2 && st->pending == 8 &&
	    st->workers[0].inflight == 2 && st->workers[0].queued == 2 &&
	    st->workers[1].inflight == 2 && st->workers[1].queued == 2;
}

/* Slot 0 cools down, holding nothing. */
static bool
pred_slot0_cooled(const struct sipc_stats *st, void *arg)
{
	(void)arg;
	return st->nworkers == 2 && st->workers[0].state == SIPC_WS_COOLDOWN &&
	    st->workers[0].inflight == 0 && st->workers[0].queued == 0;
}

/*
 * Two workers, each holding 2 requests written (never read: stopped, so
 * provably never started) and a full queue of 2.  Worker 0 dies for the
 * second time in its restart window, so its slot cools down.  Its four
 * requests are accepted work: they go ahead of worker 1's full queue and
 * all eight end OK there.  Before, the four were refused
 * (REJECTED / SIPC_E_UNAVAILABLE) though worker 1 was READY.
 */
static void
test_dispatch_requeue_ahead_of_ready_slot_when_own_cools_down(void)
{
	static struct st_outslot o[8];
	struct st_gen_want g = { 0, 2 };
	struct sipc_config c;
	struct sipc_stats st;
	char buf[8][16];
	sipc_supervisor *s;
	pid_t w0, w1;
	unsigned k, ok = 0;

	st_cfg_base(&c, "echo", NULL, 2);
	c.handshake_ms = WAIT_MS;
	c.gather_us = 0;
	c.max_inflight = 2;
	c.ring_frames = 2;
	c.stall_ms = 60000;
	c.restart_intensity = 1;
	c.restart_window_ms = 600000;
	c.cooldown_ms = 600000;
	s = st_start(&c, 2, WAIT_MS);
	/* The first death uses up slot 0's one restart. */
	w0 = st_reader_pid(st_worker_stats(s, 0).pid);
	CU_ASSERT_FATAL(w0 > 0 && kill(w0, SIGKILL) == 0);
	CU_ASSERT_FATAL(st_stats_wait(s, st_pred_gen_ready, &g, WAIT_MS));
	w0 = st_reader_pid(st_worker_stats(s, 0).pid);
	w1 = st_reader_pid(st_worker_stats(s, 1).pid);
	CU_ASSERT_FATAL(w0 > 0 && kill(w0, SIGSTOP) == 0);
	CU_ASSERT_FATAL(w1 > 0 && kill(w1, SIGSTOP) == 0);
	st_outbox_reset(&box);
	for (k = 0; k < 8; k++) {
		snprintf(buf[k], sizeof(buf[k]), "request %u", k);
		o[k] = (struct st_outslot){ &box, k };
		CU_ASSERT_FATAL(sipc_submit(s, &(struct sipc_request){
		    .payload = buf[k], .len = strlen(buf[k]),
		    .timeout_ms = WAIT_MS }, st_outbox_done, &o[k],
		    NULL) == 0);
	}
	CU_ASSERT_FATAL(st_stats_wait(s, pred_two_full, NULL, WAIT_MS));
	CU_ASSERT(kill(w0, SIGKILL) == 0);
	/* Slot 0 cools down; its four wait on slot 1 (or were refused). */
	CU_ASSERT(st_stats_wait(s, pred_slot0_cooled, NULL, WAIT_MS));
	CU_ASSERT(kill(w1, SIGCONT) == 0);
	CU_ASSERT_FATAL(st_outbox_wait(&box, 8, WAIT_MS));
	pthread_mutex_lock(&box.mu);
	for (k = 0; k < 8; k++) {
		struct sipc_result *r = &box.res[k];

		ok += box.calls[k] == 1 && r->outcome == SIPC_OUTCOME_OK &&
		    r->worker_id == 1 && r->reply_len == strlen(buf[k]) &&
		    memcmp(r->reply, buf[k], r->reply_len) == 0;
		if (r->outcome != SIPC_OUTCOME_OK)
			fprintf(stderr, "request %u: %s %s\n", k,
			    sipc_outcome_name(r->outcome),
			    sipc_strerror(r->error));
	}
	pthread_mutex_unlock(&box.mu);
	CU_ASSERT_EQUAL(ok, 8);
	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	CU_ASSERT_EQUAL(st.rejected, 0);
	CU_ASSERT_EQUAL(st.unknown, 0);
	sipc_stats_release(&st);
	st_outbox_release(&box);
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
}

int
main(void)
{
	tl_suite("dispatch", (tl_test[]){
	    { "test_dispatch_cheap_requests_gather",
	      test_dispatch_cheap_requests_gather },
	    { "test_dispatch_slow_requests_spread",
	      test_dispatch_slow_requests_spread },
	    { "test_dispatch_gather_off_spreads",
	      test_dispatch_gather_off_spreads },
	    { "test_dispatch_calls_never_gather",
	      test_dispatch_calls_never_gather },
	    { "test_dispatch_cheap_wakes_lowest_idle",
	      test_dispatch_cheap_wakes_lowest_idle },
	    { "test_dispatch_busy_worker_before_idle",
	      test_dispatch_busy_worker_before_idle },
	    { "test_dispatch_requeue_ahead_of_ready_slot_when_own_cools_down",
	      test_dispatch_requeue_ahead_of_ready_slot_when_own_cools_down },
	    { NULL, NULL } });
	return tl_run();
}

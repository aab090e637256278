/*
 * worker_cancel_test.c - a running handler sees its request's deadline
 * and its cancel (sipc_worker_deadline(), sipc_worker_cancel_fd(),
 * sipc_worker_cancelled()); a worker whose handler ends a cancelled
 * request within cancel_grace_ms stays up and costs no restart, one
 * that ignores it is ended as before; requests the runtime's watcher
 * read while a handler ran are served after it; a converter the worker
 * execs starts with default signal dispositions and no blocked signal.
 *
 * Threads: the CUnit thread drives every test; completion and log
 * callbacks run on library threads and touch only the mutex-guarded
 * captures (sipctest.c).  Waits are on events with generous deadlines.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sipc.h"
#include "sipc_worker.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 20000           /* generous deadline for any event */
/* The cancel grace of these tests: long enough that a worker the old
 * runtime left deaf is visibly still busy well before it is ended. */
#define GRACE_MS 6000

static sipc_supervisor *
start(unsigned workers, unsigned max_inflight, unsigned grace_ms)
{
	char *const argv[] = { "cancelwait", NULL };
	struct sipc_config c;

	/* a sanitizer's settings reach the worker (its watcher thread) */
	static const char *const allow[] = { "TSAN_OPTIONS", "ASAN_OPTIONS",
	    NULL };

	st_cfg_base(&c, "cancelwait", argv, workers);
	c.env_allow = allow;
	c.cancel_grace_ms = grace_ms;
	if (max_inflight > 0)
		c.max_inflight = max_inflight;
	return st_start(&c, workers, WAIT_MS);
}

/* Destroy, then check that no worker reported a data race (its stderr
 * reaches the log callback). */
static void
finish(sipc_supervisor *s)
{
	sipc_destroy(s);
	CU_ASSERT(!st_log_has("ThreadSanitizer"));
}

static bool
slot0_idle(void *arg)
{
	struct sipc_worker_stats w = st_worker_stats(arg, 0);

	return w.state == SIPC_WS_READY && w.inflight == 0;
}

/* The handler was given the request's deadline, on the clock both sides
 * share, and none for a request without one. */
/* rules: F6 F9 */
static void
test_worker_cancel_deadline_given(void)
{
	struct sipc_result r;
	unsigned long long d;
	long long now;
	int64_t before;
	sipc_supervisor *s = start(1, 0, GRACE_MS);

	before = tl_now_ms();
	st_call_cmd(s, "deadline", 5000, 0, &r);
	CU_ASSERT_EQUAL_FATAL(r.outcome, SIPC_OUTCOME_OK);
	CU_ASSERT_FATAL(sscanf((const char *)r.reply, "%llu %lld", &d, &now)
	    == 2);
	CU_ASSERT((int64_t)d >= before + 5000 && (int64_t)d <= now + 5000);
	if (!((int64_t)d >= before + 5000 && (int64_t)d <= now + 5000))
		fprintf(stderr, "deadline %llu, called at %" PRId64
		    ", handled at %lld\n", d, before, now);
	sipc_result_release(&r);
	st_call_cmd(s, "deadline", 0, 0, &r);
	CU_ASSERT_EQUAL_FATAL(r.outcome, SIPC_OUTCOME_OK);
	CU_ASSERT(sscanf((const char *)r.reply, "%llu", &d) == 1 && d == 0);
	sipc_result_release(&r);
	finish(s);
}

/*
 * `cmd` waits for its cancel up to 30 s.  The request times out at
 * 300 ms; the handler must learn of it and answer long before the
 * cancel grace: the worker goes idle, stays the same process and counts
 * no restart, even past the grace.
 */
static void
cancel_costs_nothing(const char *cmd)
{
	struct sipc_worker_stats w0, w;
	struct sipc_result r;
	int64_t t0;
	sipc_supervisor *s = start(1, 0, GRACE_MS);

	w0 = st_worker_stats(s, 0);
	t0 = tl_now_ms();
	st_call_cmd(s, cmd, 300, 0, &r);
	/* The worker's own clock passes the deadline too: its "cancelled"
	 * reply may reach the reader before the reaper ends the request
	 * (a reply that comes first is the request's outcome). */
	CU_ASSERT(r.outcome == SIPC_OUTCOME_TIMEOUT ||
	    (r.outcome == SIPC_OUTCOME_WORKER_ERROR &&
	    r.worker_error_code == SIPC_WORKER_E_CANCELLED));
	if (r.outcome != SIPC_OUTCOME_TIMEOUT)
		fprintf(stderr, "%s: outcome %d, worker error %d\n", cmd,
		    (int)r.outcome, (int)r.worker_error_code);
	sipc_result_release(&r);
	/* the handler answered: nothing in flight, well within the grace */
	CU_ASSERT(tl_wait_until(slot0_idle, s, GRACE_MS / 2));
	if (tl_now_ms() - t0 >= GRACE_MS / 2)
		fprintf(stderr, "%s: in flight %" PRId64 " ms after the call\n",
		    cmd, tl_now_ms() - t0);
	/* past the grace: still the same worker, no restart */
	while (tl_now_ms() < t0 + 300 + GRACE_MS + 500)
		usleep(50000);
	w = st_worker_stats(s, 0);
	CU_ASSERT_EQUAL(w.pid, w0.pid);
	CU_ASSERT_EQUAL(w.generation, w0.generation);
	CU_ASSERT_EQUAL(w.restarts, 0);
	CU_ASSERT_EQUAL(w.state, SIPC_WS_READY);
	/* and it serves the next request */
	st_call_cmd(s, NULL, WAIT_MS, 0, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_OK);
	sipc_result_release(&r);
	CU_ASSERT_EQUAL(st_worker_stats(s, 0).pid, w0.pid);
	finish(s);
}

/* rules: X8 */
static void
test_worker_cancel_fd_readable_at_deadline(void)
{
	cancel_costs_nothing("fd 30000");
}

/* rules: X8 */
static void
test_worker_cancel_check_true_at_deadline(void)
{
	cancel_costs_nothing("check 30000");
}

/* The converter shape: a child process doing the work, killed by the
 * handler when the cancel fd fires. */
/* rules: X9 */
static void
test_worker_cancel_child_ended_by_handler(void)
{
	cancel_costs_nothing("child 30000");
}

/* A handler that ignores its cancel is ended with its worker after the
 * grace, as before. */
/* rules: X9 */
static void
test_worker_cancel_ignored_ends_worker(void)
{
	struct st_term_want want = { SIPC_EXIT_TERMINATED, SIPC_TERM_DEADLINE };
	struct sipc_result r;
	sipc_supervisor *s = start(1, 0, 300);

	st_call_cmd(s, "ignore 30000", 300, 0, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_TIMEOUT);
	sipc_result_release(&r);
	CU_ASSERT(st_stats_wait(s, st_pred_term, &want, WAIT_MS));
	finish(s);
}

/*
 * Requests written while a watching handler runs are read by the
 * watcher and served after it, in order, each exactly once: the first
 * ends at its deadline (TIMEOUT, or its handler's cancelled answer when
 * that came first), the five behind it (one worker, five in
 * flight) come back OK with their own payloads.
 */
static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* rules: X8 */
static void
test_worker_cancel_requests_read_meanwhile_served(void)
{
	struct st_outslot o[6];
	char p[5][8];
	unsigned i;
	sipc_supervisor *s = start(1, 8, GRACE_MS);

	for (i = 0; i < 6; i++)
		o[i] = (struct st_outslot){ &box, i };
	st_submit_cmd(s, "check 30000", 500, &o[0]);
	for (i = 0; i < 5; i++) {
		snprintf(p[i], sizeof(p[i]), "data%u", i);
		struct sipc_request rq = { .payload = p[i],
		    .len = strlen(p[i]), .timeout_ms = WAIT_MS };
		CU_ASSERT_FATAL(sipc_submit(s, &rq, st_outbox_done, &o[i + 1], NULL)
		    == 0);
	}
	CU_ASSERT_FATAL(st_outbox_wait(&box, 6, WAIT_MS));
	pthread_mutex_lock(&box.mu);
	/* As in cancel_costs_nothing(): the handler's "cancelled" answer,
	 * sent at the worker's own reading of the deadline, may reach the
	 * reader before the reaper ends the request; either is true. */
	CU_ASSERT(box.res[0].outcome == SIPC_OUTCOME_TIMEOUT ||
	    (box.res[0].outcome == SIPC_OUTCOME_WORKER_ERROR &&
	    box.res[0].worker_error_code == SIPC_WORKER_E_CANCELLED));
	if (box.res[0].outcome != SIPC_OUTCOME_TIMEOUT)
		fprintf(stderr, "check 30000: outcome %d, worker error %d\n",
		    (int)box.res[0].outcome, (int)box.res[0].worker_error_code);
	for (i = 0; i < 5; i++) {
		CU_ASSERT_EQUAL(box.calls[i + 1], 1);
		CU_ASSERT_EQUAL(box.res[i + 1].outcome, SIPC_OUTCOME_OK);
		CU_ASSERT(box.res[i + 1].reply_len == strlen(p[i]) &&
		    memcmp(box.res[i + 1].reply, p[i], strlen(p[i])) == 0);
	}
	pthread_mutex_unlock(&box.mu);
	CU_ASSERT(tl_wait_until(slot0_idle, s, GRACE_MS / 2));
	CU_ASSERT_EQUAL(st_worker_stats(s, 0).restarts, 0);
	finish(s);
	st_outbox_release(&box);
	st_outbox_reset(&box);
}

/* A program the worker execs starts with SIGPIPE at its default and no
 * signal blocked: the runtime changed no process-wide signal state. */
/* rules: D10 */
static void
test_worker_cancel_exec_child_starts_clean(void)
{
	struct sipc_result r;
	sipc_supervisor *s = start(1, 0, GRACE_MS);

	st_call_cmd(s, "report", WAIT_MS, 0, &r);
	CU_ASSERT_EQUAL_FATAL(r.outcome, SIPC_OUTCOME_OK);
	if (r.reply_len < 9 || memcmp(r.reply, "sigpipe=default blocked=0",
	    strlen("sigpipe=default blocked=0")) != 0)
		fprintf(stderr, "child reported: %.*s\n", (int)r.reply_len,
		    (const char *)r.reply);
	CU_ASSERT(r.reply_len >= 25 && memcmp(r.reply, "sigpipe=default blocked=0",
	    25) == 0);
	sipc_result_release(&r);
	finish(s);
}

static const tl_test tests[] = {
	{ "test_worker_cancel_deadline_given", test_worker_cancel_deadline_given },
	{ "test_worker_cancel_fd_readable_at_deadline", test_worker_cancel_fd_readable_at_deadline },
	{ "test_worker_cancel_check_true_at_deadline", test_worker_cancel_check_true_at_deadline },
	{ "test_worker_cancel_child_ended_by_handler", test_worker_cancel_child_ended_by_handler },
	{ "test_worker_cancel_ignored_ends_worker", test_worker_cancel_ignored_ends_worker },
	{ "test_worker_cancel_requests_read_meanwhile_served",
	    test_worker_cancel_requests_read_meanwhile_served },
	{ "test_worker_cancel_exec_child_starts_clean", test_worker_cancel_exec_child_starts_clean },
	{ NULL, NULL }
};

int
main(void)
{
	st_no_core_files();
	tl_suite("worker_cancel", tests);
	return tl_run();
}

/*
 * outcomes_test.c - outcomes as sipc.h and CONTRACT section 6 give them,
 * checked from outside: sipc_stats_get(3) counters move once per
 * outcome; the fields of a WORKER_ERROR and of a never-sent TIMEOUT;
 * UNKNOWN after a deadline's termination and into a cool-down; the
 * calls allowed inside log and completion callbacks.
 *
 * Threads: the CUnit thread drives everything; callbacks run on
 * library threads and touch only what is under a mutex below.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sipc.h"
#include "sipctest.h"
#include "statedir.h"
#include "testlib.h"

#define WAIT_MS 20000          /* generous deadline for any event */

/* ------------------------------------------------ counters and results */

static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* One echo worker, one request in flight and one queued at most. */
static sipc_supervisor *
start_narrow(void)
{
	struct sipc_config c;

	st_cfg_base(&c, "echo", NULL, 1);
	c.max_inflight = 1;
	c.ring_frames = 1;
	c.stall_ms = 60000;            /* the sleeps are the point */
	return st_start(&c, 1, WAIT_MS);
}


/*
 * sipc_stats_get(3), sipc.h "Every submitted request reaches exactly one
 * outcome": OK, WORKER_ERROR, TIMEOUT (queued), REJECTED (a full queue
 * under SIPC_REQ_NOWAIT, sipc_call) and UNKNOWN (a crash) each move
 * their own counter by exactly one per outcome; once nothing is pending,
 * `submitted` is their sum, nothing is held against the ceiling, and
 * the crash made exactly one planned restart (pool and slot).
 */
static void
test_outcomes_outcome_counters_move_once(void)
{
	struct st_outslot o[2] = { { &box, 0 }, { &box, 1 } };
	struct sipc_request rq = { .payload = "data", .len = 4,
	    .flags = SIPC_REQ_NOWAIT };
	struct sipc_stats st;
	struct sipc_result r;
	sipc_supervisor *s = start_narrow();

	st_outbox_reset(&box);
	st_call_cmd(s, NULL, 0, 0, &r);                    /* OK */
	CU_ASSERT(r.outcome == SIPC_OUTCOME_OK);
	sipc_result_release(&r);
	st_call_cmd(s, "error 7", 0, 0, &r);               /* WORKER_ERROR */
	CU_ASSERT(r.outcome == SIPC_OUTCOME_WORKER_ERROR);
	sipc_result_release(&r);
	st_submit_cmd(s, "sleep 1500", 0, &o[0]);          /* OK, later */
	CU_ASSERT_FATAL(st_stats_wait(s, st_pred_one_inflight, NULL, WAIT_MS));
	st_call_cmd(s, NULL, 150, 0, &r);                  /* TIMEOUT, queued */
	CU_ASSERT(r.outcome == SIPC_OUTCOME_TIMEOUT && !r.may_have_run);
	sipc_result_release(&r);
	CU_ASSERT_FATAL(sipc_submit(s, &rq, st_outbox_done, &o[1], NULL) ==
	    0);                                            /* queued: OK later */
	CU_ASSERT_FATAL(sipc_call(s, &rq, &r) == 0);       /* REJECTED, full */
	CU_ASSERT(r.outcome == SIPC_OUTCOME_REJECTED &&
	    r.error == SIPC_E_FULL);
	sipc_result_release(&r);
	CU_ASSERT_FATAL(st_outbox_wait(&box, 2, WAIT_MS));
	CU_ASSERT(box.res[0].outcome == SIPC_OUTCOME_OK &&
	    box.res[1].outcome == SIPC_OUTCOME_OK);
	st_call_cmd(s, "crash exit 3", 0, 0, &r);          /* UNKNOWN */
	CU_ASSERT(r.outcome == SIPC_OUTCOME_UNKNOWN &&
	    r.error == SIPC_E_WORKER_DIED);
	sipc_result_release(&r);
	CU_ASSERT(st_stats_wait(s, st_pred_respawned, NULL, WAIT_MS));
	CU_ASSERT(st_stats_wait(s, st_pred_settled, NULL, WAIT_MS));

	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	TL_EQ(st.completed_ok, 3);
	TL_EQ(st.worker_errors, 1);
	TL_EQ(st.timeouts, 1);
	TL_EQ(st.rejected, 1);
	TL_EQ(st.unknown, 1);
	TL_EQ(st.submitted, st.completed_ok + st.worker_errors +
	    st.timeouts + st.rejected + st.unknown);
	TL_EQ(st.requeued, 0);
	TL_EQ(st.retried, 0);
	TL_EQ(st.protocol_violations, 0);
	TL_EQ(st.restarts, 1);
	TL_EQ(st.workers[0].restarts, 1);
	TL_EQ(st.workers[0].generation, 2);
	CU_ASSERT(st.workers[0].last_exit.kind == SIPC_EXIT_CODE &&
	    st.workers[0].last_exit.code == 3);
	sipc_stats_release(&st);
	st_outbox_release(&box);
	sipc_destroy(s);
}

/*
 * CONTRACT section 6 and sipc.h struct sipc_result: a WORKER_ERROR has
 * error 0, may_have_run true, the worker's code and message, one
 * attempt and the worker that answered; a TIMEOUT that never left the
 * queue has SIPC_E_TIMEOUT, may_have_run false, no attempt and no worker
 * ("0/0/0 if never sent"), and no reply.
 */
static void
test_outcomes_result_fields_worker_error_and_unsent_timeout(void)
{
	struct st_outslot o = { &box, 0 };
	struct sipc_worker_stats ws;
	struct sipc_result r;
	sipc_supervisor *s = start_narrow();

	st_outbox_reset(&box);
	ws = st_worker_stats(s, 0);
	st_call_cmd(s, "error 42", 0, 0, &r);
	CU_ASSERT(r.outcome == SIPC_OUTCOME_WORKER_ERROR);
	TL_EQ(r.error, 0);
	CU_ASSERT(r.may_have_run);
	TL_EQ(r.worker_error_code, 42);
	CU_ASSERT(r.reply_len == strlen("requested error") &&
	    r.reply != NULL &&
	    memcmp(r.reply, "requested error", r.reply_len) == 0);
	TL_EQ(r.attempts, 1);
	CU_ASSERT(r.worker_id == 0 && r.generation == ws.generation &&
	    r.pid == ws.pid && r.pid > 0);
	CU_ASSERT(r.exit.kind == SIPC_EXIT_NONE);
	sipc_result_release(&r);

	st_submit_cmd(s, "sleep 1000", 0, &o);
	CU_ASSERT_FATAL(st_stats_wait(s, st_pred_one_inflight, NULL, WAIT_MS));
	st_call_cmd(s, NULL, 100, 0, &r);
	CU_ASSERT(r.outcome == SIPC_OUTCOME_TIMEOUT);
	TL_EQ(r.error, SIPC_E_TIMEOUT);
	CU_ASSERT(!r.may_have_run);
	TL_EQ(r.attempts, 0);
	CU_ASSERT(r.worker_id == 0 && r.generation == 0 && r.pid == 0);
	CU_ASSERT(r.reply == NULL && r.reply_len == 0);
	CU_ASSERT(r.request_id != 0);
	sipc_result_release(&r);
	CU_ASSERT(st_outbox_wait(&box, 1, WAIT_MS));
	st_outbox_release(&box);
	sipc_destroy(s);
}

/* ---------------------------------------------------- outcome / error */

static bool
pred_slot0_state(const struct sipc_stats *st, void *arg)
{
	return st->nworkers == 1 &&
	    st->workers[0].state == *(enum sipc_worker_state *)arg;
}

/*
 * CONTRACT section 6 (UNKNOWN row: "SIPC_E_TIMEOUT after DEADLINE") and
 * X4: a worker terminated because a request stayed past its deadline
 * and cancel_grace_ms takes its other requests that may have run with
 * it; they end UNKNOWN / SIPC_E_TIMEOUT, naming the termination, while
 * the late request itself got TIMEOUT at its deadline.  The counters
 * move once each; the end is a planned restart.
 */
/* rules: X4 */
static void
test_outcomes_unknown_timeout_after_deadline_termination(void)
{
	struct st_outslot o[2] = { { &box, 0 }, { &box, 1 } };
	struct sipc_config c;
	struct sipc_stats st;
	sipc_supervisor *s;

	st_cfg_base(&c, "echo", NULL, 1);
	c.max_inflight = 2;
	c.stall_ms = 60000;
	s = st_start(&c, 1, WAIT_MS);
	st_outbox_reset(&box);
	st_submit_cmd(s, "hang", 300, &o[0]);      /* never answered */
	st_submit_cmd(s, "sleep 20000", 0, &o[1]); /* no deadline of its own */
	CU_ASSERT_FATAL(st_outbox_wait(&box, 2, WAIT_MS));
	CU_ASSERT(box.res[0].outcome == SIPC_OUTCOME_TIMEOUT &&
	    box.res[0].error == SIPC_E_TIMEOUT && box.res[0].may_have_run);
	TL_EQ(box.res[1].outcome, SIPC_OUTCOME_UNKNOWN);
	TL_EQ(box.res[1].error, SIPC_E_TIMEOUT);
	CU_ASSERT(box.res[1].may_have_run);
	CU_ASSERT(box.res[1].exit.kind == SIPC_EXIT_TERMINATED &&
	    box.res[1].exit.reason == SIPC_TERM_DEADLINE);
	CU_ASSERT(st_stats_wait(s, st_pred_respawned, NULL, WAIT_MS));
	CU_ASSERT(st_stats_wait(s, st_pred_settled, NULL, WAIT_MS));
	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	TL_EQ(st.timeouts, 1);
	TL_EQ(st.unknown, 1);
	TL_EQ(st.submitted, 2);
	TL_EQ(st.restarts, 1);
	CU_ASSERT(st.workers[0].last_exit.kind == SIPC_EXIT_TERMINATED &&
	    st.workers[0].last_exit.reason == SIPC_TERM_DEADLINE);
	sipc_stats_release(&st);
	st_outbox_release(&box);
	sipc_destroy(s);
}

/*
 * CONTRACT section 6 (UNKNOWN row: SIPC_E_UNAVAILABLE), R1, R3 and P3:
 * an idempotent request that may have run on a worker that died is to
 * be written again, but its only slot goes into COOLDOWN (the restart
 * would pass restart_intensity): it ends UNKNOWN / SIPC_E_UNAVAILABLE,
 * may_have_run true, one attempt; the cool-down is not counted as a
 * restart, and the next submit is REJECTED / SIPC_E_UNAVAILABLE at once.
 */
/* rules: P5 R1 */
static void
test_outcomes_unknown_unavailable_idempotent_into_cooldown(void)
{
	enum sipc_worker_state cool = SIPC_WS_COOLDOWN;
	struct sipc_config c;
	struct sipc_stats st;
	struct sipc_result r;
	sipc_supervisor *s;
	int64_t t0;

	st_cfg_base(&c, "echo", NULL, 1);
	c.restart_intensity = 1;
	c.restart_window_ms = 600000;
	c.cooldown_ms = 600000;
	s = st_start(&c, 1, WAIT_MS);
	st_call_cmd(s, "crash exit 3", 0, 0, &r);       /* restart 1 of 1 */
	CU_ASSERT(r.outcome == SIPC_OUTCOME_UNKNOWN &&
	    r.error == SIPC_E_WORKER_DIED);
	sipc_result_release(&r);
	CU_ASSERT_FATAL(st_stats_wait(s, st_pred_respawned, NULL, WAIT_MS));
	st_call_cmd(s, "crash exit 3", 0, SIPC_REQ_IDEMPOTENT, &r);
	TL_EQ(r.outcome, SIPC_OUTCOME_UNKNOWN);
	TL_EQ(r.error, SIPC_E_UNAVAILABLE);
	CU_ASSERT(r.may_have_run);
	TL_EQ(r.attempts, 1);
	CU_ASSERT(r.exit.kind == SIPC_EXIT_CODE && r.exit.code == 3);
	sipc_result_release(&r);
	CU_ASSERT_FATAL(st_stats_wait(s, pred_slot0_state, &cool, WAIT_MS));
	t0 = tl_now_ms();
	st_call_cmd(s, NULL, 0, 0, &r);
	CU_ASSERT(r.outcome == SIPC_OUTCOME_REJECTED &&
	    r.error == SIPC_E_UNAVAILABLE && !r.may_have_run);
	CU_ASSERT(tl_now_ms() - t0 < 5000);
	sipc_result_release(&r);
	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	TL_EQ(st.restarts, 1);
	TL_EQ(st.workers[0].restarts, 1);
	TL_EQ(st.unknown, 2);
	TL_EQ(st.rejected, 1);
	TL_EQ(st.retried, 0);
	TL_EQ(st.pending, 0);
	sipc_stats_release(&st);
	sipc_destroy(s);
}

/* ------------------------------------------------ calls from callbacks */

/* What the calls a callback may make returned there: how many ran, how
 * many answered 0, and any answer the documents do not allow (0 and,
 * once destroy has begun, SIPC_E_SHUTDOWN are allowed). */
static struct {
	pthread_mutex_t mu;
	sipc_supervisor *s;        /* set after sipc_create() returned */
	unsigned log_calls, log_ok, done_calls, done_ok, bad;
	int bad_rc;
} cbk = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* stats, list, leftovers: all three allowed on a library thread. */
static void
allowed_calls(sipc_supervisor *s, unsigned *calls, unsigned *ok)
{
	struct sipc_unresolved *u = NULL;
	struct sipc_leftover *l = NULL;
	struct sipc_stats st;
	size_t n;
	int rc[3];
	unsigned i;

	rc[0] = sipc_stats_get(s, &st);
	if (rc[0] == 0)
		sipc_stats_release(&st);
	rc[1] = sipc_reconcile_list(s, &u, &n);
	if (rc[1] == 0)
		sipc_reconcile_free(u);
	rc[2] = sipc_reconcile_leftovers(s, &l, &n);
	if (rc[2] == 0)
		sipc_reconcile_leftovers_free(l);
	pthread_mutex_lock(&cbk.mu);
	(*calls)++;
	if (rc[0] == 0 && rc[1] == 0 && rc[2] == 0)
		(*ok)++;
	for (i = 0; i < 3; i++)
		if (rc[i] != 0 && rc[i] != SIPC_E_SHUTDOWN) {
			cbk.bad++;
			cbk.bad_rc = rc[i];
		}
	pthread_mutex_unlock(&cbk.mu);
}

static void
cbk_log(void *arg, enum sipc_log_level lvl, uint32_t wid, uint32_t gen,
        pid_t pid, const char *msg)
{
	sipc_supervisor *s;

	pthread_mutex_lock(&cbk.mu);
	s = cbk.s;
	pthread_mutex_unlock(&cbk.mu);
	if (s != NULL)
		allowed_calls(s, &cbk.log_calls, &cbk.log_ok);
}

static void
cbk_done(void *arg, struct sipc_result *res)
{
	allowed_calls(cbk.s, &cbk.done_calls, &cbk.done_ok);
	sipc_result_release(res);
}

static void
cbk_submit(sipc_supervisor *s, const char *cmd, unsigned timeout_ms,
           unsigned flags)
{
	char p[64];
	struct sipc_request rq = { .payload = p, .timeout_ms = timeout_ms,
	    .flags = flags };

	rq.len = (size_t)snprintf(p, sizeof(p), "%c%c%c%c%s", 0, 'C', 'M',
	    'D', cmd);
	CU_ASSERT(sipc_submit(s, &rq, cbk_done, NULL, NULL) == 0);
}

/* The completion callback has run more than *(unsigned *)arg times. */
static bool
cbk_done_n(void *arg)
{
	bool r;

	pthread_mutex_lock(&cbk.mu);
	r = cbk.done_calls > *(unsigned *)arg;
	pthread_mutex_unlock(&cbk.mu);
	return r;
}

static bool
pred_restarts(const struct sipc_stats *st, void *arg)
{
	return st->restarts >= *(unsigned *)arg && st->pending == 0;
}

/*
 * sipc.h "Threads" and sipc_log_fn / sipc_done_fn: no library lock is
 * held while a completion or log callback runs, and sipc_stats_get()
 * and the reconcile calls are allowed there.  Every log line (worker
 * diagnostics, a crash, a deadline's CANCEL, a protocol
 * violation, a lost channel, restarts, destroy) and every completion
 * (one of each outcome but REJECTED) calls all three: none blocks (the test would hang), each answers 0
 * (SIPC_E_SHUTDOWN once destroy has begun).
 */
/* rules: TH1 */
static void
test_outcomes_calls_allowed_in_log_and_completion_callbacks(void)
{
	char *dir = sd_make();
	struct sipc_config c;
	static const char *const cmds[6] = { "pid", "error 5", "crash segv",
	    "hang", "badframe", "closechan" };
	sipc_supervisor *s;
	unsigned want = 3, i;    /* segv, badframe, closechan */

	st_cfg_base(&c, "echo", NULL, 1);
	c.state_dir = dir;
	c.log = cbk_log;
	c.stall_ms = 60000;
	pthread_mutex_lock(&cbk.mu);
	cbk.s = NULL;
	cbk.log_calls = cbk.log_ok = cbk.done_calls = cbk.done_ok = 0;
	cbk.bad = 0;
	pthread_mutex_unlock(&cbk.mu);
	s = st_start(&c, 1, WAIT_MS);
	pthread_mutex_lock(&cbk.mu);
	cbk.s = s;
	pthread_mutex_unlock(&cbk.mu);
	for (i = 0; i < 6; i++) {
		cbk_submit(s, cmds[i], i == 3 ? 200 : 0, 0);
		CU_ASSERT(tl_wait_until(cbk_done_n, &i, WAIT_MS));
	}
	CU_ASSERT(st_stats_wait(s, pred_restarts, &want, WAIT_MS));
	CU_ASSERT(sipc_wait_ready(s, 1, WAIT_MS) == 0);
	sipc_destroy(s);
	pthread_mutex_lock(&cbk.mu);
	TL_EQ(cbk.done_calls, 6);
	TL_EQ(cbk.done_ok, 6);
	CU_ASSERT(cbk.log_calls >= 4 && cbk.log_ok >= 4);
	TL_EQ(cbk.bad, 0);
	if (cbk.bad != 0)
		fprintf(stderr, "a callback's call answered %d (%s)\n",
		    cbk.bad_rc, sipc_strerror(cbk.bad_rc));
	cbk.s = NULL;
	pthread_mutex_unlock(&cbk.mu);
	sd_remove(dir);
}

int
main(void)
{
	st_no_core_files();
	tl_suite("outcomes", (tl_test[]){
	    { "test_outcomes_outcome_counters_move_once",
	      test_outcomes_outcome_counters_move_once },
	    { "test_outcomes_result_fields_worker_error_and_unsent_timeout",
	      test_outcomes_result_fields_worker_error_and_unsent_timeout },
	    { "test_outcomes_unknown_timeout_after_deadline_termination",
	      test_outcomes_unknown_timeout_after_deadline_termination },
	    { "test_outcomes_unknown_unavailable_idempotent_into_cooldown",
	      test_outcomes_unknown_unavailable_idempotent_into_cooldown },
	    { "test_outcomes_calls_allowed_in_log_and_completion_callbacks",
	      test_outcomes_calls_allowed_in_log_and_completion_callbacks },
	    { NULL, NULL } });
	return tl_run();
}

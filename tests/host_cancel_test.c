/*
 * host_cancel_test.c - sipc_cancel(): a request not yet written ends
 * REJECTED / SIPC_E_CANCELLED and is never written; a written one ends
 * UNKNOWN / SIPC_E_CANCELLED at once, its worker is sent a CANCEL (a
 * watching handler ends and the worker stays), and a worker that
 * ignores it is ended after cancel_grace_ms; never retried; exactly one
 * outcome when cancels race replies, deadlines and destroy.
 *
 * Threads: the CUnit thread drives every test; completion callbacks run
 * on library threads (or on the cancelling thread) and touch only an
 * st_outbox (its mutex).  The race test starts cancelling threads of its
 * own.  Waits are on events with generous deadlines.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
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
#define GRACE_MS 6000           /* a cancel grace no handler here needs */

static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };

static sipc_supervisor *
start(const char *fixture, unsigned max_inflight, unsigned grace_ms,
      unsigned workers)
{
	char *const argv[] = { (char *)fixture, NULL };
	static const char *const allow[] = { "TSAN_OPTIONS", "ASAN_OPTIONS",
	    NULL };
	struct sipc_config c;

	st_cfg_base(&c, fixture, argv, workers);
	c.env_allow = allow;
	c.cancel_grace_ms = grace_ms;
	c.max_inflight = max_inflight;
	return st_start(&c, workers, WAIT_MS);
}

static bool
slot0_idle(void *arg)
{
	struct sipc_worker_stats w = st_worker_stats(arg, 0);

	return w.state == SIPC_WS_READY && w.inflight == 0;
}

/* The outcome is in box slot `i` (delivered exactly once). */
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

/*
 * One worker, one request at a time, held by a sleep: the request behind
 * it waits in the ring.  Cancelled there, it ends REJECTED /
 * SIPC_E_CANCELLED before sipc_cancel() returns, and is never written:
 * the worker is given the sleep and the request after it, nothing else.
 */
/* rules: X10 */
static void
test_host_cancel_queued_never_written(void)
{
	struct st_outslot o[3] = { { &box, 0 }, { &box, 1 }, { &box, 2 } };
	sipc_supervisor *s = start("echo", 1, GRACE_MS, 1);
	struct sipc_result r;
	uint64_t t0, id;

	st_outbox_reset(&box);
	t0 = st_taken_total(s, 0);
	(void)st_submit_cmd_opts(s, "sleep 1000", WAIT_MS, 0, 0, &o[0]);
	id = st_submit_cmd_opts(s, "pid", WAIT_MS, 0, 0, &o[1]);
	TL_EQ(st_worker_stats(s, 0).queued, 1);
	TL_EQ(sipc_cancel(s, id), 0);
	TL_EQ(st_outbox_total(&box), 1);
	r = got(1);
	TL_EQ(r.outcome, SIPC_OUTCOME_REJECTED);
	TL_EQ(r.error, SIPC_E_CANCELLED);
	CU_ASSERT(!r.may_have_run);
	TL_EQ(r.attempts, 0);
	TL_EQ(r.request_id, id);
	/* a second cancel, and one of an id never given */
	TL_EQ(sipc_cancel(s, id), SIPC_E_NOTFOUND);
	TL_EQ(sipc_cancel(s, id + 1000), SIPC_E_NOTFOUND);
	(void)st_submit_cmd_opts(s, "pid", WAIT_MS, 0, 0, &o[2]);
	CU_ASSERT_FATAL(st_outbox_wait(&box, 3, WAIT_MS));
	TL_EQ(got(0).outcome, SIPC_OUTCOME_OK);
	TL_EQ(got(2).outcome, SIPC_OUTCOME_OK);
	TL_EQ(st_taken_total(s, 0) - t0, 2);
	TL_EQ(st_worker_stats(s, 0).completed, 2);
	st_outbox_release(&box);
	sipc_destroy(s);
}

/*
 * A written request whose handler watches its cancel fd: sipc_cancel()
 * delivers UNKNOWN / SIPC_E_CANCELLED (it may have run) at once, the
 * worker is sent a CANCEL, its handler answers long before the grace,
 * and the worker stays the same process with no restart, past the grace.
 * The answer that comes is dropped: one outcome.
 */
/* rules: X10 */
static void
test_host_cancel_written_reaches_handler(void)
{
	struct st_outslot o[2] = { { &box, 0 }, { &box, 1 } };
	sipc_supervisor *s = start("cancelwait", 1, GRACE_MS, 1);
	struct sipc_worker_stats w0, w;
	struct sipc_result r;
	int64_t t0;
	uint64_t id;

	st_outbox_reset(&box);
	w0 = st_worker_stats(s, 0);
	id = st_submit_cmd_opts(s, "fd 30000", WAIT_MS, SIPC_REQ_IDEMPOTENT, 0,
	    &o[0]);
	CU_ASSERT_FATAL(st_stats_wait(s, st_pred_one_inflight, NULL, WAIT_MS));
	t0 = tl_now_ms();
	TL_EQ(sipc_cancel(s, id), 0);
	TL_EQ(st_outbox_total(&box), 1);
	r = got(0);
	TL_EQ(r.outcome, SIPC_OUTCOME_UNKNOWN);
	TL_EQ(r.error, SIPC_E_CANCELLED);
	CU_ASSERT(r.may_have_run);
	TL_EQ(r.attempts, 1);
	/* the handler saw the CANCEL and answered: nothing in flight */
	CU_ASSERT(tl_wait_until(slot0_idle, s, GRACE_MS / 2));
	while (tl_now_ms() < t0 + GRACE_MS + 500)
		usleep(50000);
	w = st_worker_stats(s, 0);
	TL_EQ(w.pid, w0.pid);
	TL_EQ(w.generation, w0.generation);
	TL_EQ(w.restarts, 0);
	TL_EQ(st_outbox_total(&box), 1);
	TL_EQ(sipc_cancel(s, id), SIPC_E_NOTFOUND);
	(void)st_submit_cmd_opts(s, "deadline", WAIT_MS, 0, 0, &o[1]);
	CU_ASSERT_FATAL(st_outbox_wait(&box, 2, WAIT_MS));
	TL_EQ(got(1).outcome, SIPC_OUTCOME_OK);
	/* idempotent, yet written once: a cancel is never retried */
	TL_EQ(st_taken_total(s, 0), 2);
	st_outbox_release(&box);
	sipc_destroy(s);
}

/*
 * A handler that ignores its cancel: the outcome is delivered at once,
 * and the worker still holding the request at the end of the grace is
 * ended as after a deadline (TERMINATED / DEADLINE), then replaced.  The
 * request, idempotent, is not written again.
 */
static void
test_host_cancel_ignored_ends_worker(void)
{
	struct st_term_want want = { SIPC_EXIT_TERMINATED, SIPC_TERM_DEADLINE };
	struct st_outslot o[1] = { { &box, 0 } };
	sipc_supervisor *s = start("cancelwait", 1, 300, 1);
	struct sipc_result r;
	uint64_t id, t0;

	st_outbox_reset(&box);
	t0 = st_taken_total(s, 0);
	id = st_submit_cmd_opts(s, "ignore 30000", WAIT_MS, SIPC_REQ_IDEMPOTENT,
	    0, &o[0]);
	CU_ASSERT_FATAL(st_stats_wait(s, st_pred_one_inflight, NULL, WAIT_MS));
	TL_EQ(sipc_cancel(s, id), 0);
	r = got(0);
	TL_EQ(r.outcome, SIPC_OUTCOME_UNKNOWN);
	TL_EQ(r.error, SIPC_E_CANCELLED);
	CU_ASSERT(st_stats_wait(s, st_pred_term, &want, WAIT_MS));
	CU_ASSERT(sipc_wait_ready(s, 1, WAIT_MS) == 0);
	TL_EQ(st_outbox_total(&box), 1);
	TL_EQ(st_taken_total(s, 0) - t0, 1);
	st_outbox_release(&box);
	sipc_destroy(s);
}

/* A request that already has its outcome cannot be cancelled. */
static void
test_host_cancel_after_reply_notfound(void)
{
	struct st_outslot o[1] = { { &box, 0 } };
	sipc_supervisor *s = start("echo", 4, GRACE_MS, 1);
	uint64_t id;

	st_outbox_reset(&box);
	id = st_submit_cmd_opts(s, "pid", WAIT_MS, 0, 0, &o[0]);
	CU_ASSERT_FATAL(st_outbox_wait(&box, 1, WAIT_MS));
	TL_EQ(sipc_cancel(s, id), SIPC_E_NOTFOUND);
	TL_EQ(got(0).outcome, SIPC_OUTCOME_OK);
	TL_EQ(sipc_cancel(NULL, id), -EINVAL);
	st_outbox_release(&box);
	sipc_destroy(s);
	/* (after destroy the handle is gone: nothing more to ask) */
}

/*
 * Cancels racing replies and deadlines: two workers, requests of which
 * some reply at once, some sleep, some time out; a thread cancels each
 * id as soon as it is known, another cancels the same ids again.  Every
 * request gets exactly one outcome; a cancel that returned 0 was the
 * outcome (CANCELLED), one that returned SIPC_E_NOTFOUND was not; a
 * request cancelled unwritten was never written (REJECTED).  Then
 * destroy with cancels and requests still pending.
 */
#define RACE_N 400

struct racer {
	sipc_supervisor *s;
	_Atomic uint64_t ids[RACE_N];
	_Atomic int rc[RACE_N];       /* first cancel's rc; 1 = not yet */
	_Atomic unsigned next;        /* ids[] published so far */
	_Atomic bool stop;
};

static void *
race_cancel(void *arg)
{
	struct racer *r = arg;
	unsigned i = 0, n;
	int rc, want = 1;

	while (!atomic_load(&r->stop) || i < atomic_load(&r->next)) {
		n = atomic_load(&r->next);
		if (i >= n) {
			sched_yield();
			continue;
		}
		/* every other request: cancelled soon after its submit,
		 * some a little later, when many have their reply */
		if (i % 2 == 0) {
			if (i % 4 == 2)
				usleep(300);
			rc = sipc_cancel(r->s, atomic_load(&r->ids[i]));
			(void)atomic_compare_exchange_strong(&r->rc[i], &want,
			    rc);
			want = 1;
			/* a second cancel never finds it again */
			if (rc == 0)
				CU_ASSERT(sipc_cancel(r->s,
				    atomic_load(&r->ids[i])) ==
				    SIPC_E_NOTFOUND);
		}
		i++;
	}
	return NULL;
}

/* rules: X10 S1 */
static void
test_host_cancel_races_one_outcome(void)
{
	static struct st_outslot o[RACE_N];
	static struct racer rc;
	sipc_supervisor *s = start("echo", 4, 300, 2);
	pthread_t th;
	unsigned i, ok = 0, cancelled = 0, bad = 0;
	char cmd[32];

	st_outbox_reset(&box);
	memset(&rc, 0, sizeof(rc));
	rc.s = s;
	for (i = 0; i < RACE_N; i++)
		atomic_init(&rc.rc[i], 1);
	CU_ASSERT_FATAL(pthread_create(&th, NULL, race_cancel, &rc) == 0);
	for (i = 0; i < RACE_N; i++) {
		unsigned kind = i % 5;

		o[i] = (struct st_outslot){ &box, i };
		if (kind == 0)
			snprintf(cmd, sizeof(cmd), "sleep %u", i % 7);
		else if (kind == 1)
			snprintf(cmd, sizeof(cmd), "pid");
		else if (kind == 2)
			snprintf(cmd, sizeof(cmd), "sleep 20");
		else if (kind == 3)
			snprintf(cmd, sizeof(cmd), "error %u", i);
		else
			snprintf(cmd, sizeof(cmd), "sleep 1");
		atomic_store(&rc.ids[i], st_submit_cmd_opts(s, cmd,
		    kind == 2 ? 10 : WAIT_MS, 0, 0, &o[i]));
		atomic_store(&rc.next, i + 1);
	}
	atomic_store(&rc.stop, true);
	pthread_join(th, NULL);
	CU_ASSERT_FATAL(st_outbox_wait(&box, RACE_N, WAIT_MS));
	pthread_mutex_lock(&box.mu);
	for (i = 0; i < RACE_N; i++) {
		const struct sipc_result *r = &box.res[i];
		bool c = r->error == SIPC_E_CANCELLED;
		int first = atomic_load(&rc.rc[i]);

		bad += box.calls[i] != 1;
		bad += first == 0 && !c;
		bad += (first == SIPC_E_NOTFOUND || first == 1) && c;
		bad += first != 0 && first != 1 && first != SIPC_E_NOTFOUND;
		bad += c && r->outcome == SIPC_OUTCOME_REJECTED &&
		    (r->may_have_run || r->attempts != 0);
		bad += c && r->outcome == SIPC_OUTCOME_UNKNOWN &&
		    !r->may_have_run;
		bad += c && r->outcome != SIPC_OUTCOME_REJECTED &&
		    r->outcome != SIPC_OUTCOME_UNKNOWN;
		cancelled += c;
		ok += r->outcome == SIPC_OUTCOME_OK;
		if (bad > 0 && bad < 5 && box.calls[i] > 0)
			fprintf(stderr, "request %u: calls %u, cancel rc %d, "
			    "outcome %d error %d\n", i, box.calls[i], first,
			    (int)r->outcome, r->error);
	}
	pthread_mutex_unlock(&box.mu);
	TL_EQ(bad, 0);
	CU_ASSERT(cancelled > 0);
	fprintf(stderr, "%u requests: %u cancelled, %u ok\n", RACE_N,
	    cancelled, ok);
	st_outbox_release(&box);
	/* Destroy with requests pending, cancelled while it begins. */
	st_outbox_reset(&box);
	for (i = 0; i < 8; i++) {
		o[i] = (struct st_outslot){ &box, i };
		rc.ids[i] = st_submit_cmd_opts(s, i % 2 ? "sleep 300" :
		    "sleep 200", WAIT_MS, 0, 0, &o[i]);
	}
	TL_EQ(sipc_cancel(s, rc.ids[0]), 0);
	sipc_destroy(s);
	TL_EQ(st_outbox_total(&box), 8);
	pthread_mutex_lock(&box.mu);
	for (i = 0; i < 8; i++)
		TL_EQ(box.calls[i], 1);
	TL_EQ(box.res[0].error, SIPC_E_CANCELLED);
	pthread_mutex_unlock(&box.mu);
	st_outbox_release(&box);
}

static const tl_test tests[] = {
	{ "test_host_cancel_queued_never_written",
	  test_host_cancel_queued_never_written },
	{ "test_host_cancel_written_reaches_handler",
	  test_host_cancel_written_reaches_handler },
	{ "test_host_cancel_ignored_ends_worker",
	  test_host_cancel_ignored_ends_worker },
	{ "test_host_cancel_after_reply_notfound",
	  test_host_cancel_after_reply_notfound },
	{ "test_host_cancel_races_one_outcome",
	  test_host_cancel_races_one_outcome },
	{ NULL, NULL }
};

int
main(void)
{
	st_no_core_files();
	tl_suite("host_cancel", tests);
	return tl_run();
}

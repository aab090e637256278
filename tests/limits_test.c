/*
 * limits_test.c - the sizes and bounds of sipc.h and CONTRACT M1-M4
 * checked from outside: max_payload for replies, ring_bytes, the memory
 * ceiling's refusals and its reserve for replies, a submit from a
 * callback when memory is full.
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

static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* ------------------------------------------------------------ limits */

/*
 * CONTRACT 9.1 (max_payload: "payload bytes per frame, both ways") and
 * C6: a reply of exactly max_payload bytes is delivered whole; one of
 * max_payload + 1 (a header framelog writes by hand, past the runtime's
 * own check) is a protocol violation: UNKNOWN / SIPC_E_PROTOCOL, the
 * worker terminated for it and counted once, per worker and in total.
 */
/* rules: C6 F10 */
static void
test_limits_reply_max_payload_boundary(void)
{
	struct sipc_config c;
	struct sipc_stats st;
	struct sipc_result r;
	sipc_supervisor *s;
	char cmd[64];
	bool pattern = true;
	size_t i;

	st_cfg_base(&c, "framelog", NULL, 1);
	c.max_payload = 4096;
	s = st_start(&c, 1, WAIT_MS);
	snprintf(cmd, sizeof(cmd), "slowbig %u 0", c.max_payload);
	st_call_cmd(s, cmd, WAIT_MS, 0, &r);
	TL_EQ(r.outcome, SIPC_OUTCOME_OK);
	TL_EQ(r.reply_len, c.max_payload);
	for (i = 0; i < r.reply_len; i++)
		if (r.reply[i] != (uint8_t)((r.request_id + i) & 0xff))
			pattern = false;
	CU_ASSERT(pattern);
	sipc_result_release(&r);

	snprintf(cmd, sizeof(cmd), "slowbig %u 0", c.max_payload + 1);
	st_call_cmd(s, cmd, WAIT_MS, 0, &r);
	TL_EQ(r.outcome, SIPC_OUTCOME_UNKNOWN);
	TL_EQ(r.error, SIPC_E_PROTOCOL);
	CU_ASSERT(r.reply == NULL && r.reply_len == 0);
	CU_ASSERT(r.exit.kind == SIPC_EXIT_TERMINATED &&
	    r.exit.reason == SIPC_TERM_PROTOCOL);
	sipc_result_release(&r);
	CU_ASSERT(st_stats_wait(s, st_pred_respawned, NULL, WAIT_MS));
	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	TL_EQ(st.protocol_violations, 1);
	TL_EQ(st.workers[0].protocol_violations, 1);
	TL_EQ(st.completed_ok, 1);
	TL_EQ(st.unknown, 1);
	sipc_stats_release(&st);
	sipc_destroy(s);
}

static void
release_only(void *arg, struct sipc_result *res)
{
	(void)arg;
	sipc_result_release(res);
}

/*
 * A refusal for want of room is one submitted and one rejected request,
 * whichever bound refused it: the ring (counted so) or the memory
 * ceiling (counted nowhere before), through sipc_submit() (SIPC_E_FULL)
 * and sipc_call() (REJECTED / SIPC_E_FULL) alike.
 */
static void
test_limits_mem_full_refusal_counted(void)
{
	char *argv[] = { "slow", "3000", NULL };
	static char pay[60];
	struct sipc_request rq = { .payload = pay, .len = sizeof(pay),
	    .flags = SIPC_REQ_NOWAIT };
	struct sipc_config c;
	struct sipc_stats a, b;
	struct sipc_result r;
	sipc_supervisor *s;
	unsigned i;
	int rc = 0;

	st_cfg_base(&c, "slow", argv, 1);
	c.max_payload = 64;
	c.ring_bytes = 200;
	c.mem_ceiling = 200;
	c.stall_ms = 60000;
	s = st_start(&c, 1, WAIT_MS);
	for (i = 0; i < 10 && rc == 0; i++)
		rc = sipc_submit(s, &rq, release_only, NULL, NULL);
	TL_EQ(rc, SIPC_E_FULL);
	CU_ASSERT_FATAL(sipc_stats_get(s, &a) == 0);
	/* the ceiling, not the ring, is what is full */
	CU_ASSERT(a.mem_held + sizeof(pay) > c.mem_ceiling - c.max_payload);
	TL_EQ(sipc_submit(s, &rq, release_only, NULL, NULL),
	    SIPC_E_FULL);
	CU_ASSERT_FATAL(sipc_call(s, &rq, &r) == 0);
	CU_ASSERT(r.outcome == SIPC_OUTCOME_REJECTED && r.error == SIPC_E_FULL);
	sipc_result_release(&r);
	CU_ASSERT_FATAL(sipc_stats_get(s, &b) == 0);
	TL_EQ(b.rejected, a.rejected + 2);
	TL_EQ(b.submitted, a.submitted + 2);
	sipc_stats_release(&a);
	sipc_stats_release(&b);
	sipc_destroy(s);
}

static void
never_done(void *arg, struct sipc_result *res)
{
	CU_FAIL("a refused submit's callback ran");
	sipc_result_release(res);
}

/*
 * CONTRACT 9.1 (ring_bytes: "queued payload bytes per worker") and M1,
 * M2: with the worker's one in-flight place taken, its queue takes
 * payloads up to exactly ring_bytes (64 + 36 = 100); one byte more is
 * SIPC_E_FULL at once under SIPC_REQ_NOWAIT, with no callback, and what
 * was queued is untouched: each queued request still gets exactly one
 * outcome (REJECTED / SIPC_E_SHUTDOWN at destroy, never sent; the one
 * in flight UNKNOWN / SIPC_E_SHUTDOWN).
 */
static void
test_limits_ring_bytes_boundary(void)
{
	static char big[64], mid[36], one[1];
	struct st_outslot o[3] = { { &box, 0 }, { &box, 1 }, { &box, 2 } };
	struct sipc_request q64 = { .payload = big, .len = sizeof(big),
	    .flags = SIPC_REQ_NOWAIT };
	struct sipc_request q36 = { .payload = mid, .len = sizeof(mid),
	    .flags = SIPC_REQ_NOWAIT };
	struct sipc_request q1 = { .payload = one, .len = sizeof(one),
	    .flags = SIPC_REQ_NOWAIT };
	struct sipc_worker_stats ws;
	struct sipc_config c;
	sipc_supervisor *s;

	st_cfg_base(&c, "echo", NULL, 1);
	c.max_inflight = 1;
	c.max_payload = 64;
	c.ring_bytes = 100;
	c.mem_ceiling = 1 << 20;
	c.stall_ms = 60000;
	s = st_start(&c, 1, WAIT_MS);
	st_outbox_reset(&box);
	st_submit_cmd(s, "hang", 0, &o[0]);
	CU_ASSERT_FATAL(st_stats_wait(s, st_pred_one_inflight, NULL, WAIT_MS));
	TL_EQ(sipc_submit(s, &q64, st_outbox_done, &o[1], NULL), 0);
	TL_EQ(sipc_submit(s, &q36, st_outbox_done, &o[2], NULL), 0);
	TL_EQ(sipc_submit(s, &q1, never_done, NULL, NULL),
	    SIPC_E_FULL);
	ws = st_worker_stats(s, 0);
	CU_ASSERT(ws.inflight == 1 && ws.queued == 2);
	TL_EQ(st_pool_stats(s).pending, 3);
	TL_EQ(sipc_destroy(s), 0);
	TL_EQ(st_outbox_total(&box), 3);
	CU_ASSERT(box.calls[0] == 1 && box.calls[1] == 1 &&
	    box.calls[2] == 1);
	/* sipc_destroy(): written ones end UNKNOWN / SIPC_E_SHUTDOWN */
	CU_ASSERT(box.res[0].outcome == SIPC_OUTCOME_UNKNOWN &&
	    box.res[0].error == SIPC_E_SHUTDOWN && box.res[0].may_have_run);
	CU_ASSERT(box.res[1].outcome == SIPC_OUTCOME_REJECTED &&
	    box.res[1].error == SIPC_E_SHUTDOWN && !box.res[1].may_have_run);
	CU_ASSERT(box.res[2].outcome == SIPC_OUTCOME_REJECTED &&
	    box.res[2].error == SIPC_E_SHUTDOWN && !box.res[2].may_have_run);
	st_outbox_release(&box);
}

/* What the completion callback of the first request saw when it
 * submitted from the reader's thread: the return code and how long the
 * call took. */
static struct {
	pthread_mutex_t mu;
	sipc_supervisor *s;
	int rc_blocking, rc_deadline;
	int64_t took_ms;
	bool ran;
} incb = { .mu = PTHREAD_MUTEX_INITIALIZER };

static char pay60[60];

static void
submit_in_callback(void *arg, struct sipc_result *res)
{
	struct sipc_request rq = { .payload = pay60, .len = sizeof(pay60) };
	struct sipc_request rd = { .payload = pay60, .len = sizeof(pay60),
	    .timeout_ms = 5000 };
	int64_t t0 = tl_now_ms();
	int a, b;

	a = sipc_submit(incb.s, &rq, never_done, NULL, NULL);
	b = sipc_submit(incb.s, &rd, never_done, NULL, NULL);
	pthread_mutex_lock(&incb.mu);
	incb.rc_blocking = a;
	incb.rc_deadline = b;
	incb.took_ms = tl_now_ms() - t0;
	incb.ran = true;
	pthread_mutex_unlock(&incb.mu);
	sipc_result_release(res);
}

static bool
incb_ran(void *arg)
{
	bool r;

	pthread_mutex_lock(&incb.mu);
	r = incb.ran;
	pthread_mutex_unlock(&incb.mu);
	return r;
}

/*
 * sipc.h (sipc_done_fn, sipc_submit) and CONTRACT M2: a submit from a
 * completion callback never blocks: when the memory ceiling has no room
 * (the callback's own reply and a request in flight hold it), a submit
 * without SIPC_REQ_NOWAIT, with or without a deadline, returns
 * SIPC_E_FULL at once and its callback never runs.
 */
/* rules: M2 */
static void
test_limits_callback_submit_memory_full_never_blocks(void)
{
	char *argv[] = { "slow", "300", NULL };
	struct st_outslot o = { &box, 0 };
	struct sipc_request rq = { .payload = pay60, .len = sizeof(pay60) };
	struct sipc_config c;
	sipc_supervisor *s;

	st_cfg_base(&c, "slow", argv, 1);
	c.max_payload = 64;
	c.ring_bytes = 200;
	c.mem_ceiling = 200;          /* 2 x 60 held + 64 reserve: no room */
	c.stall_ms = 60000;
	s = st_start(&c, 1, WAIT_MS);
	st_outbox_reset(&box);
	incb.s = s;
	incb.ran = false;
	CU_ASSERT_FATAL(sipc_submit(s, &rq, submit_in_callback, NULL, NULL) ==
	    0);
	CU_ASSERT_FATAL(sipc_submit(s, &rq, st_outbox_done, &o, NULL) == 0);
	CU_ASSERT_FATAL(tl_wait_until(incb_ran, NULL, WAIT_MS));
	TL_EQ(incb.rc_blocking, SIPC_E_FULL);
	TL_EQ(incb.rc_deadline, SIPC_E_FULL);
	CU_ASSERT(incb.took_ms < 1000);
	CU_ASSERT(st_outbox_wait(&box, 1, WAIT_MS));
	TL_EQ(box.res[0].outcome, SIPC_OUTCOME_OK);
	st_outbox_release(&box);
	CU_ASSERT(st_stats_wait(s, st_pred_settled, NULL, WAIT_MS));
	sipc_destroy(s);
}


static bool
pred_mem_zero(const struct sipc_stats *st, void *arg)
{
	return st->mem_held == 0;
}

/*
 * sipc_submit() in sipc.h and CONTRACT M4: requests are admitted only
 * while min(max_payload, mem_ceiling - max_payload) bytes of the
 * ceiling stay free for replies.  max_payload 64: with mem_ceiling 200
 * (reserve 64) requests are held up to exactly 136 bytes, with 100
 * (reserve 36) up to exactly 64; one byte more is SIPC_E_FULL at once
 * under SIPC_REQ_NOWAIT, no callback, and mem_held says what is held.
 */
/* rules: M4 */
static void
test_limits_mem_ceiling_admits_to_the_reserve(void)
{
	static const struct { size_t ceiling; size_t lens[3]; } k[] = {
		{ 200, { 60, 60, 16 } },   /* 136 = 200 - 64 */
		{ 100, { 64, 0, 0 } },     /* 64 = 100 - 36 */
	};
	static char pay[64];
	char *argv[] = { "slow", "20000", NULL };
	struct sipc_config c;
	struct sipc_request rq = { .payload = pay, .flags = SIPC_REQ_NOWAIT };
	struct st_outslot o[3] = { { &box, 0 }, { &box, 1 }, { &box, 2 } };
	sipc_supervisor *s;
	size_t held;
	unsigned i, j, n;

	for (i = 0; i < 2; i++) {
		st_cfg_base(&c, "slow", argv, 1);
		c.max_payload = 64;
		c.ring_bytes = 88;
		c.mem_ceiling = k[i].ceiling;
		c.stall_ms = 60000;
		s = st_start(&c, 1, WAIT_MS);
		st_outbox_reset(&box);
		CU_ASSERT(st_stats_wait(s, pred_mem_zero, NULL, WAIT_MS));
		held = 0;
		for (j = n = 0; j < 3 && k[i].lens[j] != 0; j++, n++) {
			rq.len = k[i].lens[j];
			TL_EQ(sipc_submit(s, &rq, st_outbox_done,
			    &o[j], NULL), 0);
			held += rq.len;
		}
		TL_EQ(held, c.mem_ceiling - (c.mem_ceiling -
		    c.max_payload < c.max_payload ? c.mem_ceiling -
		    c.max_payload : c.max_payload));
		rq.len = 1;
		TL_EQ(sipc_submit(s, &rq, never_done, NULL, NULL),
		    SIPC_E_FULL);
		TL_EQ(st_pool_stats(s).mem_held, held);
		TL_EQ(st_pool_stats(s).pending, n);
		sipc_destroy(s);
		TL_EQ(st_outbox_total(&box), n);
		st_outbox_release(&box);
	}
}

int
main(void)
{
	st_no_core_files();
	tl_suite("limits", (tl_test[]){
	    { "test_limits_reply_max_payload_boundary",
	      test_limits_reply_max_payload_boundary },
	    { "test_limits_mem_full_refusal_counted",
	      test_limits_mem_full_refusal_counted },
	    { "test_limits_ring_bytes_boundary",
	      test_limits_ring_bytes_boundary },
	    { "test_limits_callback_submit_memory_full_never_blocks",
	      test_limits_callback_submit_memory_full_never_blocks },
	    { "test_limits_mem_ceiling_admits_to_the_reserve",
	      test_limits_mem_ceiling_admits_to_the_reserve },
	    { NULL, NULL } });
	return tl_run();
}

/*
 * sipc_recycle.c - the `recycle` section of sipc_bench: what planned
 * recycling costs with a warm spare, and how soon a request reaches a
 * ready worker after a crash, with a spare and without.
 *
 * Throughput: one serving worker, requests that each take 5 ms in the
 * worker (the echo fixture's "sleep 5", a stand-in for a small
 * conversion), one at a time (sipc_call() in a loop).  Baseline: no
 * recycling, no spare.  Measured: max_requests 10 with one spare, so a
 * retiring worker hands its place over and restarts in the background.
 * The figure is calls/s; the target compares the two of the same run.
 * Where a recycle's cost goes: the queue_us of each call after a
 * change of worker (a hand-over: the spare should take it at once, so
 * about 0), and the wall time of those calls against the others'.
 *
 * Crash to next write: the worker dies in a request ("crash exit 1");
 * as soon as that call returns (UNKNOWN) the next one is made, and its
 * queue_us (submit to first write to a worker) is the time the pool had
 * no worker to write to.  With a spare it takes the place at once;
 * without, the slot restarts (backoff, spawn, handshake) first.
 *
 * Threads: the main thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "sipc_bench.h"

#define WORK_CMD "sleep 5"
#define CALLS 300
#define CALLS_QUICK 60
#define CRASHES 15
#define CRASHES_QUICK 4

static size_t
cmd(char *p, size_t size, const char *text)
{
	memcpy(p, "\0CMD", 4);
	return 4 + (size_t)snprintf(p + 4, size - 4, "%s", text);
}

/* Per-call figures of a run: the calls right after a change of worker
 * (another pid than the call before: a hand-over) and the others. */
struct per_call {
	uint64_t *after_q, *after_t, *other_t;
	unsigned na, no;
};

/* calls/s of `n` sequential 5 ms calls, or -1; pc, when given: each
 * call's wall time, and queue_us of the calls after a hand-over. */
static double
calls_per_s(unsigned max_requests, unsigned spares, unsigned n,
            struct per_call *pc)
{
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	char p[32];
	size_t len = cmd(p, sizeof(p), WORK_CMD);
	uint64_t t0, t1;
	pid_t last = 0;
	unsigned i, ok = 0;

	cfg_base(&c, 1);
	c.max_requests = max_requests;
	c.spares = spares;
	if (sup_start(&c, 30000, &s) < 0)
		return -1;
	(void)sipc_wait_ready(s, 1 + spares, 30000);
	struct sipc_request rq = { .payload = p, .len = len,
	    .timeout_ms = 30000 };
	t0 = bench_now_ns();
	for (i = 0; i < n; i++) {
		t1 = bench_now_ns();
		if (sipc_call(s, &rq, &r) == 0) {
			ok += r.outcome == SIPC_OUTCOME_OK;
			if (pc != NULL && r.outcome == SIPC_OUTCOME_OK) {
				uint64_t us = (bench_now_ns() - t1) / 1000;

				if (last != 0 && r.pid != last) {
					pc->after_q[pc->na] = r.queue_us;
					pc->after_t[pc->na++] = us;
				} else {
					pc->other_t[pc->no++] = us;
				}
				last = r.pid;
			}
			sipc_result_release(&r);
		}
	}
	double secs = (double)(bench_now_ns() - t0) / 1e9;
	if (ok != n)
		notef("recycle: %u of %u calls OK (max_requests %u, spares %u)",
		    ok, n, max_requests, spares);
	sipc_destroy(s);
	return ok / secs;
}

/* p50 and max of the next call's queue_us after a crash. */
static int
crash_to_next(unsigned spares, unsigned n, double *p50, double *max)
{
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	char crash[32], data[] = "data";
	size_t clen = cmd(crash, sizeof(crash), "crash exit 1");
	uint64_t *q = calloc(n, sizeof(*q));
	unsigned i, k = 0;

	if (q == NULL)
		return -1;
	cfg_base(&c, 1);
	c.spares = spares;
	/* crashes on purpose: no cool-down within the run */
	c.restart_intensity = 100;
	c.pool_restart_budget = 1000;
	if (sup_start(&c, 30000, &s) < 0) {
		free(q);
		return -1;
	}
	struct sipc_request rc = { .payload = crash, .len = clen,
	    .timeout_ms = 30000 };
	struct sipc_request rd = { .payload = data, .len = 4,
	    .timeout_ms = 30000 };
	for (i = 0; i < n; i++) {
		(void)sipc_wait_ready(s, 1 + spares, 30000);
		if (sipc_call(s, &rc, &r) == 0)
			sipc_result_release(&r);
		if (sipc_call(s, &rd, &r) == 0) {
			if (r.outcome == SIPC_OUTCOME_OK)
				q[k++] = r.queue_us;
			sipc_result_release(&r);
		}
	}
	sipc_destroy(s);
	if (k == 0) {
		free(q);
		return -1;
	}
	*p50 = (double)bench_pct(q, k, 50);
	*max = (double)bench_pct(q, k, 100);
	free(q);
	return 0;
}

int
sec_recycle(void)
{
	unsigned n = O.quick ? CALLS_QUICK : CALLS;
	unsigned nc = O.quick ? CRASHES_QUICK : CRASHES;
	double base, rec, p50, max;

	notef("recycle: one worker, %u sequential calls of \"%s\"; "
	    "recycled every 10 requests with one spare against neither",
	    n, WORK_CMD);
	struct per_call pc = { .after_q = calloc(n, sizeof(uint64_t)),
	    .after_t = calloc(n, sizeof(uint64_t)),
	    .other_t = calloc(n, sizeof(uint64_t)) };
	if (pc.after_q == NULL || pc.after_t == NULL || pc.other_t == NULL ||
	    (base = calls_per_s(0, 0, n, NULL)) < 0 ||
	    (rec = calls_per_s(10, 1, n, &pc)) < 0) {
		free(pc.after_q);
		free(pc.after_t);
		free(pc.other_t);
		return -1;
	}
	metricf(base, "calls/s", "sipc_recycle_none_calls");
	metricf(rec, "calls/s", "sipc_recycle_every10_spare_calls");
	/* where a recycle's cost goes: the call after a hand-over waits
	 * (queue_us) or runs longer than the others */
	if (pc.na > 0 && pc.no > 0) {
		metricf((double)bench_pct(pc.after_q, pc.na, 50), "us",
		    "sipc_recycle_after_queue_us_p50");
		metricf((double)bench_pct(pc.after_q, pc.na, 100), "us",
		    "sipc_recycle_after_queue_us_max");
		metricf((double)bench_pct(pc.after_t, pc.na, 50), "us",
		    "sipc_recycle_after_call_us_p50");
		metricf((double)bench_pct(pc.other_t, pc.no, 50), "us",
		    "sipc_recycle_other_call_us_p50");
		metricf((double)bench_pct(pc.other_t, pc.no, 90), "us",
		    "sipc_recycle_other_call_us_p90");
	}
	free(pc.after_q);
	free(pc.after_t);
	free(pc.other_t);
	if (crash_to_next(1, nc, &p50, &max) == 0) {
		metricf(p50, "us", "sipc_crash_next_write_spare_p50");
		metricf(max, "us", "sipc_crash_next_write_spare_max");
	}
	if (crash_to_next(0, nc, &p50, &max) == 0) {
		metricf(p50, "us", "sipc_crash_next_write_nospare_p50");
		metricf(max, "us", "sipc_crash_next_write_nospare_max");
	}
	return 0;
}

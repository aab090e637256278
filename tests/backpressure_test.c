/*
 * backpressure_test.c - bounded queues and memory, blocking and
 * non-blocking submit, dispatch around a stalled worker, stall detection
 * and replacement, and pipelined work through the batching writer, all
 * against real fixture workers (hang, slow, stopread, echo).
 *
 * Threads: the CUnit thread drives every test; completion callbacks run
 * on library threads (or the submitting thread for an immediate
 * rejection) and touch only the mutex-guarded tracker below.  The
 * memory test starts submitter threads of its own.  Waits are on events
 * with generous deadlines; the only timed waits that expect nothing to
 * happen are the ones that assert an idle worker is not called stalled.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sipc.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 20000          /* generous deadline for any event */
#define STALL_MS 500
#define SLACK_MS 3000          /* timer slices, rescans, slow CI, sanitizers */

/* ------------------------------------------------------------ helpers */

static struct sipc_config
base_cfg(const char *fixture, char *const *argv, unsigned workers)
{
	struct sipc_config c;

	st_cfg_init(&c, fixture, argv, workers);
	c.stall_ms = STALL_MS;
	c.grace_ms = 300;
	c.handshake_ms = 2000;
	c.drain_ms = 200;
	c.restart_base_ms = 20;
	return c;
}

static struct sipc_stats
stats(sipc_supervisor *s)
{
	struct sipc_stats st;

	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	return st;
}

static unsigned
pending(sipc_supervisor *s)
{
	struct sipc_stats st = stats(s);
	unsigned n = st.pending;

	sipc_stats_release(&st);
	return n;
}

static bool
pred_mem_is(const struct sipc_stats *st, void *arg)
{
	return st->mem_held == *(size_t *)arg;
}

/* Every accepted request's outcome, recorded once per callback. */
struct rec {
	struct tracker *t;
	unsigned calls;
	enum sipc_outcome outcome;
	int error;
	bool may_have_run;
	bool reply_ok;             /* reply equals the payload sent */
	uint32_t worker_id;
	unsigned attempts;
	struct sipc_exit exit;
	char sent[32];
	size_t sent_len;
};

struct tracker {
	pthread_mutex_t lock;
	unsigned done;
	unsigned extra;            /* callbacks beyond the first per request */
};

static void
rec_done(void *arg, struct sipc_result *res)
{
	struct rec *r = arg;

	pthread_mutex_lock(&r->t->lock);
	if (r->calls++ > 0)
		r->t->extra++;
	r->outcome = res->outcome;
	r->error = res->error;
	r->may_have_run = res->may_have_run;
	r->worker_id = res->worker_id;
	r->attempts = res->attempts;
	r->exit = res->exit;
	r->reply_ok = res->outcome == SIPC_OUTCOME_OK &&
	    res->reply_len == r->sent_len &&
	    memcmp(res->reply, r->sent, r->sent_len) == 0;
	r->t->done++;
	pthread_mutex_unlock(&r->t->lock);
	sipc_result_release(res);
}

/* A callback that must never run. */
static atomic_uint never_calls;

static void
never_done(void *arg, struct sipc_result *res)
{
	atomic_fetch_add(&never_calls, 1);
	sipc_result_release(res);
}

/* Counts its calls in the atomic_uint at `arg`. */
static void
count_done(void *arg, struct sipc_result *res)
{
	atomic_fetch_add((atomic_uint *)arg, 1);
	sipc_result_release(res);
}

struct done_wait {
	struct tracker *t;
	unsigned n;
};

static bool
tracker_reached(void *arg)
{
	struct done_wait *w = arg;
	bool ok;

	pthread_mutex_lock(&w->t->lock);
	ok = w->t->done >= w->n;
	pthread_mutex_unlock(&w->t->lock);
	return ok;
}

static bool
tracker_wait(struct tracker *t, unsigned n, int ms)
{
	struct done_wait w = { t, n };

	return tl_wait_until(tracker_reached, &w, ms);
}

/* Submit `text` (payload) tracked by `r`. */
static int
submit_rec(sipc_supervisor *s, struct tracker *t, struct rec *r,
           const char *text, size_t len, unsigned timeout_ms, unsigned flags)
{
	struct sipc_request q = { .payload = r->sent, .len = len,
	    .timeout_ms = timeout_ms, .flags = flags };

	memset(r, 0, sizeof(*r));
	r->t = t;
	CU_ASSERT_FATAL(len <= sizeof(r->sent));
	memcpy(r->sent, text, len);
	r->sent_len = len;
	return sipc_submit(s, &q, rec_done, r, NULL);
}

struct wpred {
	sipc_supervisor *s;
	unsigned w;
	unsigned inflight, queued;
};

static bool
worker_holds(void *arg)
{
	struct wpred *p = arg;
	struct sipc_worker_stats ws = st_worker_stats(p->s, p->w);

	return ws.inflight == p->inflight && ws.queued == p->queued;
}

static bool
worker_loaded(void *arg)
{
	struct wpred *p = arg;
	struct sipc_worker_stats ws = st_worker_stats(p->s, p->w);

	return ws.inflight + ws.queued >= p->inflight;
}

/* Wait until worker `w` holds at least `n` requests. */
static bool
wait_load(sipc_supervisor *s, unsigned w, unsigned n)
{
	struct wpred p = { s, w, n, 0 };

	return tl_wait_until(worker_loaded, &p, WAIT_MS);
}

/* Wait until worker `w` holds exactly that many written and queued. */
static bool
wait_holds(sipc_supervisor *s, unsigned w, unsigned inflight, unsigned queued)
{
	struct wpred p = { s, w, inflight, queued };

	return tl_wait_until(worker_holds, &p, WAIT_MS);
}

/* ------------------------------------------------------------ submit */

/*
 * Non-blocking submit against full rings: SIPC_E_FULL at once, the
 * callback never runs, and the requests already held are untouched
 * (each still gets exactly one outcome at destroy).
 */
/* rules: M2 R7 */
static void
test_backpressure_nowait_full_at_once(void)
{
	struct sipc_config c = base_cfg("hang", NULL, 1);
	struct tracker t = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct sipc_request q = { .payload = "no room", .len = 7,
	    .flags = SIPC_REQ_NOWAIT };
	struct rec recs[6];
	struct sipc_stats st;
	sipc_supervisor *s;
	int64_t t0, dt;
	unsigned i, full = 0;
	size_t want = 6 * 4;

	c.max_inflight = 2;
	c.ring_frames = 4;
	c.stall_ms = 60000;            /* the hang is the point, not a stall */
	s = st_start(&c, c.workers, WAIT_MS);
	atomic_store(&never_calls, 0);
	for (i = 0; i < 2; i++)
		CU_ASSERT(submit_rec(s, &t, &recs[i], "held", 4, 0,
		    SIPC_REQ_NOWAIT) == 0);
	CU_ASSERT_FATAL(wait_holds(s, 0, 2, 0));
	for (i = 2; i < 6; i++)
		CU_ASSERT(submit_rec(s, &t, &recs[i], "held", 4, 0,
		    SIPC_REQ_NOWAIT) == 0);
	CU_ASSERT(st_worker_stats(s, 0).queued == 4);
	t0 = tl_now_ms();
	for (i = 0; i < 100; i++)
		if (sipc_submit(s, &q, never_done, NULL, NULL) == SIPC_E_FULL)
			full++;
	dt = tl_now_ms() - t0;
	CU_ASSERT(full == 100);
	CU_ASSERT(dt < 1000);          /* 100 refusals, none of them waited */
	st = stats(s);
	CU_ASSERT(st.pending == 6);    /* nothing else disturbed */
	CU_ASSERT(st.workers[0].inflight == 2 && st.workers[0].queued == 4);
	sipc_stats_release(&st);
	/* only the held requests' bytes (a frame the reader is handling,
	 * the HELLO just after READY, holds its own for a moment) */
	CU_ASSERT(st_stats_wait(s, pred_mem_is, &want, WAIT_MS));
	sipc_destroy(s);
	CU_ASSERT(atomic_load(&never_calls) == 0);
	CU_ASSERT(t.done == 6 && t.extra == 0);
	for (i = 0; i < 6; i++) {
		CU_ASSERT(recs[i].calls == 1);
		if (i < 2) {           /* written: it may have run */
			CU_ASSERT(recs[i].may_have_run &&
			    recs[i].outcome != SIPC_OUTCOME_REJECTED);
		} else {               /* queued: never sent */
			CU_ASSERT(recs[i].outcome == SIPC_OUTCOME_REJECTED &&
			    !recs[i].may_have_run);
		}
	}
}

/* A blocking submit waits for room and goes through once it appears. */
/* rules: M3 */
static void
test_backpressure_blocking_submit_completes_when_room(void)
{
	char *argv[] = { "slow", "200", NULL };
	struct sipc_config c = base_cfg("slow", argv, 1);
	struct tracker t = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct rec recs[3];
	sipc_supervisor *s;
	int64_t t0, dt;
	unsigned i;

	c.max_inflight = 1;
	c.ring_frames = 1;
	c.stall_ms = 60000;
	s = st_start(&c, c.workers, WAIT_MS);
	CU_ASSERT(submit_rec(s, &t, &recs[0], "first", 5, WAIT_MS, 0) == 0);
	CU_ASSERT_FATAL(wait_holds(s, 0, 1, 0));
	CU_ASSERT(submit_rec(s, &t, &recs[1], "second", 6, WAIT_MS, 0) == 0);
	CU_ASSERT(st_worker_stats(s, 0).queued == 1);          /* ring full now */
	t0 = tl_now_ms();
	CU_ASSERT(submit_rec(s, &t, &recs[2], "third", 5, 10000, 0) == 0);
	dt = tl_now_ms() - t0;
	/* It returned only once the first had been answered (frames in:
	 * HELLO and the first's REPLY; the second is written only after
	 * that reply freed the in-flight slot). */
	CU_ASSERT(st_worker_stats(s, 0).frames_in >= 2);
	CU_ASSERT(dt < 10000);
	CU_ASSERT(tracker_wait(&t, 3, WAIT_MS));
	for (i = 0; i < 3; i++)
		CU_ASSERT(recs[i].calls == 1 && recs[i].reply_ok);
	sipc_destroy(s);
}

/*
 * A blocking submit whose deadline passes before room appears: the
 * callback gets REJECTED / SIPC_E_FULL (never sent), after roughly the
 * deadline; sipc_call() reports the same.
 */
/* rules: M3 */
static void
test_backpressure_blocking_submit_deadline_rejects(void)
{
	struct sipc_config c = base_cfg("hang", NULL, 1);
	struct tracker t = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct sipc_request q = { .payload = "late", .len = 4,
	    .timeout_ms = 500 };
	struct sipc_result res;
	struct rec recs[3];
	sipc_supervisor *s;
	int64_t t0, dt;

	c.max_inflight = 1;
	c.ring_frames = 1;
	c.stall_ms = 60000;
	s = st_start(&c, c.workers, WAIT_MS);
	CU_ASSERT(submit_rec(s, &t, &recs[0], "held", 4, 0, 0) == 0);
	CU_ASSERT_FATAL(wait_holds(s, 0, 1, 0));
	CU_ASSERT(submit_rec(s, &t, &recs[1], "held", 4, 0, 0) == 0);
	CU_ASSERT_FATAL(st_worker_stats(s, 0).queued == 1);
	t0 = tl_now_ms();
	CU_ASSERT(submit_rec(s, &t, &recs[2], "waits", 5, 700, 0) == 0);
	dt = tl_now_ms() - t0;
	CU_ASSERT(dt >= 650 && dt <= 700 + SLACK_MS);
	CU_ASSERT(tracker_wait(&t, 1, WAIT_MS));
	CU_ASSERT(recs[2].calls == 1);
	CU_ASSERT(recs[2].outcome == SIPC_OUTCOME_REJECTED);
	CU_ASSERT(recs[2].error == SIPC_E_FULL);
	CU_ASSERT(!recs[2].may_have_run && recs[2].attempts == 0);
	if (dt < 650 || recs[2].error != SIPC_E_FULL)
		fprintf(stderr, "deadline submit: %lld ms, %s\n", (long long)dt,
		    sipc_strerror(recs[2].error));
	t0 = tl_now_ms();
	CU_ASSERT_FATAL(sipc_call(s, &q, &res) == 0);
	dt = tl_now_ms() - t0;
	CU_ASSERT(res.outcome == SIPC_OUTCOME_REJECTED && res.error == SIPC_E_FULL);
	CU_ASSERT(dt >= 450 && dt <= 500 + SLACK_MS);
	sipc_result_release(&res);
	CU_ASSERT(pending(s) == 2);  /* the held two are untouched */
	sipc_destroy(s);
	CU_ASSERT(t.done == 3 && t.extra == 0);
	CU_ASSERT(recs[0].calls == 1 && recs[1].calls == 1);
}

/*
 * The same promise when the limit reached is the memory ceiling rather
 * than a ring: a blocking submit with a deadline waits for it, then the
 * callback gets REJECTED / SIPC_E_FULL (the call itself succeeded).
 */
/* rules: M3 */
static void
test_backpressure_blocking_submit_memory_deadline_rejects(void)
{
	char *argv[] = { "stopread", "0", NULL };
	struct sipc_config c = base_cfg("stopread", argv, 1);
	struct tracker t = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct sipc_request q = { .len = 32 * 1024, .flags = SIPC_REQ_NOWAIT };
	atomic_uint held_calls = 0;
	struct rec late;
	struct sipc_stats st;
	sipc_supervisor *s;
	unsigned held = 0;
	int64_t t0, dt;
	size_t want;
	void *buf = calloc(1, 32 * 1024);
	int rc;

	CU_ASSERT_FATAL(buf != NULL);
	q.payload = buf;
	c.max_payload = 32 * 1024;
	c.ring_bytes = 256 * 1024;
	c.mem_ceiling = 256 * 1024;
	c.stall_ms = 60000;
	s = st_start(&c, c.workers, WAIT_MS);
	while (held < 64 && sipc_submit(s, &q, count_done, &held_calls,
	    NULL) == 0)
		held++;
	/* A frame the reader is still handling (the HELLO, just after
	 * READY) holds its few bytes for a moment: once only the held
	 * requests count, fill up again. */
	want = (size_t)held * 32 * 1024;
	CU_ASSERT(st_stats_wait(s, pred_mem_is, &want, WAIT_MS));
	while (held < 64 && sipc_submit(s, &q, count_done, &held_calls,
	    NULL) == 0)
		held++;
	st = stats(s);
	/* at the ceiling: what requests may hold leaves one maximal reply
	 * free (the reply reserve) */
	CU_ASSERT(st.mem_held <= c.mem_ceiling - c.max_payload);
	CU_ASSERT(st.mem_held + 32 * 1024 + c.max_payload > c.mem_ceiling);
	sipc_stats_release(&st);
	t0 = tl_now_ms();
	rc = submit_rec(s, &t, &late, "late", 4, 400, 0);
	dt = tl_now_ms() - t0;
	CU_ASSERT(rc == 0);
	if (rc != 0)
		fprintf(stderr, "blocking submit at the memory ceiling: %s\n",
		    sipc_strerror(rc));
	CU_ASSERT(dt >= 350 && dt <= 400 + SLACK_MS);
	CU_ASSERT(rc != 0 || tracker_wait(&t, 1, WAIT_MS));
	if (rc == 0) {
		CU_ASSERT(late.calls == 1);
		CU_ASSERT(late.outcome == SIPC_OUTCOME_REJECTED);
		CU_ASSERT(late.error == SIPC_E_FULL && !late.may_have_run);
	}
	CU_ASSERT(pending(s) == held);   /* the held ones untouched */
	sipc_destroy(s);
	CU_ASSERT(atomic_load(&held_calls) == held);  /* each got one */
	free(buf);
}

/* ------------------------------------------------------------ memory */

#define MEM_CEILING (1u << 20)
#define MEM_PAYLOAD (64u * 1024)
#define MEM_THREADS 3
/*
 * Process memory allowed beyond the payload ceiling.  Everything the
 * supervisor keeps per request besides the payload copy (which the
 * ceiling counts) is a few hundred bytes; per worker the reader holds a
 * 64 KiB read buffer and line buffers, and each library thread touches
 * a little stack.  The allocator is the big one: every submitting thread
 * gets its own malloc arena, and an arena keeps the freed payload chunks
 * it once held (up to its own peak, itself under the ceiling) instead of
 * returning them at once.  MEM_THREADS arenas plus the main one, each at
 * most the ceiling, plus 4 MiB for threads, buffers and the test's own
 * bookkeeping.
 */
#define RSS_OVERHEAD_KB ((MEM_THREADS + 1) * (MEM_CEILING / 1024) + 4096)

struct mem_load {
	sipc_supervisor *s;
	struct tracker *t;
	bool nowait;
	unsigned n, accepted, full, other;
	struct rec *recs;
	uint8_t *buf;
	atomic_bool finished;
};

static void *
mem_submitter(void *arg)
{
	struct mem_load *m = arg;
	struct sipc_request q = { .payload = m->buf, .len = MEM_PAYLOAD,
	    .timeout_ms = m->nowait ? 0 : 200,
	    .flags = m->nowait ? SIPC_REQ_NOWAIT : 0 };
	unsigned i;
	int rc;

	for (i = 0; i < m->n; i++) {
		m->recs[i].t = m->t;
		rc = sipc_submit(m->s, &q, rec_done, &m->recs[i], NULL);
		if (rc == 0)
			m->accepted++;
		else if (rc == SIPC_E_FULL)
			m->full++;
		else
			m->other++;
	}
	atomic_store(&m->finished, true);
	return NULL;
}

struct mem_peak {
	size_t mem_held;
	long rss_kb;
};

static void
mem_sample(sipc_supervisor *s, struct mem_peak *p)
{
	struct sipc_stats st;
	long rss = st_status_kb("VmRSS:");

	if (sipc_stats_get(s, &st) == 0) {
		if (st.mem_held > p->mem_held)
			p->mem_held = st.mem_held;
		sipc_stats_release(&st);
	}
	if (rss > p->rss_kb)
		p->rss_kb = rss;
}

/*
 * Workers that stop reading at once, payloads of 64 KiB from several
 * threads: held payload bytes never pass the ceiling, and the process's
 * resident memory stays under baseline + ceiling + a fixed overhead.
 */
/* rules: M1 */
static void
test_backpressure_memory_ceiling_bounded(void)
{
	char *argv[] = { "stopread", "0", NULL };
	struct sipc_config c = base_cfg("stopread", argv, 2);
	struct tracker t = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct mem_load m[MEM_THREADS];
	struct mem_peak peak = { 0, 0 };
	pthread_t th[MEM_THREADS];
	unsigned i, accepted = 0, full = 0;
	uint8_t *buf = malloc(MEM_PAYLOAD);
	long rss0;
	sipc_supervisor *s;

	CU_ASSERT_FATAL(buf != NULL);
	memset(buf, 0xa5, MEM_PAYLOAD);
	c.max_payload = MEM_PAYLOAD;
	c.ring_bytes = MEM_CEILING / 2;
	c.mem_ceiling = MEM_CEILING;
	c.ring_frames = 256;
	c.max_inflight = 16;
	c.stall_ms = 60000;            /* keep the stopped workers stopped */
	rss0 = st_status_kb("VmRSS:");
	s = st_start(&c, c.workers, WAIT_MS);
	for (i = 0; i < MEM_THREADS; i++) {
		m[i] = (struct mem_load){ .s = s, .t = &t, .nowait = i == 0,
		    .n = i == 0 ? 400 : 15, .buf = buf };
		m[i].recs = calloc(m[i].n, sizeof(struct rec));
		CU_ASSERT_FATAL(m[i].recs != NULL);
		CU_ASSERT_FATAL(pthread_create(&th[i], NULL, mem_submitter,
		    &m[i]) == 0);
	}
	for (i = 0; i < 10000 && !(atomic_load(&m[0].finished) &&
	    atomic_load(&m[1].finished) && atomic_load(&m[2].finished)); i++) {
		mem_sample(s, &peak);
		usleep(2000);          /* sampling period, not a wait for an event */
	}
	for (i = 0; i < MEM_THREADS; i++) {
		pthread_join(th[i], NULL);
		accepted += m[i].accepted;
		full += m[i].full;
		CU_ASSERT(m[i].other == 0);
	}
	mem_sample(s, &peak);
	CU_ASSERT(peak.mem_held <= MEM_CEILING);
	CU_ASSERT(peak.mem_held >= MEM_CEILING / 2);   /* it was under load */
	CU_ASSERT(full > 0);
	fprintf(stderr, "memory: accepted %u full %u, peak held %zu of %u, "
	    "rss %ld -> %ld KiB (allowed +%u)\n", accepted, full,
	    peak.mem_held, MEM_CEILING, rss0, peak.rss_kb,
	    (unsigned)(MEM_CEILING / 1024 + RSS_OVERHEAD_KB));
	if (ST_CHECK_RSS)
		CU_ASSERT(peak.rss_kb <= rss0 + (long)(MEM_CEILING / 1024) +
		    RSS_OVERHEAD_KB);
	sipc_destroy(s);
	/* every accepted submit got exactly one outcome */
	CU_ASSERT(t.done == accepted && t.extra == 0);
	for (i = 0; i < MEM_THREADS; i++)
		free(m[i].recs);
	free(buf);
}

/* ------------------------------------------------------------ stalls */

static int
find_busy_worker(sipc_supervisor *s, unsigned n)
{
	struct sipc_stats st;
	int w = -1;

	if (sipc_stats_get(s, &st) != 0)
		return -1;
	for (unsigned i = 0; i < n && i < st.nworkers; i++)
		if (st.workers[i].frames_in >= 2)   /* HELLO + an ACCEPT */
			w = (int)i;
	sipc_stats_release(&st);
	return w;
}

struct busy {
	sipc_supervisor *s;
	int w;
};

static bool
busy_found(void *arg)
{
	struct busy *b = arg;

	return (b->w = find_busy_worker(b->s, 4)) >= 0;
}

struct regen {
	sipc_supervisor *s;
	unsigned w;
	uint32_t gen;
};

static bool
replaced_ready(void *arg)
{
	struct regen *r = arg;
	struct sipc_worker_stats ws = st_worker_stats(r->s, r->w);

	return ws.generation > r->gen && ws.state == SIPC_WS_READY;
}

/* Poll until worker `w` leaves READY generation `gen`; returns when. */
static int64_t
wait_out_of_service(sipc_supervisor *s, unsigned w, uint32_t gen)
{
	int64_t end = tl_now_ms() + WAIT_MS;
	struct sipc_worker_stats ws;

	while (tl_now_ms() < end) {
		ws = st_worker_stats(s, w);
		if (ws.generation != gen || ws.state != SIPC_WS_READY)
			return tl_now_ms();
		usleep(1000);
	}
	return -1;
}

#define BURST 300

/* Burst of small requests; returns the most seen queued on worker w. */
static unsigned
burst(sipc_supervisor *s, struct tracker *t, struct rec *recs, unsigned w)
{
	unsigned i, maxq = 0, q;
	char buf[32];
	int n;

	for (i = 0; i < BURST; i++) {
		n = snprintf(buf, sizeof(buf), "burst %u", i);
		CU_ASSERT(submit_rec(s, t, &recs[i], buf, (size_t)n, WAIT_MS,
		    0) == 0);
		if (i % 4 == 0 && (q = st_worker_stats(s, w).queued) > maxq)
			maxq = q;
	}
	return maxq;
}

/*
 * Keep the three healthy workers busy for a moment (well under the stall
 * timeout), so the burst that follows fills every ring, the stalled
 * worker's included, however fast the healthy ones would drain it.
 * Least-outstanding dispatch gives one to each idle worker, none to the
 * stalled one, which already holds the stop command.
 */
static void
occupy_others(sipc_supervisor *s, struct tracker *t, struct rec *sleeps,
              unsigned w)
{
	unsigned i;

	for (i = 0; i < 3; i++)
		CU_ASSERT(submit_rec(s, t, &sleeps[i], "\0CMDsleep 400", 13,
		    WAIT_MS, 0) == 0);
	for (i = 0; i < 4; i++)
		if (i != w)
			CU_ASSERT(wait_load(s, i, 1));
	/* one each: the stalled worker got none of them */
	for (i = 0; i < 4; i++) {
		struct sipc_worker_stats ws = st_worker_stats(s, i);

		CU_ASSERT(ws.inflight + ws.queued == 1);
	}
}

/* Calls made while the worker is stalled are served by the others. */
static void
calls_avoid(sipc_supervisor *s, unsigned w, unsigned n)
{
	struct sipc_request q = { .timeout_ms = WAIT_MS };
	struct sipc_result res;
	char buf[32];

	for (unsigned i = 0; i < n; i++) {
		q.payload = buf;
		q.len = (size_t)snprintf(buf, sizeof(buf), "during %u", i);
		CU_ASSERT_FATAL(sipc_call(s, &q, &res) == 0);
		CU_ASSERT(res.outcome == SIPC_OUTCOME_OK);
		CU_ASSERT(res.worker_id != w);
		sipc_result_release(&res);
	}
}

static void
check_stall_outcomes(struct tracker *t, struct rec *stop, struct rec *recs,
                     unsigned w)
{
	unsigned i, ok = 0, unknown = 0;

	pthread_mutex_lock(&t->lock);
	CU_ASSERT(t->extra == 0);
	/* the request that stopped the worker had run: it may have run */
	CU_ASSERT(stop->calls == 1);
	CU_ASSERT(stop->outcome == SIPC_OUTCOME_UNKNOWN && stop->may_have_run);
	CU_ASSERT(stop->error == SIPC_E_STALL);
	CU_ASSERT(stop->exit.kind == SIPC_EXIT_TERMINATED &&
	    stop->exit.reason == SIPC_TERM_STALL);
	for (i = 0; i < BURST; i++) {
		CU_ASSERT(recs[i].calls == 1);
		if (recs[i].reply_ok) {
			ok++;
		} else if (recs[i].outcome == SIPC_OUTCOME_UNKNOWN &&
		    recs[i].may_have_run && recs[i].worker_id == w) {
			unknown++;     /* accepted by the stalled worker */
		} else {
			fprintf(stderr, "burst %u: %s %s\n", i,
			    sipc_outcome_name(recs[i].outcome),
			    sipc_strerror(recs[i].error));
		}
	}
	pthread_mutex_unlock(&t->lock);
	/* only what the stalled worker had accepted may be unresolved;
	 * it read nothing after the stop command, so that is none */
	CU_ASSERT(ok + unknown == BURST);
	CU_ASSERT(unknown == 0);
}

/*
 * One of four workers stops reading.  Other requests keep completing on
 * the other three; requests queued behind it move and complete OK; it is
 * detected within stall_ms (+ slack), classified, and replaced.
 */
/* rules: A2 L1 R1 */
static void
test_backpressure_stalled_worker_avoided_and_replaced(void)
{
	struct sipc_config c = base_cfg("echo", NULL, 4);
	struct tracker t = { .lock = PTHREAD_MUTEX_INITIALIZER };
	static struct rec recs[BURST];
	struct rec stop, sleeps[3];
	struct busy b;
	struct regen rg;
	struct sipc_worker_stats ws;
	struct sipc_stats st;
	sipc_supervisor *s;
	int64_t t_stop, t_burst, t_out;
	unsigned maxq;

	c.max_inflight = 2;
	c.ring_frames = 8;
	c.stall_ms = 1000;             /* room to call while it is stalled */
	c.env_set = st_env_accept_frames;  /* find_busy_worker() */
	s = st_start(&c, c.workers, WAIT_MS);
	t_stop = tl_now_ms();
	CU_ASSERT_FATAL(submit_rec(s, &t, &stop, "\0CMDstopread", 12, 0,
	    0) == 0);
	b.s = s;
	CU_ASSERT_FATAL(tl_wait_until(busy_found, &b, WAIT_MS));
	occupy_others(s, &t, sleeps, (unsigned)b.w);
	maxq = burst(s, &t, recs, (unsigned)b.w);
	t_burst = tl_now_ms();
	CU_ASSERT(maxq > 0);           /* some really were queued behind it */
	calls_avoid(s, (unsigned)b.w, 20);
	t_out = wait_out_of_service(s, (unsigned)b.w, 1);
	CU_ASSERT_FATAL(t_out > 0);
	CU_ASSERT(t_out - t_stop >= c.stall_ms - 5);
	CU_ASSERT(t_out - t_burst <= c.stall_ms + SLACK_MS);
	rg = (struct regen){ s, (unsigned)b.w, 1 };
	CU_ASSERT(tl_wait_until(replaced_ready, &rg, WAIT_MS));
	ws = st_worker_stats(s, (unsigned)b.w);
	CU_ASSERT(ws.generation == 2 && ws.state == SIPC_WS_READY);
	CU_ASSERT(ws.last_exit.kind == SIPC_EXIT_TERMINATED);
	CU_ASSERT(ws.last_exit.reason == SIPC_TERM_STALL);
	CU_ASSERT(tracker_wait(&t, BURST + 4, WAIT_MS));
	check_stall_outcomes(&t, &stop, recs, (unsigned)b.w);
	for (unsigned i = 0; i < 3; i++)
		CU_ASSERT(sleeps[i].calls == 1 &&
		    sleeps[i].outcome == SIPC_OUTCOME_OK);
	st = stats(s);
	CU_ASSERT(st.requeued >= 1);
	CU_ASSERT(st.pending == 0);
	sipc_stats_release(&st);
	sipc_destroy(s);
}

static bool
generation_changed(void *arg)
{
	struct regen *r = arg;

	return st_worker_stats(r->s, r->w).generation != r->gen;
}

/*
 * A worker that reads but never replies (and sends no heartbeat) is
 * stalled once it holds work for stall_ms - and only then: idle, it is
 * left alone.
 */
/* rules: L1 L2 */
static void
test_backpressure_hang_with_work_is_stalled(void)
{
	struct sipc_config c = base_cfg("hang", NULL, 1);
	struct sipc_request q = { .payload = "never", .len = 5,
	    .timeout_ms = WAIT_MS };
	struct sipc_worker_stats ws;
	struct sipc_result res;
	struct regen rg;
	sipc_supervisor *s;
	int64_t t0, dt;

	c.restart_base_ms = 5000;      /* keep the ended worker's record */
	c.restart_cap_ms = 5000;
	s = st_start(&c, c.workers, WAIT_MS);
	rg = (struct regen){ s, 0, 1 };
	/* idle for three stall periods: not a stall (nothing pending) */
	CU_ASSERT(!tl_wait_until(generation_changed, &rg, 3 * STALL_MS));
	CU_ASSERT(st_worker_stats(s, 0).state == SIPC_WS_READY);
	t0 = tl_now_ms();
	CU_ASSERT_FATAL(sipc_call(s, &q, &res) == 0);
	dt = tl_now_ms() - t0;
	if (res.outcome != SIPC_OUTCOME_UNKNOWN || res.error != SIPC_E_STALL)
		fprintf(stderr, "hang: %s %s after %lld ms, attempts %u, "
		    "exit %s/%s\n", sipc_outcome_name(res.outcome),
		    sipc_strerror(res.error), (long long)dt, res.attempts,
		    sipc_exit_kind_name(res.exit.kind),
		    sipc_term_reason_name(res.exit.reason));
	CU_ASSERT(res.outcome == SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT(res.error == SIPC_E_STALL && res.may_have_run);
	CU_ASSERT(res.exit.kind == SIPC_EXIT_TERMINATED &&
	    res.exit.reason == SIPC_TERM_STALL);
	CU_ASSERT(dt >= STALL_MS - 5 && dt <= STALL_MS + c.grace_ms + SLACK_MS);
	sipc_result_release(&res);
	ws = st_worker_stats(s, 0);
	CU_ASSERT(ws.last_exit.kind == SIPC_EXIT_TERMINATED);
	CU_ASSERT(ws.last_exit.reason == SIPC_TERM_STALL);
	sipc_destroy(s);
}

/* ------------------------------------------------------------ batching */

#define PIPELINED 10000

struct pipe_count {
	pthread_mutex_t lock;
	unsigned done, ok;
};

static void
pipe_done(void *arg, struct sipc_result *res)
{
	struct pipe_count *p = arg;
	bool ok = res->outcome == SIPC_OUTCOME_OK && res->reply_len == 16 &&
	    memcmp(res->reply, "pipelined-", 10) == 0;

	pthread_mutex_lock(&p->lock);
	p->done++;
	p->ok += ok;
	pthread_mutex_unlock(&p->lock);
	sipc_result_release(res);
}

static bool
pipe_finished(void *arg)
{
	struct pipe_count *p = arg;
	bool f;

	pthread_mutex_lock(&p->lock);
	f = p->done == PIPELINED;
	pthread_mutex_unlock(&p->lock);
	return f;
}

/*
 * Many small requests in flight through the batching writer all come
 * back, and the counters account for every frame and byte sent.
 * (How many frames go per system call is measured in bench/.)
 */
/* rules: C2 */
static void
test_backpressure_pipelined_all_complete(void)
{
	struct sipc_config c = base_cfg("echo", NULL, 2);
	struct pipe_count p = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct sipc_request q = { .len = 16, .timeout_ms = WAIT_MS };
	uint64_t frames = 0, bytes = 0, done = 0;
	struct sipc_stats st;
	sipc_supervisor *s;
	char buf[32];
	unsigned i;

	c.max_inflight = 64;
	s = st_start(&c, c.workers, WAIT_MS);
	q.payload = buf;
	for (i = 0; i < PIPELINED; i++) {
		snprintf(buf, sizeof(buf), "pipelined-%06u", i);
		CU_ASSERT(sipc_submit(s, &q, pipe_done, &p, NULL) == 0);
	}
	CU_ASSERT(tl_wait_until(pipe_finished, &p, 60000));
	CU_ASSERT(p.ok == PIPELINED);
	st = stats(s);
	for (i = 0; i < st.nworkers; i++) {
		frames += st.workers[i].frames_out;
		bytes += st.workers[i].bytes_out;
		done += st.workers[i].completed;
		CU_ASSERT(st.workers[i].frames_in >= st.workers[i].completed);
	}
	CU_ASSERT(frames >= PIPELINED);
	CU_ASSERT(bytes >= (uint64_t)PIPELINED * (24 + 16));
	CU_ASSERT(done == PIPELINED);
	CU_ASSERT(st.completed_ok == PIPELINED && st.pending == 0);
	sipc_stats_release(&st);
	sipc_destroy(s);
}

/*
 * A worker ends with its queue full and requests written to it that it
 * never started (stopped, then killed: the start counter says so).  The
 * queued ones go back on its queue for the restart; the written ones are
 * accepted work too and must not be refused for the room the queued
 * ones (or blocked submitters) took meanwhile: every request ends OK on
 * the restarted worker.  Before, the written ones ended REJECTED /
 * SIPC_E_UNAVAILABLE, reported as "no worker available (restart
 * limit)" with no limit reached.
 */
static bool
pred_four_written(const struct sipc_stats *st, void *arg)
{
	return st->workers[0].inflight == 4 && st->pending == 8;
}

/* rules: R1 */
static void
test_backpressure_requeue_beats_full_queue(void)
{
	static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };
	static struct st_outslot slots[8];
	struct sipc_config c = base_cfg("echo", NULL, 1);
	struct sipc_stats st;
	sipc_supervisor *s;
	char buf[8][64];
	unsigned k, ok = 0, second = 0;
	pid_t worker;

	c.max_inflight = 4;
	c.ring_frames = 4;
	c.stall_ms = 60000;
	c.cancel_grace_ms = 60000;
	s = st_start(&c, 1, WAIT_MS);
	worker = st_reader_pid(st_worker_stats(s, 0).pid);
	CU_ASSERT_FATAL(worker > 0 && kill(worker, SIGSTOP) == 0);
	st_outbox_reset(&box);
	for (k = 0; k < 8; k++) {
		struct sipc_request req = { .payload = buf[k], .len = 64,
		    .timeout_ms = WAIT_MS };

		memset(buf[k], 'a' + (int)k, 64);
		slots[k] = (struct st_outslot){ &box, k };
		CU_ASSERT_FATAL(sipc_submit(s, &req, st_outbox_done,
		    &slots[k], NULL) == 0);
	}
	/* 4 written, 4 queued */
	CU_ASSERT_FATAL(st_stats_wait(s, pred_four_written, NULL, WAIT_MS));
	CU_ASSERT(kill(worker, SIGKILL) == 0);
	CU_ASSERT_FATAL(st_outbox_wait(&box, 8, WAIT_MS));
	for (k = 0; k < 8; k++) {
		ok += box.calls[k] == 1 &&
		    box.res[k].outcome == SIPC_OUTCOME_OK &&
		    box.res[k].reply_len == 64 &&
		    memcmp(box.res[k].reply, buf[k], 64) == 0;
		second += box.res[k].attempts == 2;
		if (box.res[k].outcome != SIPC_OUTCOME_OK)
			fprintf(stderr, "request %u: %s %s\n", k,
			    sipc_outcome_name(box.res[k].outcome),
			    sipc_strerror(box.res[k].error));
	}
	CU_ASSERT_EQUAL(ok, 8);
	CU_ASSERT_EQUAL(second, 4);       /* the written ones, again */
	st = stats(s);
	CU_ASSERT_EQUAL(st.rejected, 0);
	CU_ASSERT_EQUAL(st.workers[0].restarts, 1);
	sipc_stats_release(&st);
	st_outbox_release(&box);
	sipc_destroy(s);
}

int
main(void)
{
	tl_suite("backpressure", (tl_test[]){
	    { "test_backpressure_nowait_full_at_once",
	      test_backpressure_nowait_full_at_once },
	    { "test_backpressure_blocking_submit_completes_when_room",
	      test_backpressure_blocking_submit_completes_when_room },
	    { "test_backpressure_blocking_submit_deadline_rejects",
	      test_backpressure_blocking_submit_deadline_rejects },
	    { "test_backpressure_blocking_submit_memory_deadline_rejects",
	      test_backpressure_blocking_submit_memory_deadline_rejects },
	    { "test_backpressure_memory_ceiling_bounded",
	      test_backpressure_memory_ceiling_bounded },
	    { "test_backpressure_stalled_worker_avoided_and_replaced",
	      test_backpressure_stalled_worker_avoided_and_replaced },
	    { "test_backpressure_hang_with_work_is_stalled",
	      test_backpressure_hang_with_work_is_stalled },
	    { "test_backpressure_pipelined_all_complete",
	      test_backpressure_pipelined_all_complete },
	    { "test_backpressure_requeue_beats_full_queue",
	      test_backpressure_requeue_beats_full_queue },
	    { NULL, NULL } });
	return tl_run();
}

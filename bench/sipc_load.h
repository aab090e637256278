/*
 * sipc_load.h - load generator and latency histogram for sipc_bench.c,
 * using only the public API of include/sipc.h.
 *
 * A load keeps up to `window` requests of `size` bytes outstanding:
 * submitter threads submit while fewer than `window` are out, and sleep
 * when the window is full until completions have drained it to half
 * (the completion that crosses that mark posts one wake-up).  The
 * completion callback (a library thread, no library lock held) records
 * the outcome.  This is the raw pipelined baseline's throttle: its
 * writer blocks on a full socket buffer and the kernel wakes it once the
 * reader has drained part of it, not per message read.  The submit time
 * travels in the callback's `arg`, so there is no per-request allocation
 * in the generator itself.  With load_refill_each set before
 * load_start(), every completion of a full window wakes a submitter
 * (the low mark is window - 1): a client that submits one request per
 * completion, the generator this bench used before; the `pipe` and
 * `cost` sections print that figure beside the other at 64 B.  With a
 * window of 0 the generator never holds a submitter back: the library
 * does (sipc_submit() blocks while the queues are full).
 *
 * Threads: submitters write only the atomics; callbacks write atomics and
 * histogram buckets (atomic adds); the bench's main thread starts, reads
 * and stops.  One load runs at a time per process (`bench_cur`).
 */
#ifndef SIPC_BENCH_LOAD_H
#define SIPC_BENCH_LOAD_H

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "sipc.h"
#include "bench.h"

/* Log-linear latency histogram: 32 sub-buckets per power of two of ns
 * (about 3% resolution), up to 2^40 ns. */
#define HSUB 32
#define HEXP 41
struct hist {
	atomic_uint_fast64_t b[HEXP * HSUB];
};

static inline unsigned
hist_index(uint64_t ns)
{
	unsigned e, s;

	if (ns < HSUB)
		return (unsigned)ns;
	e = 63u - (unsigned)__builtin_clzll(ns);      /* >= 5 */
	s = (unsigned)(ns >> (e - 5)) & (HSUB - 1);
	e = e - 4;
	if (e >= HEXP)
		return HEXP * HSUB - 1;
	return e * HSUB + s;
}

/* Lower bound in ns of bucket i (inverse of hist_index). */
static inline uint64_t
hist_value(unsigned i)
{
	unsigned e = i / HSUB, s = i % HSUB;

	if (e == 0)
		return s;
	return (uint64_t)(HSUB + s) << (e - 1);
}

static inline void
hist_add(struct hist *h, uint64_t ns)
{
	atomic_fetch_add_explicit(&h->b[hist_index(ns)], 1,
	    memory_order_relaxed);
}

/* Percentile over the sum of `n` histograms; 0 when empty. */
static inline uint64_t
hist_pct(struct hist *const *hs, size_t n, double pct, uint64_t *ret_count)
{
	uint64_t total = 0, acc = 0, want, c;
	unsigned i;
	size_t k;

	for (k = 0; k < n; k++)
		for (i = 0; i < HEXP * HSUB; i++)
			total += atomic_load(&hs[k]->b[i]);
	*ret_count = total;
	if (total == 0)
		return 0;
	want = (uint64_t)(pct / 100.0 * (double)total + 0.999999);
	for (i = 0; i < HEXP * HSUB; i++) {
		c = 0;
		for (k = 0; k < n; k++)
			c += atomic_load(&hs[k]->b[i]);
		acc += c;
		if (acc >= want)
			return hist_value(i);
	}
	return hist_value(HEXP * HSUB - 1);
}

/* Per-slot accounting for the stall test.  Slots >= TRACKW share the
 * last bucket; [1] counts replies from a worker whose generation differs
 * from the one it had when tracking started (a replacement). */
#define TRACKW 8
enum { PH_PRE, PH_STALL, PH_RECOVER, PH_AFTER, PH_N };
struct track {
	uint32_t init_gen[TRACKW + 1];
	atomic_uint_fast64_t ok[PH_N][TRACKW + 1][2];
	struct hist lat_pre;                    /* PH_PRE, every worker */
	struct hist lat_win[TRACKW + 1][2];     /* PH_STALL + PH_RECOVER */
};

#define LOAD_MAXTHREADS 8
struct load {
	sipc_supervisor *s;
	size_t size;
	unsigned window;
	unsigned nthreads;
	unsigned timeout_ms;
	uint8_t *payload;
	unsigned low;                           /* wake submitters at this */
	sem_t wake;                             /* one post per crossing */
	atomic_bool stop;
	atomic_int phase;
	struct track *track;                    /* NULL: no per-slot data */
	atomic_uint_fast64_t submitted, ok, submit_err, outstanding;
	atomic_uint_fast64_t outcome[SIPC_OUTCOME_UNKNOWN + 1];
	atomic_int last_error;
	pthread_t th[LOAD_MAXTHREADS];
};

static struct load *bench_cur;
static bool load_refill_each;
static unsigned load_flags;                     /* sipc_request.flags */

static inline void
load_track(struct load *L, const struct sipc_result *res, uint64_t lat)
{
	struct track *T = L->track;
	unsigned w = res->worker_id < TRACKW ? res->worker_id : TRACKW;
	unsigned fresh = res->generation != T->init_gen[w];
	int ph = atomic_load_explicit(&L->phase, memory_order_relaxed);

	if (res->outcome != SIPC_OUTCOME_OK)
		return;
	atomic_fetch_add_explicit(&T->ok[ph][w][fresh], 1,
	    memory_order_relaxed);
	if (ph == PH_PRE)
		hist_add(&T->lat_pre, lat);
	else if (ph == PH_STALL || ph == PH_RECOVER)
		hist_add(&T->lat_win[w][fresh], lat);
}

/* Completion callback: library thread, no library lock held. */
static void
load_done(void *arg, struct sipc_result *res)
{
	struct load *L = bench_cur;
	uint64_t lat = bench_now_ns() - (uint64_t)(uintptr_t)arg;

	if ((unsigned)res->outcome <= SIPC_OUTCOME_UNKNOWN)
		atomic_fetch_add_explicit(&L->outcome[res->outcome], 1,
		    memory_order_relaxed);
	if (res->outcome == SIPC_OUTCOME_OK && res->reply_len == L->size)
		atomic_fetch_add_explicit(&L->ok, 1, memory_order_relaxed);
	else if (res->error != 0)
		atomic_store(&L->last_error, res->error);
	if (L->track != NULL)
		load_track(L, res, lat);
	sipc_result_release(res);
	if (atomic_fetch_sub(&L->outstanding, 1) == L->low + 1)
		sem_post(&L->wake);
}

static void *
load_submitter(void *arg)
{
	struct load *L = arg;
	struct sipc_request req = {
		.payload = L->payload, .len = L->size,
		.timeout_ms = L->timeout_ms, .flags = load_flags,
	};
	uint64_t t;
	int rc;

	for (;;) {
		if (atomic_load(&L->stop))
			break;
		/* Full: sleep until the window drained to `low`.  Only
		 * completions move the count down, so the crossing comes
		 * after this look, and a post made before the wait is not
		 * lost (the semaphore counts it); an extra post only costs a
		 * second look.  (Two submitters may overshoot by one.) */
		if (L->window > 0 && atomic_load(&L->outstanding) >= L->window) {
			while (sem_wait(&L->wake) < 0 && errno == EINTR)
				;
			continue;
		}
		atomic_fetch_add(&L->outstanding, 1);
		t = bench_now_ns();
		rc = sipc_submit(L->s, &req, load_done, (void *)(uintptr_t)t,
		    NULL);
		if (rc < 0) {
			/* done is never called for a failed submit */
			atomic_fetch_sub(&L->outstanding, 1);
			atomic_fetch_add(&L->submit_err, 1);
			atomic_store(&L->last_error, rc);
			bench_sleep_ms(1);
			continue;
		}
		atomic_fetch_add_explicit(&L->submitted, 1,
		    memory_order_relaxed);
	}
	return NULL;
}

/* Start `nthreads` submitters keeping `window` requests outstanding;
 * `track` (may be NULL) gets per-slot counts for the stall test. */
static inline int
load_start(struct load *L, sipc_supervisor *s, size_t size, unsigned window,
    unsigned nthreads, struct track *track)
{
	unsigned i;
	int rc;

	memset(L, 0, sizeof(*L));
	L->s = s;
	L->size = size;
	L->window = window;
	L->nthreads = nthreads > LOAD_MAXTHREADS ? LOAD_MAXTHREADS : nthreads;
	L->timeout_ms = 60000;
	L->track = track;
	if ((L->payload = malloc(size ? size : 1)) == NULL)
		return -ENOMEM;
	bench_fill(L->payload, size, (uint32_t)size);
	L->low = load_refill_each && window > 0 ? window - 1 : window / 2;
	sem_init(&L->wake, 0, 0);
	bench_cur = L;
	for (i = 0; i < L->nthreads; i++)
		if ((rc = pthread_create(&L->th[i], NULL, load_submitter, L))) {
			L->nthreads = i;
			return -rc;
		}
	return 0;
}

/* Stop submitting and wait (up to `wait_ms`) for every outstanding
 * request's outcome.  Returns 0, or -ETIMEDOUT if some are still out
 * (their callbacks may run later; L must then stay valid). */
static inline int
load_stop(struct load *L, unsigned wait_ms)
{
	uint64_t end = bench_now_ns() + (uint64_t)wait_ms * 1000000u;
	unsigned i;

	atomic_store(&L->stop, true);
	for (i = 0; i < L->nthreads; i++)
		sem_post(&L->wake);
	for (i = 0; i < L->nthreads; i++)
		pthread_join(L->th[i], NULL);
	while (atomic_load(&L->outstanding) > 0) {
		if (bench_now_ns() > end)
			return -ETIMEDOUT;
		bench_sleep_ms(1);
	}
	sem_destroy(&L->wake);
	free(L->payload);
	L->payload = NULL;
	return 0;
}

#endif /* SIPC_BENCH_LOAD_H */

/*
 * settle.c - what happens to requests when their worker ends, is
 * stopped, or their deadline passes.  Runs on the reaper thread.
 *
 * The rules (policy.c decides, this file applies): a request never
 * written, or written but provably never started (no ACCEPT from a
 * worker that promised ACCEPTs, or behind the start counter of one that
 * has one, and its whole stream was decoded), moves
 * to another worker; one that may have run is UNKNOWN unless it is
 * idempotent (then retried, bounded, never past its deadline); one that
 * was in flight on two workers that died is POISON.  Every request gets
 * exactly one outcome: whoever first marks it delivered under the table
 * lock hands it over (table.c).
 *
 * Locks: slot -> table, as everywhere; callbacks run with none held.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bsd/stdlib.h>

#include "request/request.h"
#include "pool/pool.h"

static int64_t
min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* ------------------------------------------------------------ settle */

/* Remove `q` from the table with an outcome (if nobody delivered one
 * yet), attaching the worker's exit and diagnostics tail, and drop the
 * table's reference.  No lock held on entry. */
static void
finish(struct sipc_supervisor *s, struct sipc__req *q, enum sipc_outcome o,
       int err, bool may_have_run, const char *tail)
{
	struct sipc_result res;
	bool won, in;

	pthread_mutex_lock(&s->table.lock);
	q->state = SIPC__R_GONE;
	in = q->in_table;
	sipc__table_remove(&s->table, q);
	/* A retry that ends unsent (queued, rejected, expired) does not
	 * undo the earlier attempt that a dying worker may have run. */
	if (q->deaths > 0) {
		may_have_run = true;
		if (o == SIPC_OUTCOME_REJECTED)
			o = SIPC_OUTCOME_UNKNOWN;
	}
	won = sipc__outcome_set(s, q, o, err, may_have_run, &res);
	pthread_mutex_unlock(&s->table.lock);
	if (won) {
		res.diag_tail = tail ? strdup(tail) : NULL;
		sipc__outcome_deliver(s, q, &res);
	}
	if (in)
		sipc__req_unref(s, q);
}

/* Take every never-written request off this slot's ring and give it to
 * another slot.  What no other slot can take goes back on this ring if
 * the slot will run again, else gets REJECTED (never sent: safe). */
void
sipc__move_queued(struct sipc__slot *sl, bool slot_will_run, int reject_err)
{
	struct sipc_supervisor *s = sl->sup;
	struct sipc__req **qs;
	unsigned n = 0, i;

	pthread_mutex_lock(&sl->lock);
	qs = reallocarray(NULL, sl->ring.count + 1, sizeof(*qs));
	while (qs != NULL && (qs[n] = sipc__ring_pop(&sl->ring)) != NULL)
		n++;
	pthread_cond_broadcast(&sl->cv_space);
	pthread_mutex_unlock(&sl->lock);
	if (qs == NULL)
		return;   /* out of memory: they stay queued here */
	for (i = 0; i < n; i++) {
		struct sipc__req *q = qs[i];

		if (sipc__dispatch_requeue(s, q, (int)sl->idx) == 0) {
			atomic_fetch_add(&s->n_requeued, 1);
			continue;
		}
		if (slot_will_run) {
			pthread_mutex_lock(&sl->lock);
			if (sipc__ring_return(&sl->ring, q, q->len) == 0) {
				pthread_mutex_unlock(&sl->lock);
				continue;
			}
			pthread_mutex_unlock(&sl->lock);
		}
		finish(s, q, SIPC_OUTCOME_REJECTED, reject_err, false, NULL);
		sipc__req_send_unref(s, q); /* the ring's reference */
	}
	free(qs);
}

/*
 * Requests gathered under the table lock, each with a reference, to be
 * acted on after it.  The first COLLECT_STACK fit in the struct itself,
 * so a list that cannot grow (oom) still holds some: callers act on
 * those and gather again until nothing was left out.
 */
#define COLLECT_STACK 32

struct collect {
	struct sipc__slot *sl;
	struct sipc__req **qs;
	unsigned n, cap;
	int64_t now, next;
	bool oom;                     /* some were left out */
	struct sipc__req *stack[COLLECT_STACK];
};

static void
collect_init(struct collect *c, struct sipc__slot *sl, int64_t now,
             int64_t next)
{
	c->sl = sl;
	c->qs = c->stack;
	c->n = 0;
	c->cap = COLLECT_STACK;
	c->now = now;
	c->next = next;
	c->oom = false;
}

static void
collect_fini(struct collect *c)
{
	if (c->qs != c->stack)
		free(c->qs);
	c->qs = c->stack;
}

/* Tests only: nonzero, a collect holds at most this many, as when its
 * array cannot grow (an allocation failure). */
_Atomic unsigned sipc__collect_max;

static void
collect_push(struct collect *c, struct sipc__req *q)
{
	unsigned max = atomic_load(&sipc__collect_max);

	if (max != 0 && c->n >= max) {
		c->oom = true;
		return;
	}
	if (c->n == c->cap) {
		unsigned ncap = c->cap * 2;
		struct sipc__req **nq = reallocarray(c->qs == c->stack ? NULL :
		    c->qs, ncap, sizeof(*nq));

		if (nq == NULL) {
			c->oom = true;
			return;
		}
		if (c->qs == c->stack)
			memcpy(nq, c->stack, sizeof(c->stack));
		c->qs = nq;
		c->cap = ncap;
	}
	sipc__req_ref(q);
	c->qs[c->n++] = q;
}

/* Table lock held: requests written to this slot's current generation. */
static void
collect_owed(struct sipc__req *q, void *arg)
{
	struct collect *c = arg;

	if (q->slot == (int)c->sl->idx && q->gen == c->sl->generation &&
	    (q->state == SIPC__R_WRITTEN || q->state == SIPC__R_ACCEPTED))
		collect_push(c, q);
}

static int
settle_err(enum sipc__settle d, const struct sipc_exit *e)
{
	if (d == SIPC__SETTLE_POISON)
		return SIPC_E_POISON;
	if (e->kind == SIPC_EXIT_TERMINATED) {
		switch (e->reason) {
		case SIPC_TERM_SHUTDOWN: return SIPC_E_SHUTDOWN;
		case SIPC_TERM_STALL: return SIPC_E_STALL;
		case SIPC_TERM_PROTOCOL: return SIPC_E_PROTOCOL;
		case SIPC_TERM_DEADLINE: return SIPC_E_TIMEOUT;
		default: break;
		}
	}
	return SIPC_E_WORKER_DIED;
}

/*
 * A worker generation ended: decide, per request it held, what is
 * provable (policy.c has the rules).  Never-started requests move;
 * ambiguous ones are UNKNOWN unless idempotent; poison stops.
 */
static bool settle_round(struct sipc__slot *sl, const struct sipc_exit *e,
                         const char *tail, int64_t now, bool proof,
                         bool counter, uint64_t started);

void
sipc__settle(struct sipc__slot *sl, const struct sipc_exit *e,
             const char *tail, int64_t now)
{
	bool proof, counter;
	uint64_t started = 0;

	/* A missing ACCEPT proves "never started" only if every byte the
	 * worker wrote was decoded (reader.c: stream_cut).  A start counter
	 * (A5) is read now that its writer is gone: the requests at or
	 * before it may have started, those behind it did not. */
	pthread_mutex_lock(&sl->lock);
	counter = sl->start_ctr != NULL;
	if (counter)
		started = atomic_load(sl->start_ctr);
	proof = (sl->accepts || counter) && !sl->stream_cut;
	pthread_mutex_unlock(&sl->lock);
	/* In rounds while a round's list could not hold them all: what it
	 * settled is off this generation, so the next finds the rest. */
	while (settle_round(sl, e, tail, now, proof, counter, started))
		;
}

static bool
settle_round(struct sipc__slot *sl, const struct sipc_exit *e,
             const char *tail, int64_t now, bool proof, bool counter,
             uint64_t started)
{
	struct sipc_supervisor *s = sl->sup;
	bool closing = atomic_load(&s->closing);
	struct collect c;
	unsigned i;

	collect_init(&c, sl, now, 0);
	pthread_mutex_lock(&s->table.lock);
	sipc__table_foreach(&s->table, collect_owed, &c);
	sl->inflight = 0;
	sl->fds_inflight = 0;
	for (i = 0; i < c.n; i++) {
		struct sipc__req *q = c.qs[i];

		/* Written but neither ACCEPTed nor counted by a worker that
		 * promised one or the other before starting: provably
		 * never started.  (A request without a place, pos 0, has
		 * nothing to prove it: it counts as started.) */
		q->unstarted = q->state == SIPC__R_WRITTEN && proof &&
		    !(counter && q->pos <= started);
		if (!q->unstarted)
			q->deaths++;
		q->last_exit = *e;
		q->state = SIPC__R_QUEUED;   /* off the dead worker */
	}
	pthread_mutex_unlock(&s->table.lock);

	for (i = 0; i < c.n; i++) {
		struct sipc__req *q = c.qs[i];
		enum sipc__settle d;
		bool unstarted;

		pthread_mutex_lock(&s->table.lock);
		unstarted = q->unstarted;
		if (q->delivered) {
			/* Timed out earlier; the caller knows.  Just drop it. */
			pthread_mutex_unlock(&s->table.lock);
			finish(s, q, SIPC_OUTCOME_TIMEOUT, 0, true, tail);
			sipc__req_unref(s, q);
			continue;
		}
		/* A refused system call is the request's doing as much as
		 * the worker's: never run it again (as POISON), idempotent
		 * or not. */
		d = sipc__settle_decide(true, unstarted,
		    (q->flags & SIPC_REQ_IDEMPOTENT) != 0 &&
		    e->kind != SIPC_EXIT_POLICY, q->attempts,
		    s->cfg.idempotent_retries, q->deaths, now, q->deadline_ms);
		pthread_mutex_unlock(&s->table.lock);
		switch (d) {
		case SIPC__SETTLE_REQUEUE:
		case SIPC__SETTLE_RETRY:
			sipc__req_send_ref(q); /* a ring reference */
			if (!closing &&
			    sipc__dispatch_requeue(s, q, (int)sl->idx) == 0) {
				atomic_fetch_add(d == SIPC__SETTLE_RETRY ?
				    &s->n_retried : &s->n_requeued, 1);
				break;
			}
			sipc__req_send_unref(s, q);
			/* No worker left to write it to (cool-down): the
			 * retry's own reason, as for a retry that waited in
			 * a queue (move_queued); sipc(7) UNKNOWN. */
			if (d == SIPC__SETTLE_REQUEUE)
				finish(s, q, SIPC_OUTCOME_REJECTED, closing ?
				    SIPC_E_SHUTDOWN : SIPC_E_UNAVAILABLE, false,
				    tail);
			else
				finish(s, q, SIPC_OUTCOME_UNKNOWN, closing ?
				    settle_err(d, e) : SIPC_E_UNAVAILABLE, true,
				    tail);
			break;
		case SIPC__SETTLE_TIMEOUT:
			finish(s, q, SIPC_OUTCOME_TIMEOUT, SIPC_E_TIMEOUT,
			    !unstarted, tail);
			break;
		case SIPC__SETTLE_UNKNOWN:
		case SIPC__SETTLE_POISON:
			finish(s, q, SIPC_OUTCOME_UNKNOWN, settle_err(d, e), true,
			    tail);
			break;
		}
		sipc__req_unref(s, q);   /* collect's reference */
	}
	collect_fini(&c);
	return c.oom;
}

/* ------------------------------------------------------------ deadlines */

/* Table lock held: does `q`'s queue budget still run? */
static bool
queue_budget_on(const struct sipc__req *q)
{
	return q->queue_deadline_ms != 0 && q->attempts == 0 &&
	    q->state == SIPC__R_QUEUED;
}

static void
collect_expired(struct sipc__req *q, void *arg)
{
	struct collect *c = arg;
	int64_t grace;

	if (!q->delivered && q->deadline_ms != 0) {
		if (q->deadline_ms <= c->now)
			collect_push(c, q);
		else
			c->next = min64(c->next, q->deadline_ms);
	}
	/* The queue budget: only before the first write (attempts 0),
	 * and not twice for one request already collected above. */
	if (!q->delivered && queue_budget_on(q) &&
	    (q->deadline_ms == 0 || q->deadline_ms > c->now)) {
		if (q->queue_deadline_ms <= c->now)
			collect_push(c, q);
		else
			c->next = min64(c->next, q->queue_deadline_ms);
	}
	if (q->delivered && q->cancel_at_ms != 0 &&
	    (q->state == SIPC__R_WRITTEN || q->state == SIPC__R_ACCEPTED)) {
		grace = q->cancel_at_ms +
		    c->sl->sup->cfg.cancel_grace_ms;
		if (grace <= c->now)
			collect_push(c, q);
		else
			c->next = min64(c->next, grace);
	}
}

/* Slot and table locks held, `q` written to sl's worker: ask the worker
 * to stop it (the writer sends the CANCEL) and start its grace, which
 * collect_expired() watches. */
static void
ask_cancel(struct sipc__slot *sl, struct sipc__req *q, int64_t now)
{
	q->cancel_at_ms = now;
	if (sl->ncancels < sl->cancels_cap)
		sl->cancels[sl->ncancels++] = q->id;
	pthread_cond_signal(&sl->cv_writer);
}

static void
expire_one(struct sipc_supervisor *s, struct sipc__req *q, int64_t now)
{
	struct sipc__slot *sl;
	int idx;

	pthread_mutex_lock(&s->table.lock);
	idx = q->slot;
	pthread_mutex_unlock(&s->table.lock);
	if (idx < 0)
		return;
	sl = &s->slots[idx];
	pthread_mutex_lock(&sl->lock);
	pthread_mutex_lock(&s->table.lock);
	if (q->slot != idx || q->state == SIPC__R_GONE) {
		pthread_mutex_unlock(&s->table.lock);
		pthread_mutex_unlock(&sl->lock);
		return;
	}
	if (q->delivered) {
		/* Cancelled and still held past the cancel grace: the
		 * worker is wedged; the reaper ends it after the scan (its
		 * requests settle then). */
		pthread_mutex_unlock(&s->table.lock);
		pthread_mutex_unlock(&sl->lock);
		sl->deadline_stop = true;
		return;
	}
	if (q->state == SIPC__R_QUEUED) {
		/* Its run deadline first: TIMEOUT says more than the
		 * queue budget when both have passed. */
		bool timeout = q->deadline_ms != 0 && q->deadline_ms <= now;
		bool was_queued;

		if (!timeout && !(queue_budget_on(q) &&
		    q->queue_deadline_ms <= now)) {
			pthread_mutex_unlock(&s->table.lock);
			pthread_mutex_unlock(&sl->lock);
			return;
		}
		was_queued = sipc__ring_remove(&sl->ring, q);
		pthread_mutex_unlock(&s->table.lock);
		pthread_cond_broadcast(&sl->cv_space);
		pthread_mutex_unlock(&sl->lock);
		if (timeout)
			finish(s, q, SIPC_OUTCOME_TIMEOUT, SIPC_E_TIMEOUT,
			    false, NULL);
		else
			finish(s, q, SIPC_OUTCOME_REJECTED,
			    SIPC_E_QUEUE_TIMEOUT, false, NULL);
		if (was_queued)
			sipc__req_send_unref(s, q); /* the ring's reference */
		return;
	}
	if (q->deadline_ms == 0 || q->deadline_ms > now) {
		/* collected for its queue budget, written since */
		pthread_mutex_unlock(&s->table.lock);
		pthread_mutex_unlock(&sl->lock);
		return;
	}
	/* On a worker: tell the caller now, ask the worker to stop, and
	 * keep the entry until the worker answers or dies. */
	ask_cancel(sl, q, now);
	pthread_mutex_unlock(&s->table.lock);
	pthread_mutex_unlock(&sl->lock);
	sipc__outcome(s, q, SIPC_OUTCOME_TIMEOUT, SIPC_E_TIMEOUT, true, NULL,
	    0, 0);
}

void
sipc__scan_deadlines(struct sipc_supervisor *s, int64_t now, int64_t *next)
{
	struct collect c;
	unsigned i;

	collect_init(&c, &s->slots[0], now, *next);
	pthread_mutex_lock(&s->table.lock);
	sipc__table_foreach(&s->table, collect_expired, &c);
	pthread_mutex_unlock(&s->table.lock);
	for (i = 0; i < c.n; i++) {
		expire_one(s, c.qs[i], now);
		sipc__req_unref(s, c.qs[i]);
	}
	/* some were left out: look again at once */
	*next = c.oom ? now : c.next;
	collect_fini(&c);
}

/* ------------------------------------------------------------ cancel */

/*
 * sipc_cancel(): the host gives up on request `id`.  Never written (in a
 * ring, or on its way to one): REJECTED / SIPC_E_CANCELLED now, provably
 * never run (unless an earlier attempt reached a worker that died:
 * finish() makes that UNKNOWN).  Written: UNKNOWN / SIPC_E_CANCELLED now
 * (it may have run), and the worker is sent a CANCEL; the entry stays
 * until it answers or ends, and a worker still holding it past
 * cancel_grace_ms is ended, as after a deadline (collect_expired()).
 * SIPC_E_NOTFOUND when no request of that id is waiting for an outcome.
 * No lock held on entry.
 */
/* Table lock held, `q` not answered: it leaves the table with its
 * cancelled outcome in *res (REJECTED, or UNKNOWN when an earlier
 * attempt may have run, as finish() says).  Returns whether the table
 * held it (its reference is then the caller's to drop). */
static bool
cancel_unwritten(struct sipc_supervisor *s, struct sipc__req *q,
                 struct sipc_result *res)
{
	bool in = q->in_table, ran = q->deaths > 0;

	q->state = SIPC__R_GONE;
	sipc__table_remove(&s->table, q);
	(void)sipc__outcome_set(s, q, ran ? SIPC_OUTCOME_UNKNOWN :
	    SIPC_OUTCOME_REJECTED, SIPC_E_CANCELLED, ran, res);
	return in;
}

int
sipc__cancel(struct sipc_supervisor *s, uint64_t id)
{
	struct sipc__slot *sl = NULL;
	struct sipc_result res;
	struct sipc__req *q;
	bool was_queued = false, in;
	int idx;

	pthread_mutex_lock(&s->table.lock);
	q = sipc__table_find(&s->table, id);
	if (q == NULL || q->delivered || q->state == SIPC__R_GONE) {
		pthread_mutex_unlock(&s->table.lock);
		return SIPC_E_NOTFOUND;
	}
	sipc__req_ref(q);
	/* The outcome is decided under the table lock that found it not
	 * yet answered: a reply, a deadline or an end that comes after
	 * finds it answered, so a 0 returned here is always the outcome. */
	for (;;) {
		if (q->delivered || q->state == SIPC__R_GONE) {
			pthread_mutex_unlock(&s->table.lock);
			if (sl != NULL)
				pthread_mutex_unlock(&sl->lock);
			sipc__req_unref(s, q);
			return SIPC_E_NOTFOUND;
		}
		if (sl == NULL && (idx = q->slot) < 0) {
			/* Not on any ring yet, or between two: whoever holds
			 * it finds it answered and drops it (ring_put()). */
			in = cancel_unwritten(s, q, &res);
			pthread_mutex_unlock(&s->table.lock);
			goto delivered;
		}
		if (sl != NULL && q->slot == (int)sl->idx)
			break;
		if (sl != NULL)
			pthread_mutex_unlock(&sl->lock);   /* moved meanwhile */
		idx = q->slot;
		pthread_mutex_unlock(&s->table.lock);
		if (idx < 0) {
			sl = NULL;
			pthread_mutex_lock(&s->table.lock);
			continue;
		}
		sl = &s->slots[idx];
		pthread_mutex_lock(&sl->lock);
		pthread_mutex_lock(&s->table.lock);
	}
	if (q->state == SIPC__R_QUEUED) {
		was_queued = sipc__ring_remove(&sl->ring, q);
		in = cancel_unwritten(s, q, &res);
		pthread_mutex_unlock(&s->table.lock);
		pthread_cond_broadcast(&sl->cv_space);
		pthread_mutex_unlock(&sl->lock);
		goto delivered;
	}
	/* Written: the worker is told; the entry stays until it answers or
	 * ends, and the grace is watched (collect_expired()). */
	ask_cancel(sl, q, sipc__now_ms());
	(void)sipc__outcome_set(s, q, SIPC_OUTCOME_UNKNOWN, SIPC_E_CANCELLED,
	    true, &res);
	pthread_mutex_unlock(&s->table.lock);
	pthread_mutex_unlock(&sl->lock);
	sipc__outcome_deliver(s, q, &res);
	/* The reaper sleeps until the next deadline it knew of, which may
	 * be later than this grace. */
	sipc__reaper_wake(s);
	sipc__req_unref(s, q);
	return 0;
delivered:
	sipc__outcome_deliver(s, q, &res);
	if (in)
		sipc__req_unref(s, q);      /* the table's reference */
	if (was_queued)
		sipc__req_send_unref(s, q); /* the ring's reference */
	sipc__req_unref(s, q);
	return 0;
}

/* ------------------------------------------------------------ end now */

/* sipc_destroy_now(): every never-written request on this slot's ring
 * is REJECTED now (never sent: safe to resubmit), none moved to another
 * slot: the pool is ending.  No lock held on entry. */
void
sipc__reject_queued(struct sipc__slot *sl, int err)
{
	struct sipc_supervisor *s = sl->sup;
	struct sipc__req *q;

	for (;;) {
		pthread_mutex_lock(&sl->lock);
		q = sipc__ring_pop(&sl->ring);
		pthread_cond_broadcast(&sl->cv_space);
		pthread_mutex_unlock(&sl->lock);
		if (q == NULL)
			return;
		finish(s, q, SIPC_OUTCOME_REJECTED, err, false, NULL);
		sipc__req_send_unref(s, q); /* the ring's reference */
	}
}

void
sipc__reject_req(struct sipc_supervisor *s, struct sipc__req *q, int err)
{
	finish(s, q, SIPC_OUTCOME_REJECTED, err, false, NULL);
	sipc__req_send_unref(s, q); /* the ring's reference */
}

/* Table lock held: a request written to this slot's generation. */
static void
collect_written(struct sipc__req *q, void *arg)
{
	struct collect *c = arg;

	if (q->slot == (int)c->sl->idx && q->gen == c->sl->generation &&
	    !q->delivered &&
	    (q->state == SIPC__R_WRITTEN || q->state == SIPC__R_ACCEPTED))
		collect_push(c, q);
}

/* sipc_destroy_now(): ask this slot's worker to stop every request it
 * holds (CANCEL, sent by the writer); each keeps its entry and ends with
 * its reply, or UNKNOWN when the worker is ended.  Returns how many were
 * asked.  No lock held on entry. */
unsigned
sipc__cancel_written(struct sipc__slot *sl)
{
	struct sipc_supervisor *s = sl->sup;
	struct collect c;
	unsigned i, n = 0;

	/* A list that could not hold them all sends fewer CANCELs: the
	 * others end with their answer or UNKNOWN at the worker's end,
	 * cancel_grace_ms later, as destroy_now promises anyway. */
	collect_init(&c, sl, 0, 0);
	pthread_mutex_lock(&sl->lock);
	pthread_mutex_lock(&s->table.lock);
	sipc__table_foreach(&s->table, collect_written, &c);
	for (i = 0; i < c.n; i++)
		if (sl->ncancels < sl->cancels_cap) {
			sl->cancels[sl->ncancels++] = c.qs[i]->id;
			n++;
		}
	if (n > 0)
		pthread_cond_signal(&sl->cv_writer);
	pthread_mutex_unlock(&s->table.lock);
	pthread_mutex_unlock(&sl->lock);
	for (i = 0; i < c.n; i++)
		sipc__req_unref(s, c.qs[i]);
	collect_fini(&c);
	return n;
}

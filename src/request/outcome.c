/*
 * outcome.c - a request's one outcome: set under the table lock,
 * delivered with no lock held, journalled around the callback, and the
 * outcome of a request taken back before it was sent.  Above the table
 * (a plain container) and the journal notes; below the threads that
 * settle requests.
 */
#include <stdlib.h>
#include <string.h>

#include "pool/pool.h"

bool
sipc__outcome_set(struct sipc_supervisor *s, struct sipc__req *q,
                  enum sipc_outcome o, int err, bool may_have_run,
                  struct sipc_result *res)
{
	struct sipc__slot *sl;
	int64_t now;

	if (q->delivered)
		return false;
	q->delivered = true;
	now = sipc__now_ns();
	/* only sipc_destroy() waits for pending to reach 0 */
	if (--s->table.pending == 0 || atomic_load(&s->closing))
		pthread_cond_broadcast(&s->table.cv);
	memset(res, 0, sizeof(*res));
	res->reply_fd = -1;
	res->outcome = o;
	res->error = err;
	res->may_have_run = may_have_run;
	res->request_id = q->id;
	res->attempts = q->attempts;
	res->exit = q->last_exit;
	/* Submit to first write, and first write to now (the outcome). */
	res->queue_us = (uint64_t)((q->written_ns ? q->written_ns : now) -
	    q->submit_ns) / 1000;
	res->run_us = q->written_ns ? (uint64_t)(now - q->written_ns) / 1000 :
	    0;
	atomic_fetch_add_explicit(&s->queue_us_sum, res->queue_us,
	    memory_order_relaxed);
	atomic_fetch_add_explicit(&s->run_us_sum, res->run_us,
	    memory_order_relaxed);
	atomic_fetch_add_explicit(&s->hist_queue[sipc__hist_bucket(
	    res->queue_us)], 1, memory_order_relaxed);
	/* Set by the reply that answered it (figures.c), else 0. */
	res->figures = q->figures;
	res->cpu_us = q->fig_cpu_us;
	res->peak_rss_kb = q->fig_peak_kb;
	if (q->figures & SIPC_FIG_CPU) {
		atomic_fetch_add_explicit(&s->cpu_us_sum, res->cpu_us,
		    memory_order_relaxed);
		atomic_fetch_add_explicit(&s->n_cpu_known, 1,
		    memory_order_relaxed);
	}
	if (q->figures & SIPC_FIG_PEAK_RSS) {
		atomic_fetch_add_explicit(&s->peak_kb_sum, res->peak_rss_kb,
		    memory_order_relaxed);
		atomic_fetch_add_explicit(&s->n_peak_known, 1,
		    memory_order_relaxed);
	}
	if (q->written_ns != 0)
		atomic_fetch_add_explicit(&s->hist_run[sipc__hist_bucket(
		    res->run_us)], 1, memory_order_relaxed);
	if (q->attempts > 0 && q->slot >= 0) {
		sl = &s->slots[q->slot];
		res->worker_id = sl->idx;
		res->generation = q->gen;
		res->pid = q->pid;
	}
	switch (o) {
	case SIPC_OUTCOME_OK: atomic_fetch_add(&s->n_ok, 1); break;
	case SIPC_OUTCOME_WORKER_ERROR: atomic_fetch_add(&s->n_werr, 1); break;
	case SIPC_OUTCOME_REJECTED: atomic_fetch_add(&s->n_rejected, 1); break;
	case SIPC_OUTCOME_TIMEOUT: atomic_fetch_add(&s->n_timeout, 1); break;
	case SIPC_OUTCOME_UNKNOWN: atomic_fetch_add(&s->n_unknown, 1); break;
	}
	return true;
}

/* Upper bounds of the time histograms' buckets, in us; the last bucket
 * is +Inf (metrics.c writes them). */
const uint64_t sipc__hist_bound_us[SIPC__HIST_BUCKETS - 1] = {
	100, 1000, 10000, 100000, 1000000, 10000000, 60000000, 600000000,
};

unsigned
sipc__hist_bucket(uint64_t us)
{
	unsigned i;

	for (i = 0; i < SIPC__HIST_BUCKETS - 1; i++)
		if (us <= sipc__hist_bound_us[i])
			break;
	return i;
}

static void
deliver_now(struct sipc_supervisor *s, struct sipc__req *q,
            struct sipc_result *res, size_t held)
{
	/* `res` is valid during the call; the callback owns what it points
	 * at (reply, diag_tail) and releases it with sipc_result_release.
	 * The journal records the outcome before the callback and the
	 * delivery after it, so a crash in between leaves it unresolved.
	 * The reply's bytes count under mem_ceiling until the callback
	 * has returned (CONTRACT M1). */
	sipc__journal_note_done(s, q, res);
	q->done(q->done_arg, res);
	sipc__mem_release(s, held);
	sipc__journal_note_delivered(s, q);
}

/* Whoever moves a stored outcome from WAIT to TAKEN delivers it. */
static bool
late_take(struct sipc__late *l)
{
	int wait = SIPC__LATE_WAIT;

	return atomic_compare_exchange_strong(&l->state, &wait,
	    SIPC__LATE_TAKEN);
}

/*
 * A lent payload is the caller's again once its callback begins, so the
 * callback must not begin while a library thread may still write the
 * frame (a TIMEOUT or a worker's end while the writer is in the middle
 * of it).  The outcome is stored, then `senders` looked at; the last
 * sender looks at the stored outcome after letting go
 * (sipc__req_send_unref()).  Both sequentially consistent: at least one
 * sees the other, and the one that moves WAIT to TAKEN delivers.  A
 * stored outcome keeps a reference.
 */
void
sipc__outcome_deliver_held(struct sipc_supervisor *s, struct sipc__req *q,
                           struct sipc_result *res, size_t held)
{
	struct sipc__late *l = q->late;

	if (l == NULL) {
		deliver_now(s, q, res, held);
		return;
	}
	sipc__req_ref(q);
	l->res = *res;
	l->held = held;               /* still counted while it waits */
	atomic_store(&l->state, SIPC__LATE_WAIT);
	if (atomic_load(&q->senders) > 0 || !late_take(l))
		return;                /* the last sender hands it on */
	deliver_now(s, q, &l->res, l->held);
	sipc__req_unref(s, q);
}

void
sipc__outcome_deliver(struct sipc_supervisor *s, struct sipc__req *q,
                      struct sipc_result *res)
{
	sipc__outcome_deliver_held(s, q, res, 0);
}

/* The last sender let go: an outcome that waited for it goes to the
 * reaper. */
static void
late_release(struct sipc_supervisor *s, struct sipc__req *q)
{
	struct sipc__late *l = q->late;

	if (!late_take(l))
		return;
	/* The sender may hold a slot lock: the reaper runs the callback. */
	l->next = atomic_load(&s->late_head);
	while (!atomic_compare_exchange_weak(&s->late_head, &l->next, q))
		;
	sipc__reaper_wake(s);
}

void
sipc__req_send_ref(struct sipc__req *q)
{
	if (q->late != NULL)
		atomic_fetch_add(&q->senders, 1);
	sipc__req_ref(q);
}

/* Sequentially consistent with sipc__outcome_deliver()'s store of
 * LATE_WAIT and its load of `senders`: one of the two sees the other. */
void
sipc__req_send_unref(struct sipc_supervisor *s, struct sipc__req *q)
{
	if (q == NULL)
		return;
	if (q->late != NULL && atomic_fetch_sub(&q->senders, 1) == 1)
		late_release(s, q);
	sipc__req_unref(s, q);
}

void
sipc__late_run(struct sipc_supervisor *s)
{
	struct sipc__req *q, *next, *rev = NULL;
	bool was;

	/* Taken whole (no ABA); oldest first. */
	for (q = atomic_exchange(&s->late_head, NULL); q != NULL; q = next) {
		next = q->late->next;
		q->late->next = rev;
		rev = q;
	}
	was = sipc__callback_rules_begin();
	for (q = rev; q != NULL; q = next) {
		next = q->late->next;
		deliver_now(s, q, &q->late->res, q->late->held);
		sipc__req_unref(s, q);   /* the stored outcome's */
	}
	sipc__lib_thread = was;
}

/* Takes ownership of `reply` (malloc'd, may be NULL) in every case. */
void
sipc__outcome(struct sipc_supervisor *s, struct sipc__req *q, enum sipc_outcome o,
              int err, bool may_have_run, uint8_t *reply, size_t reply_len,
              uint32_t wcode)
{
	struct sipc_result res;
	bool won;

	pthread_mutex_lock(&s->table.lock);
	won = sipc__outcome_set(s, q, o, err, may_have_run, &res);
	pthread_mutex_unlock(&s->table.lock);
	if (!won) {
		free(reply);
		return;
	}
	res.reply = reply;
	res.reply_len = reply ? reply_len : 0;
	res.worker_error_code = wcode;
	sipc__outcome_deliver(s, q, &res);
}

/*
 * The writer could not journal that `q` goes to `sl`'s worker, or make
 * its scratch directory, so it is not sent (`err` says which).  Undo
 * what the writer's take did (state, in-flight count, attempt) and give
 * it its outcome, unless someone else settled it
 * meanwhile (a timeout keeps it in the table until its worker answers:
 * it is dropped here).  The writer thread, or a direct sender under a
 * callback's rules; no lock held; the ring's reference stays the
 * caller's.
 */
void
sipc__outcome_unsend(struct sipc_supervisor *s, struct sipc__slot *sl,
                     struct sipc__req *q, int err)
{
	struct sipc_result res;
	bool mine, won = false, ran;

	pthread_mutex_lock(&s->table.lock);
	mine = q->in_table && q->slot == (int)sl->idx &&
	    q->gen == sl->generation &&
	    (q->state == SIPC__R_WRITTEN || q->state == SIPC__R_ACCEPTED);
	if (mine) {
		q->state = SIPC__R_GONE;
		if (--q->attempts == 0)
			q->written_ns = 0;     /* never written after all */
		atomic_fetch_sub(&sl->inflight, 1);
		if (q->fd_counted)
			sl->fds_inflight--;
		q->fd_counted = false;
		sipc__table_remove(&s->table, q);
		/* Not sent now; an earlier worker that died with it may
		 * still have run it (settle.c reports that UNKNOWN too). */
		ran = q->deaths > 0;
		won = sipc__outcome_set(s, q, ran ? SIPC_OUTCOME_UNKNOWN :
		    SIPC_OUTCOME_REJECTED, err, ran, &res);
	}
	pthread_mutex_unlock(&s->table.lock);
	if (won)
		sipc__outcome_deliver(s, q, &res);
	if (mine)
		sipc__req_unref(s, q);    /* the table's reference */
}

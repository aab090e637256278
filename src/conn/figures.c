/*
 * figures.c - a request's CPU time and peak memory (struct sipc_result's
 * figures), with request_figures set, where they are exact.
 *
 * Exact means the request was alone on its worker from its write to its
 * reply: written while nothing was in flight there (mark_written(),
 * writer.c, sets fig_alone and fig_seq), and nothing written after it
 * before its reply (fig_seq is still the slot's fig_writes then).  Only
 * such a request is measured: the thread that sends it reads the
 * worker tree's usage before its bytes go out (sipc__fig_begin()), the
 * thread that decodes its reply reads it again before it takes the
 * table lock (sipc__fig_end()), and under that lock the request is
 * judged alone or not (sipc__fig_note()).  A request written after the
 * second reading but before the judgement makes it "not alone", so a
 * reading that may have seen another request's work is never used.
 *
 * Threads: as each function says; see pool/pool.h for the slot's fig_*
 * fields and who may touch them.
 */
#include "pool/pool.h"
#include "os/os.h"

/* The sender of `q` (it holds the channel), no lock held, before any
 * byte of q's frame is sent. */
void
sipc__fig_begin(struct sipc__slot *sl, const struct sipc__req *q)
{
	if (!sl->sup->cfg.request_figures || !q->fig_alone)
		return;
	/* In a namespace mode the tree's root is sipc-init, which reaps
	 * every orphan of the tree: none can leave it unseen. */
	sipc__usage_begin(sl->cg_fd, sl->pid,
	    sl->containment != SIPC_CONTAIN_PROCESS_GROUP, &sl->fig0);
	atomic_store_explicit(&sl->fig_id, q->id, memory_order_release);
}

/* Table lock held: is `q` this generation's, unanswered, and still
 * alone on it? */
static bool
still_alone(const struct sipc__slot *sl, const struct sipc__req *q)
{
	return q != NULL && q->slot == (int)sl->idx &&
	    q->gen == sl->generation && (q->state == SIPC__R_WRITTEN ||
	    q->state == SIPC__R_ACCEPTED) && q->fig_alone &&
	    q->fig_seq == sl->fig_writes;
}

/* The thread decoding the reply to `id`, no lock held: the reading
 * after it, when that request was measured before and is still owed
 * and alone (true).  Owed and alone, it holds the only place in flight
 * a measured request can have, so no sender touches fig0 until this
 * reply has left the table; a reply to an id not owed (a worker's
 * mistake) reads nothing. */
bool
sipc__fig_end(struct sipc__slot *sl, uint64_t id, struct sipc__usage *ret)
{
	struct sipc_supervisor *s = sl->sup;
	bool ok;

	if (!s->cfg.request_figures ||
	    atomic_load_explicit(&sl->fig_id, memory_order_acquire) != id ||
	    atomic_load(&sl->inflight) != 1)
		return false;
	pthread_mutex_lock(&s->table.lock);
	ok = still_alone(sl, sipc__table_find(&s->table, id));
	pthread_mutex_unlock(&s->table.lock);
	if (ok)
		sipc__usage_end(sl->cg_fd, sl->pid, &sl->fig0, ret);
	return ok;
}

/* Table lock held, `q` answered by `sl`'s worker: its figures, from the
 * reading `u` (NULL: none) when it was alone the whole time. */
void
sipc__fig_note(struct sipc__slot *sl, struct sipc__req *q,
               const struct sipc__usage *u)
{
	q->figures = 0;
	q->fig_cpu_us = q->fig_peak_kb = 0;
	if (u == NULL || !still_alone(sl, q))
		return;
	q->figures = u->known & (SIPC_FIG_CPU | SIPC_FIG_PEAK_RSS);
	if (q->figures & SIPC_FIG_CPU)
		q->fig_cpu_us = u->cpu_us;
	if (q->figures & SIPC_FIG_PEAK_RSS)
		q->fig_peak_kb = u->peak_kb;
}

/*
 * steal.c - requests not yet written move from a worker that cannot
 * take them to one that can.
 *
 * Threads: the reaper only (sipc__steal_scan() runs in its loop, after
 * the deadline scan).  Locks: one slot lock at a time (two slot locks
 * have no order, so they are never held together), the table lock
 * nested inside it by dispatch.c.
 *
 * Why.  A request goes to one worker's ring at submit (dispatch.c) and
 * waits there for that worker's writer: when the worker is busy on a
 * slow or stuck request (max_inflight reached, a conversion at a time),
 * what is behind it waits too, while other workers sit idle.  The rings
 * of the design card stay, each with its one writer; what moves is only
 * what no writer has taken yet: a request at the head of the ring of a
 * worker that has no room is popped (under that slot's lock, as its
 * writer would pop it) and put on the ring of a worker that has room
 * and nothing queued (dispatch.c, sipc__dispatch_move()), whose writer
 * sends it.  Never-written requests carry no start position and no
 * journal record of a write, so moving them changes no start evidence;
 * a written request never moves.
 *
 * When.  On every reaper wake-up, and every STEAL_TICK_MS while some
 * worker without room has requests queued: a worker that frees up is
 * given work within a tick.  With no such backlog the scan costs one
 * look at each slot and sets no timer.
 */
#include <stdlib.h>

#include "pool/pool.h"

#define STEAL_TICK_MS SIPC__STEAL_TICK_MS

static int64_t
min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* What a slot can give (queued behind a worker with no room) or take
 * (room and nothing queued), read under its lock. */
struct steal_view {
	unsigned give, take;
};

static struct steal_view
view_of(struct sipc_supervisor *s, struct sipc__slot *sl)
{
	struct steal_view v = { 0, 0 };
	unsigned inflight, count, max = s->cfg.max_inflight;

	pthread_mutex_lock(&sl->lock);
	inflight = atomic_load(&sl->inflight);
	count = atomic_load(&sl->ring.count);
	if (atomic_load(&sl->spare) || (sl->state == SIPC_WS_READY &&
	    atomic_load(&sl->retiring))) {
		v.give = count;              /* takes nothing (more) */
	} else if (sl->state == SIPC_WS_READY) {
		if (inflight >= max || sl->sending != SIPC__SEND_NONE)
			v.give = inflight >= max ? count : 0;
		else if (count == 0)
			v.take = max - inflight;
	} else if (sl->state != SIPC_WS_STARTING) {
		/* a worker that is stopping or restarting: its queue moves
		 * when it ends (settle.c); until then another may take it */
		v.give = count;
	}
	pthread_mutex_unlock(&sl->lock);
	return v;
}

/* Pop the head of `from`'s ring if its worker still has no room. */
static struct sipc__req *
take_head(struct sipc_supervisor *s, struct sipc__slot *from)
{
	struct sipc__req *q = NULL;

	pthread_mutex_lock(&from->lock);
	if (from->state != SIPC_WS_READY || atomic_load(&from->retiring) ||
	    atomic_load(&from->inflight) >= s->cfg.max_inflight)
		q = sipc__ring_pop(&from->ring);
	if (q != NULL)
		pthread_cond_broadcast(&from->cv_space);
	pthread_mutex_unlock(&from->lock);
	return q;
}

/* The slot that can give the most, other than `not`; -1 if none. */
static int
richest(const struct steal_view *v, unsigned n, unsigned not)
{
	int best = -1;

	for (unsigned i = 0; i < n; i++)
		if (i != not && v[i].give > 0 &&
		    (best < 0 || v[i].give > v[best].give))
			best = (int)i;
	return best;
}

/* Tests only: set, no request moves (a test of dispatch's own choice
 * must not see a move made because its machine was slow). */
_Atomic bool sipc__steal_off;

void
sipc__steal_scan(struct sipc_supervisor *s, int64_t now, int64_t *next)
{
	struct steal_view *v;
	struct sipc__req *q;
	unsigned i, give = 0;
	int from;

	if (s->nslots < 2 || atomic_load(&s->closing) ||
	    atomic_load(&sipc__steal_off))
		return;
	if ((v = calloc(s->nslots, sizeof(*v))) == NULL)
		return;
	for (i = 0; i < s->nslots; i++) {
		v[i] = view_of(s, &s->slots[i]);
		give += v[i].give;
	}
	for (i = 0; i < s->nslots && give > 0; i++) {
		while (v[i].take > 0 && (from = richest(v, s->nslots, i)) >= 0) {
			v[from].give--;
			give--;
			if ((q = take_head(s, &s->slots[from])) == NULL)
				continue;
			if (sipc__dispatch_move(s, q, i, from) < 0)
				sipc__reject_req(s, q, SIPC_E_UNAVAILABLE);
			v[i].take--;
		}
	}
	if (give > 0)
		*next = min64(*next, now + STEAL_TICK_MS);
	free(v);
}


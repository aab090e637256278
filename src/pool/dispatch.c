/*
 * dispatch.c - which worker's ring a request goes to: a new request
 * (blocking up to its deadline, or not), or a requeue after its worker
 * ended.  Below settling and the public API; it calls only the table,
 * the rings and the writer's direct path.
 *
 * Threads: any submitting thread, and the reaper (requeues).  A slot
 * lock and, nested inside it, the table lock (the one order).  Blocking
 * dispatch waits on the slot's cv_space in short slices, re-choosing the
 * slot each time, so one stalled worker never holds a request that
 * another worker has room for.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pool/pool.h"

/* ------------------------------------------------------------ dispatch */

/*
 * Gathering (CONTRACT C8).  Spread one by one, cheap requests cost a
 * wake-up of a worker and of its reader each: measured with 64 workers
 * and 256 outstanding 64 B requests, a sixth of the throughput of 4
 * workers, against about three quarters gathered.  So an asynchronous
 * request joins the worker the last one went to while that worker holds
 * fewer than GATHER_MAX and those, at its mean time per reply, take at
 * most gather_us.  That time is read on the wall clock; when more
 * workers are busy than there are CPUs, each had only a share of one,
 * and the time is scaled by that share (else spreading, by making every
 * worker slow to answer, would look like slow work and keep itself
 * going).  When that worker is full, a worker already holding requests
 * that the request may join comes before an idle one: it is awake, an
 * idle one has to be woken (measured, 64 and 256 workers: 4 to 17 %
 * more msg/s; 4 workers not slower).  Work slower than gather_us a
 * request never gathers: a conversion still goes to an idle worker.
 */
#define GATHER_MAX 64u

/* Slot i's mean time per reply, scaled by the CPU share its worker had
 * (ns); 0 before its first reply. */
static uint64_t
svc_of(struct sipc_supervisor *s, unsigned i)
{
	uint64_t svc = atomic_load_explicit(&s->slots[i].svc_ns,
	    memory_order_relaxed);
	unsigned busy = atomic_load_explicit(&s->busy_hint,
	    memory_order_relaxed);

	return busy > s->ncpu ? svc * s->ncpu / busy : svc;
}

/* May an asynchronous request of `len` bytes join slot i? */
static bool
gather_on(struct sipc_supervisor *s, unsigned i, size_t len)
{
	struct sipc__slot *sl = &s->slots[i];
	uint64_t svc = svc_of(s, i);
	unsigned load;

	if (svc == 0 || sl->state != SIPC_WS_READY ||
	    !sipc__ring_fits(&sl->ring, len))
		return false;
	load = sl->ring.count + atomic_load(&sl->inflight);
	return load < GATHER_MAX &&
	    (load + 1) * svc <= (uint64_t)s->cfg.gather_us * 1000;
}

/*
 * Choose a slot for a request of `len` bytes: an asynchronous one
 * (`gather`) the slot the last one went to, if it may join it (above),
 * else the lowest-numbered other worker holding requests that it may
 * join; else, and for calls and requeues, ready workers first, then
 * ones that will be ready soon (starting, or waiting out a backoff);
 * among those, one whose ring has room; then the least loaded (queued +
 * in flight); a slot whose worker is ending only when nothing else can;
 * among equals the next in turn, or while looking for a busy worker
 * to join, the lowest-numbered.  Returns -1 when no slot can take it
 * now (all in cool-down or failed).
 */
static int
pick_slot(struct sipc_supervisor *s, int avoid, size_t len, bool gather)
{
	unsigned i, k, start, best_key = UINT32_MAX, nbusy = 0;
	int best = -1, busy = -1;
	bool look = false;              /* for a busy worker to join */

	gather = gather && s->nslots > 1 && s->cfg.gather_us > 0;
	if (gather) {
		i = atomic_load_explicit(&s->gather_slot, memory_order_relaxed);
		if (i < s->nslots && !atomic_load(&s->slots[i].spare) &&
		    gather_on(s, i, len))
			return (int)i;
		/* Look for a busy worker to join only while the work is
		 * cheap enough to queue behind one request; else the scan
		 * stops at the first idle worker, as for a call. */
		look = i < s->nslots &&
		    2 * svc_of(s, i) <= (uint64_t)s->cfg.gather_us * 1000;
	}

	/* Rotate the starting point so equal loads spread over workers;
	 * but cheap work looks from the first worker, so the busy worker
	 * it joins and the idle one it wakes are the lowest-numbered: the
	 * same few workers stay warm and the rest sleep (measured, 64 and
	 * 256 workers, 256 outstanding 64 B requests: 5 or 6 workers
	 * served them instead of all; see the comment on GATHER_MAX). */
	start = look ? 0 : atomic_fetch_add_explicit(&s->rr, 1,
	    memory_order_relaxed);
	for (k = 0; k < s->nslots; k++) {
		struct sipc__slot *sl;
		unsigned rank, key, load;
		bool fits;

		i = (start + k) % s->nslots;
		sl = &s->slots[i];
		if ((int)i == avoid || atomic_load(&sl->spare))
			continue;
		/* No lock: state and fill level are atomic hints; the push
		 * checks them again under the chosen slot's lock.  One lock
		 * per submit, whatever the pool size. */
		switch (sl->state) {
		case SIPC_WS_READY:
			/* retiring: ending soon, as a stopping one */
			rank = atomic_load(&sl->retiring) ? 2 : 0;
			break;
		case SIPC_WS_STARTING:
		case SIPC_WS_IDLE: rank = 1; break;
		/* Its worker is ending; the slot restarts unless it cools
		 * down, and then its ring is moved or refused: a last
		 * resort, not "unavailable". */
		case SIPC_WS_DRAINING:
		case SIPC_WS_STOPPING: rank = 2; break;
		default: rank = 3; break;
		}
		if (rank == 3)
			continue;
		fits = sipc__ring_fits(&sl->ring, len);
		load = sl->ring.count + atomic_load(&sl->inflight);
		nbusy += load > 0;
		if (load > 0xffffff)
			load = 0xffffff;
		key = (rank << 28) | ((unsigned)!fits << 24) | load;
		/* A worker already awake that the request may join
		 * beats waking an idle one. */
		if (look && load > 0 && gather_on(s, i, len)) {
			busy = (int)i;
			break;
		}
		if (key < best_key) {
			best_key = key;
			best = (int)i;
			if (key == 0 && !look)
				break;       /* ready, idle, has room: take it */
		}
	}
	/* The slots looked at sample how many workers are busy: all of
	 * them after a look that found no busy worker to join, a part
	 * from a rotating start otherwise (none stored when the look
	 * stopped at a busy one: the slots before it, the lowest-numbered,
	 * are where the busy ones gather, a biased sample). */
	if (busy >= 0) {
		best = busy;
	} else {
		if (k < s->nslots)
			nbusy = (unsigned)((uint64_t)nbusy * s->nslots /
			    (k + 1));
		atomic_store_explicit(&s->busy_hint, nbusy,
		    memory_order_relaxed);
	}
	if (gather && best >= 0)
		atomic_store_explicit(&s->gather_slot, (unsigned)best,
		    memory_order_relaxed);
	return best;
}

/* Slot lock held: push and hand the ring a reference; `back`: an
 * accepted request coming back, put ahead whatever the fill (request/request.h).
 * *ret_wake: the caller signals cv_writer once it has dropped the slot
 * lock (signalled under it, the writer would wake only to block on that
 * lock). */
static int
ring_put(struct sipc_supervisor *s, struct sipc__slot *sl, struct sipc__req *q,
         bool back, bool *ret_wake)
{
	bool ok, idle, wake;

	if (back ? sipc__ring_back_reserve(&sl->ring) < 0 :
	    !sipc__ring_fits(&sl->ring, q->len))
		return -EAGAIN;
	pthread_mutex_lock(&s->table.lock);
	ok = !q->delivered && q->state != SIPC__R_GONE;
	if (ok) {
		q->state = SIPC__R_QUEUED;
		q->slot = (int)sl->idx;
		/* A ring's requests are written by other threads: a
		 * borrowed payload is copied first, under the lock that
		 * keeps its call from ending (a requeue; a new call's is
		 * copied before, sipc__dispatch_new()). */
		sipc__req_own(q);
	}
	idle = sl->ring.count == 0 && sl->inflight == 0;
	/* The writer needs a wake-up only for a ring that was empty, and
	 * only when it has room: while it has none, the reader wakes it
	 * when a reply makes some (reader.c); a writer busy sending, or a
	 * caller on the direct path, looks at the ring again when done. */
	wake = sl->ring.count == 0 && sl->inflight < s->cfg.max_inflight;
	if (wake)
		atomic_fetch_add_explicit(&sl->push_wakes, 1,
		    memory_order_relaxed);
	pthread_mutex_unlock(&s->table.lock);
	if (!ok)
		return 1;
	/* The stall clock runs only while work is pending: an idle worker's
	 * last progress may be long past, and the reaper must not see the
	 * new work against that old time before the writer sends it. */
	if (idle)
		atomic_store(&sl->last_progress_ms, sipc__now_ms());
	if (back)
		(void)sipc__ring_return(&sl->ring, q, q->len);  /* room made */
	else
		(void)sipc__ring_push(&sl->ring, q, q->len);
	*ret_wake = wake;
	/* queued behind a worker with no room: another may take it
	 * (steal.c); the reaper looks unless it is about to anyway */
	if (atomic_load(&sl->inflight) >= s->cfg.max_inflight &&
	    s->nslots > 1 && atomic_load(&s->timer_at_ms) >
	    sipc__now_ms() + SIPC__STEAL_TICK_MS)
		sipc__reaper_wake(s);
	return 0;
}

/* Put `q` on slot idx's ring if that slot runs or will run soon:
 * 0 queued (or already answered: the ring reference is dropped), else
 * -EAGAIN. */
static int
requeue_on(struct sipc_supervisor *s, int idx, struct sipc__req *q, bool back)
{
	struct sipc__slot *sl = &s->slots[idx];
	bool wake = false;
	int rc;

	pthread_mutex_lock(&sl->lock);
	rc = sl->state == SIPC_WS_READY || sl->state == SIPC_WS_STARTING ||
	    sl->state == SIPC_WS_IDLE ? ring_put(s, sl, q, back, &wake) :
	    -EAGAIN;
	pthread_mutex_unlock(&sl->lock);
	if (rc == 0 && wake)
		pthread_cond_signal(&sl->cv_writer);
	if (rc == 1) {                 /* already answered: nothing to move */
		sipc__req_send_unref(s, q);
		return 0;
	}
	return rc;
}

/* steal.c: `q`, popped from slot `from`'s ring (never written), goes
 * on slot `to`'s; if `to` cannot take it now, back ahead of `from`'s
 * queue; if neither can, another slot (sipc__dispatch_requeue()).
 * Returns 0, or SIPC_E_UNAVAILABLE with the ring's reference still the
 * caller's.  Reaper thread, no lock. */
int
sipc__dispatch_move(struct sipc_supervisor *s, struct sipc__req *q,
                    unsigned to, unsigned from)
{
	if (requeue_on(s, (int)to, q, false) == 0 ||
	    requeue_on(s, (int)from, q, true) == 0 ||
	    sipc__dispatch_requeue(s, q, (int)from) == 0)
		return 0;
	return SIPC_E_UNAVAILABLE;
}

/*
 * Another slot with room first.  When none has, `avoid` itself, if it is
 * about to run again (IDLE: restart planned, not a cool-down), ahead of
 * its queue whatever the fill: a request already accepted that may run
 * again waits for the restarted worker (its deadline still applies while
 * queued) rather than being refused for room that new submits took
 * after its worker ended (blocked submitters refill a queue as soon as
 * it is emptied).  When `avoid` cools down, the same ahead of the queue
 * of the best other slot that runs or will run (pick_slot() ranks ready
 * ones first): full queues of live workers are no reason to refuse it.
 * Refused only when no slot runs or will run.
 */
int
sipc__dispatch_requeue(struct sipc_supervisor *s, struct sipc__req *q, int avoid)
{
	int idx = pick_slot(s, avoid, q->len, false);

	if (idx >= 0 && requeue_on(s, idx, q, false) == 0)
		return 0;
	if (avoid >= 0 && requeue_on(s, avoid, q, true) == 0)
		return 0;
	if (idx >= 0 && requeue_on(s, idx, q, true) == 0)
		return 0;
	return SIPC_E_UNAVAILABLE;
}

/* Blocking (up to the request's deadline) or non-blocking dispatch of
 * a new request.  0: queued.  Else SIPC_E_FULL / _UNAVAILABLE /
 * _SHUTDOWN / SIPC_E_TIMEOUT (deadline passed while waiting for room) /
 * SIPC_E_QUEUE_TIMEOUT (the queue budget did). */
int
sipc__dispatch_new(struct sipc_supervisor *s, struct sipc__req *q,
                   struct sipc__callread *cr)
{
	struct sipc__slot *sl;
	struct timespec ts;
	bool wake = false;
	int idx, rc;

	sipc__req_send_ref(q);                 /* the ring's reference */
	for (;;) {
		if (atomic_load(&s->closing)) {
			rc = SIPC_E_SHUTDOWN;
			break;
		}
		if ((idx = pick_slot(s, -1, q->len, !q->call)) < 0) {
			rc = SIPC_E_UNAVAILABLE;
			break;
		}
		sl = &s->slots[idx];
		pthread_mutex_lock(&sl->lock);
		if (sl->state == SIPC_WS_COOLDOWN || sl->state == SIPC_WS_FAILED) {
			/* changed since the unlocked look: choose again */
			pthread_mutex_unlock(&sl->lock);
			continue;
		}
		if (sipc__direct_claim(sl, q)) {
			/* Taken before the request is sent: the reader
			 * never sees a byte of its reply. */
			if (cr != NULL && sipc__callread_take(sl)) {
				cr->sl = sl;
				cr->deadline_ms = q->deadline_ms;
			} else {
				sipc__callread_unpark(sl);  /* for its reply */
			}
			pthread_mutex_unlock(&sl->lock);
			sipc__direct_send(sl, q);
			return 0;
		}
		if (sipc__req_borrowed(q)) {
			/* To a ring: copied first, here on the calling
			 * thread, not under the locks; then choose again. */
			pthread_mutex_unlock(&sl->lock);
			sipc__req_own(q);
			continue;
		}
		rc = ring_put(s, sl, q, false, &wake);
		if (rc == 0) {
			pthread_mutex_unlock(&sl->lock);
			if (wake)
				pthread_cond_signal(&sl->cv_writer);
			return 0;
		}
		if (rc == 1) {
			/* answered meanwhile (sipc_cancel()): nothing to
			 * queue, and nothing more to wait for */
			pthread_mutex_unlock(&sl->lock);
			rc = 0;
			break;
		}
		if ((q->flags & SIPC_REQ_NOWAIT) || sipc__lib_thread) {
			pthread_mutex_unlock(&sl->lock);
			rc = SIPC_E_FULL;
			break;
		}
		if (q->deadline_ms != 0 && sipc__now_ms() >= q->deadline_ms) {
			pthread_mutex_unlock(&sl->lock);
			rc = SIPC_E_TIMEOUT;
			break;
		}
		if (q->queue_deadline_ms != 0 &&
		    sipc__now_ms() >= q->queue_deadline_ms) {
			pthread_mutex_unlock(&sl->lock);
			rc = SIPC_E_QUEUE_TIMEOUT;
			break;
		}
		sipc__abstime(&ts, SIPC__WAIT_SLICE_MS);
		pthread_cond_timedwait(&sl->cv_space, &sl->lock, &ts);
		pthread_mutex_unlock(&sl->lock);
	}
	sipc__req_send_unref(s, q);
	return rc;
}


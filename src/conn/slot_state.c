/*
 * slot_state.c - the one writer of a worker slot's state, and the table
 * of the changes it allows.
 *
 * A leaf, below the I/O threads and the reaper, so that both the reader
 * (STARTING -> READY on HELLO) and the slot's life (slot.c) can call it
 * without the modules calling each other in a circle.
 *
 * Any thread, with the slot lock held (the state changes together with
 * the fields it describes); the store is atomic because dispatch reads
 * the state without the lock.
 */
#include <stdio.h>
#include <stdlib.h>

#include "pool/pool.h"

#define B(st) (1u << (st))

/*
 * allowed[from]: the states `from` may change to.  Each bit is one real
 * path; a change to the same state is allowed only where a path makes it:
 *   IDLE|COOLDOWN -> STARTING          a spawn (slot.c)
 *   IDLE|COOLDOWN -> IDLE|COOLDOWN     the launch failed: next restart
 *   STARTING -> READY                  HELLO (reader.c)
 *   STARTING|READY|STOPPING -> STOPPING  terminate; destroy marks every
 *                                      live worker first, then terminates
 *   STARTING|READY|STOPPING -> DRAINING  the worker ended (on_end)
 *   DRAINING -> IDLE|COOLDOWN          restart planned or refused
 *   IDLE|COOLDOWN|DRAINING|FAILED -> FAILED  destroy: no restart
 * A live state (STARTING, READY, STOPPING) never goes to IDLE, COOLDOWN
 * or FAILED directly: its process is reaped (DRAINING) first.
 */
static const unsigned allowed[] = {
	[SIPC_WS_IDLE] = B(SIPC_WS_STARTING) | B(SIPC_WS_IDLE) |
	    B(SIPC_WS_COOLDOWN) | B(SIPC_WS_FAILED),
	[SIPC_WS_COOLDOWN] = B(SIPC_WS_STARTING) | B(SIPC_WS_IDLE) |
	    B(SIPC_WS_COOLDOWN) | B(SIPC_WS_FAILED),
	[SIPC_WS_STARTING] = B(SIPC_WS_READY) | B(SIPC_WS_STOPPING) |
	    B(SIPC_WS_DRAINING),
	[SIPC_WS_READY] = B(SIPC_WS_STOPPING) | B(SIPC_WS_DRAINING),
	[SIPC_WS_STOPPING] = B(SIPC_WS_STOPPING) | B(SIPC_WS_DRAINING),
	[SIPC_WS_DRAINING] = B(SIPC_WS_IDLE) | B(SIPC_WS_COOLDOWN) |
	    B(SIPC_WS_FAILED),
	[SIPC_WS_FAILED] = B(SIPC_WS_FAILED),
};

#define NSTATES (sizeof(allowed) / sizeof(allowed[0]))

bool
sipc__slot_state_allowed(enum sipc_worker_state from,
                         enum sipc_worker_state to)
{
	return (unsigned)from < NSTATES && (unsigned)to < NSTATES &&
	    (allowed[from] & B(to)) != 0;
}

/*
 * A forbidden change is a bug in the library, not something a host or a
 * worker can cause: the reaper's picture of a process would be wrong,
 * and acting on it could signal a process that is not the worker's or
 * leave one unreaped.  So it stops the process, as a failed assertion
 * would, but whatever NDEBUG says.  No log callback: the slot lock is
 * held, and no host callback runs under a library lock.
 */
void
sipc__slot_set_state(struct sipc__slot *sl, enum sipc_worker_state to)
{
	enum sipc_worker_state from = atomic_load(&sl->state);

	if (!sipc__slot_state_allowed(from, to)) {
		fprintf(stderr, "sipc: worker %u: forbidden state change "
		    "%s -> %s\n", sl->idx, sipc_worker_state_name(from),
		    sipc_worker_state_name(to));
		abort();
	}
	atomic_store(&sl->state, to);
}

/*
 * A serving slot leaves service (retires, is being stopped, ended): a
 * READY spare takes its place now, and it becomes the spare, serving
 * again only when another leaves.  Any thread (the writer that gives a
 * worker its last request under max_requests, with locks held: so it
 * logs nothing, the reaper says it); the spare is claimed by a
 * compare-exchange, so two leaving slots never take the same one.
 * Without a ready spare the slot keeps its place.  Returns the spare's
 * index, or -1.
 */
int
sipc__slot_hand_over(struct sipc__slot *sl)
{
	struct sipc_supervisor *s = sl->sup;
	unsigned i;
	bool was;
	int to = -1;

	if (s->cfg.spares == 0 || atomic_load(&sl->spare))
		return -1;
	/* Two callers for one slot (the writer at max_requests, the
	 * reaper's retry) would each claim a spare: the second must see
	 * the first's result. */
	pthread_mutex_lock(&s->spare_lock);
	for (i = 0; !atomic_load(&sl->spare) && i < s->nslots; i++) {
		struct sipc__slot *sp = &s->slots[i];

		was = true;
		if (sp == sl || sp->state != SIPC_WS_READY ||
		    atomic_load(&sp->retiring) != SIPC_RECYCLE_NONE ||
		    !atomic_compare_exchange_strong(&sp->spare, &was, false))
			continue;
		atomic_store(&sl->spare, true);
		atomic_fetch_add(&s->n_takeovers, 1);
		to = (int)i;
		break;
	}
	pthread_mutex_unlock(&s->spare_lock);
	return to;
}

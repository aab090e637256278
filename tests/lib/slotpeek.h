/*
 * slotpeek.h - what the tests read of a worker slot's own counters of
 * which path did the work (src/pool/pool.h: taken_by): a count of the
 * writer's, the callers' and the reader's decisions, not of wake-ups.
 * Header only: the tests that use it see the internal header anyway.
 */
#ifndef SIPC_SLOTPEEK_H
#define SIPC_SLOTPEEK_H

#include <stdatomic.h>
#include <stdint.h>

#include "pool/pool.h"

/* Requests worker `w` took to send by `who` so far. */
static inline uint64_t
st_taken_by(sipc_supervisor *s, unsigned w, enum sipc__sender who)
{
	return atomic_load(&s->slots[w].taken_by[who]);
}

/* Requests worker `w` took to send, by any path. */
static inline uint64_t
st_taken_total(sipc_supervisor *s, unsigned w)
{
	return st_taken_by(s, w, SIPC__SEND_WRITER) +
	    st_taken_by(s, w, SIPC__SEND_CALLER) +
	    st_taken_by(s, w, SIPC__SEND_READER);
}

#endif

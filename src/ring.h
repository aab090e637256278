/*
 * ring.h - bounded FIFO of request pointers, capped in frames and bytes.
 * Not thread-safe by itself: the owning slot's lock guards it (the
 * blocking, timed and non-blocking pushes live in the dispatcher, which
 * waits on the slot's condition variables).  A full ring is
 * backpressure, never growth, for new requests: the array is allocated
 * once.  Requests already accepted that come back (from a worker that
 * ended, or taken off to be moved) are never refused for room new ones
 * took meanwhile: they go on a list of their own, ahead of the array,
 * which grows (what it holds was accepted, so mem_ceiling bounds it).
 */
#ifndef SIPC_RING_H
#define SIPC_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct sipc__req;

struct sipc__ring_item {
	struct sipc__req *q;
	size_t len;
};

struct sipc__ring {
	struct sipc__ring_item *items;
	unsigned cap, head;
	/* Written under the owner's lock; atomic so that dispatch may read
	 * a ring's fill level without taking that lock (a hint it checks
	 * again under the lock). */
	_Atomic unsigned count;
	_Atomic size_t bytes;
	size_t max_bytes;
	/* Returned requests, popped first, oldest first; counted in
	 * `count` and `bytes` */
	struct sipc__ring_item *back;
	unsigned nback, back_head, back_cap;
};

int sipc__ring_init(struct sipc__ring *r, unsigned cap, size_t max_bytes);
void sipc__ring_fini(struct sipc__ring *r);
/* Would a frame of `len` payload bytes fit now?  An empty ring takes any
 * frame (validation guarantees max_bytes >= one maximal frame).  May be
 * called without the lock as a hint. */
bool sipc__ring_fits(const struct sipc__ring *r, size_t len);
/* Append; -EAGAIN when it does not fit. */
int sipc__ring_push(struct sipc__ring *r, struct sipc__req *q, size_t len);
/* Make room for one more returned request: 0, or -ENOMEM. */
int sipc__ring_back_reserve(struct sipc__ring *r);
/* Put back an accepted request ahead of the array's, whatever the fill;
 * -ENOMEM only when the list cannot grow (never after a reserve). */
int sipc__ring_return(struct sipc__ring *r, struct sipc__req *q, size_t len);
/* Remove the oldest; NULL when empty. */
struct sipc__req *sipc__ring_pop(struct sipc__ring *r);
/* Remove a given entry (order kept); false if absent. */
bool sipc__ring_remove(struct sipc__ring *r, struct sipc__req *q);

#endif

/*
 * ring.c - see ring.h.  Guarded by the owning slot's lock.
 */
#include <errno.h>
#include <stdlib.h>

#include <bsd/stdlib.h>

#include "ring.h"

int
sipc__ring_init(struct sipc__ring *r, unsigned cap, size_t max_bytes)
{
	r->items = reallocarray(NULL, cap ? cap : 1, sizeof(*r->items));
	if (r->items == NULL)
		return -ENOMEM;
	r->cap = cap ? cap : 1;
	r->head = r->count = 0;
	r->bytes = 0;
	r->max_bytes = max_bytes;
	return 0;
}

void
sipc__ring_fini(struct sipc__ring *r)
{
	free(r->items);
	r->items = NULL;
	r->cap = r->count = 0;
}

bool
sipc__ring_fits(const struct sipc__ring *r, size_t len)
{
	if (r->count >= r->cap)
		return false;
	return r->count == 0 || r->bytes + len <= r->max_bytes;
}

int
sipc__ring_push(struct sipc__ring *r, struct sipc__req *q, size_t len)
{
	if (!sipc__ring_fits(r, len))
		return -EAGAIN;
	r->items[(r->head + r->count) % r->cap].q = q;
	r->items[(r->head + r->count) % r->cap].len = len;
	r->count++;
	r->bytes += len;
	return 0;
}

struct sipc__req *
sipc__ring_pop(struct sipc__ring *r)
{
	struct sipc__ring_item it;

	if (r->count == 0)
		return NULL;
	it = r->items[r->head];
	r->head = (r->head + 1) % r->cap;
	r->count--;
	r->bytes -= it.len;
	return it.q;
}

bool
sipc__ring_remove(struct sipc__ring *r, struct sipc__req *q)
{
	unsigned i, j;
	size_t len;

	for (i = 0; i < r->count; i++)
		if (r->items[(r->head + i) % r->cap].q == q)
			break;
	if (i == r->count)
		return false;
	len = r->items[(r->head + i) % r->cap].len;
	/* close the gap, keeping FIFO order */
	for (j = i; j + 1 < r->count; j++)
		r->items[(r->head + j) % r->cap] =
		    r->items[(r->head + j + 1) % r->cap];
	r->count--;
	r->bytes -= len;
	return true;
}

/*
 * ring.c - see request/request.h.  Guarded by the owning slot's lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bsd/stdlib.h>

#include "request/request.h"

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
	r->back = NULL;
	r->nback = r->back_head = r->back_cap = 0;
	return 0;
}

void
sipc__ring_fini(struct sipc__ring *r)
{
	free(r->items);
	free(r->back);
	r->items = r->back = NULL;
	r->cap = r->count = r->nback = r->back_head = r->back_cap = 0;
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
	unsigned n = r->count - r->nback;   /* in the array */

	if (!sipc__ring_fits(r, len))
		return -EAGAIN;
	r->items[(r->head + n) % r->cap].q = q;
	r->items[(r->head + n) % r->cap].len = len;
	r->count++;
	r->bytes += len;
	return 0;
}

int
sipc__ring_back_reserve(struct sipc__ring *r)
{
	struct sipc__ring_item *nb;
	unsigned ncap;

	if (r->nback == 0)
		r->back_head = 0;
	if (r->back_head + r->nback == r->back_cap) {
		if (r->back_head > 0) {         /* slide to the front */
			memmove(r->back, r->back + r->back_head,
			    r->nback * sizeof(*r->back));
			r->back_head = 0;
		} else {
			ncap = r->back_cap ? r->back_cap * 2 : 16;
			nb = reallocarray(r->back, ncap, sizeof(*nb));
			if (nb == NULL)
				return -ENOMEM;
			r->back = nb;
			r->back_cap = ncap;
		}
	}
	return 0;
}

int
sipc__ring_return(struct sipc__ring *r, struct sipc__req *q, size_t len)
{
	if (sipc__ring_back_reserve(r) < 0)
		return -ENOMEM;
	r->back[r->back_head + r->nback].q = q;
	r->back[r->back_head + r->nback].len = len;
	r->nback++;
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
	if (r->nback > 0) {
		it = r->back[r->back_head++];
		r->nback--;
		r->count--;
		r->bytes -= it.len;
		return it.q;
	}
	it = r->items[r->head];
	r->head = (r->head + 1) % r->cap;
	r->count--;
	r->bytes -= it.len;
	return it.q;
}

bool
sipc__ring_remove(struct sipc__ring *r, struct sipc__req *q)
{
	unsigned i, j, n = r->count - r->nback;
	size_t len;

	for (i = 0; i < r->nback; i++)
		if (r->back[r->back_head + i].q == q) {
			len = r->back[r->back_head + i].len;
			memmove(r->back + r->back_head + i,
			    r->back + r->back_head + i + 1,
			    (r->nback - i - 1) * sizeof(*r->back));
			r->nback--;
			r->count--;
			r->bytes -= len;
			return true;
		}
	for (i = 0; i < n; i++)
		if (r->items[(r->head + i) % r->cap].q == q)
			break;
	if (i == n)
		return false;
	len = r->items[(r->head + i) % r->cap].len;
	/* close the gap, keeping FIFO order */
	for (j = i; j + 1 < n; j++)
		r->items[(r->head + j) % r->cap] =
		    r->items[(r->head + j + 1) % r->cap];
	r->count--;
	r->bytes -= len;
	return true;
}

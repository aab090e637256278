/*
 * table.c - the correlation table (request id -> pending entry) and the
 * request's terminal step.
 *
 * Threads: any.  One mutex (table.lock) guards the buckets, every
 * request's [table] fields (pool/pool.h), the pending count and the
 * memory held.  Replies, timeouts and settlements race for a request;
 * whoever first marks it `delivered` under the lock hands the outcome
 * to the caller, so every request gets exactly one.
 *
 * A request is reference counted: the table holds one reference, a ring
 * or a writer that is writing it holds one.  Its payload is freed, and
 * its bytes leave the memory budget, at the last unref.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include <bsd/stdlib.h>

#include "pool/pool.h"

/* A mid-size payload's class: its buffer holds SIPC__MIDC_MIN << class
 * bytes, the least power of two that fits `len`. */
static unsigned
midc_class(size_t len)
{
	unsigned k = 0;

	while (((size_t)SIPC__MIDC_MIN << k) < len)
		k++;
	return k;
}

/* A buffer of at least len bytes for a mid-size payload (a kept one of
 * its class) or a large one (a kept one at most half again as large),
 * or a new one.  *ret_cap: its size. */
static void *
payc_get(struct sipc__payc *c, size_t len, size_t *ret_cap)
{
	unsigned i, best = SIPC__PAYC_SLOTS;
	void *b;

	if (len <= SIPC__MIDC_MAX) {
		unsigned k = midc_class(len);

		*ret_cap = (size_t)SIPC__MIDC_MIN << k;
		pthread_mutex_lock(&c->lock);
		if (c->nmid[k] == 0) {
			pthread_mutex_unlock(&c->lock);
			return malloc(*ret_cap);
		}
		b = c->mid[k][--c->nmid[k]];
		c->bytes -= *ret_cap;
		pthread_mutex_unlock(&c->lock);
		atomic_fetch_add_explicit(&c->reused, 1, memory_order_relaxed);
		return b;
	}
	pthread_mutex_lock(&c->lock);
	for (i = 0; i < c->n; i++)
		if (c->cap[i] >= len && c->cap[i] <= len + len / 2 &&
		    (best == SIPC__PAYC_SLOTS || c->cap[i] < c->cap[best]))
			best = i;
	if (best < SIPC__PAYC_SLOTS) {
		b = c->buf[best];
		*ret_cap = c->cap[best];
		c->bytes -= c->cap[best];
		c->n--;
		c->buf[best] = c->buf[c->n];
		c->cap[best] = c->cap[c->n];
		pthread_mutex_unlock(&c->lock);
		atomic_fetch_add_explicit(&c->reused, 1, memory_order_relaxed);
		return b;
	}
	pthread_mutex_unlock(&c->lock);
	*ret_cap = len;
	return malloc(len);
}

/* Keep a payload's buffer if there is room, else free it. */
static void
payc_put(struct sipc__payc *c, void *b, size_t cap)
{
	pthread_mutex_lock(&c->lock);
	if (cap <= SIPC__MIDC_MAX) {
		unsigned k = midc_class(cap);

		if (c->nmid[k] < SIPC__MIDC_SLOTS &&
		    c->bytes + cap <= c->max_bytes) {
			c->mid[k][c->nmid[k]++] = b;
			c->bytes += cap;
			b = NULL;
		}
	} else if (c->n < SIPC__PAYC_SLOTS &&
	    c->bytes + cap <= c->max_bytes) {
		c->buf[c->n] = b;
		c->cap[c->n++] = cap;
		c->bytes += cap;
		b = NULL;
	}
	pthread_mutex_unlock(&c->lock);
	free(b);
}

/*
 * A call's large payload is borrowed: its thread waits in sipc_call()
 * until the outcome, so its bytes stay put while the call writes them
 * itself, and the copy is made only if something else must write them
 * (sipc__req_own()).  The block for that copy is taken now, so the
 * copy cannot fail later.  Measured, 1 MiB calls, see README.
 */
struct sipc__req *
sipc__req_new(struct sipc_supervisor *s, const struct sipc_request *r,
              uint64_t id, sipc_done_fn done, void *arg, bool call)
{
	bool lent = (r->flags & SIPC_REQ_LEND) && !call;
	bool large = !lent && r->len >= SIPC__PAYC_MIN;
	bool mid = !lent && r->len >= SIPC__MIDC_MIN &&
	    r->len <= SIPC__MIDC_MAX;
	struct sipc__req *q;
	unsigned qt;
	size_t extra = lent ? sizeof(struct sipc__late) :
	    large || mid ? 0 : r->len;

	/* One allocation for the entry and a small payload's copy, or a
	 * lent payload's place for an outcome that must wait. */
	if ((q = malloc(sizeof(*q) + extra)) == NULL)
		return NULL;
	memset(q, 0, sizeof(*q));      /* senders 0 */
	if (lent) {
		/* res and next are written before they are read */
		q->late = (struct sipc__late *)(q + 1);
		atomic_init(&q->late->state, SIPC__LATE_NONE);
		q->payload = (uint8_t *)(uintptr_t)r->payload;
	} else if (large || mid) {
		if ((q->buf = payc_get(&s->table.payc, r->len,
		    &q->cap)) == NULL)
			goto fail;
		if (call && large) {
			q->payload = (uint8_t *)(uintptr_t)r->payload;
		} else {
			memcpy(q->buf, r->payload, r->len);
			q->payload = q->buf;
		}
	} else if (r->len > 0) {
		q->payload = (uint8_t *)(q + 1);
		memcpy(q->payload, r->payload, r->len);
	}
	if (r->idempotency_key != NULL &&
	    (q->key = strdup(r->idempotency_key)) == NULL)
		goto fail;
	atomic_init(&q->refs, 1);
	q->id = id;
	q->len = (uint32_t)r->len;
	q->flags = r->flags;
	q->deadline_ms = r->timeout_ms ? sipc__now_ms() + r->timeout_ms : 0;
	qt = r->queue_timeout_ms ? r->queue_timeout_ms :
	    s->cfg.queue_timeout_ms;
	q->queue_deadline_ms = qt ? sipc__now_ms() + qt : 0;
	q->submit_ns = sipc__now_ns();
	q->done = done;
	q->done_arg = arg;
	q->call = call;
	q->slot = -1;
	q->fd = -1;
	return q;
fail:
	if (q->buf != NULL)
		payc_put(&s->table.payc, q->buf, q->cap);
	free(q);
	return NULL;
}

void
sipc__req_own(struct sipc__req *q)
{
	if (!sipc__req_borrowed(q))
		return;
	memcpy(q->buf, q->payload, q->len);
	q->payload = q->buf;
}

void
sipc__req_ref(struct sipc__req *q)
{
	atomic_fetch_add_explicit(&q->refs, 1, memory_order_relaxed);
}

/* The last reference frees the payload and returns its bytes to the
 * memory budget, waking submitters blocked on the ceiling. */
void
sipc__req_unref(struct sipc_supervisor *s, struct sipc__req *q)
{
	if (q == NULL ||
	    atomic_fetch_sub_explicit(&q->refs, 1, memory_order_acq_rel) != 1)
		return;
	sipc__mem_release(s, q->len);
	if (q->buf != NULL)
		payc_put(&s->table.payc, q->buf, q->cap);
	if (q->fd >= 0)
		(void)close(q->fd);    /* the one close of the duplicate */
	free(q->key);
	free(q);                       /* a small payload is in this block */
}

void
sipc__req_discard(struct sipc_supervisor *s, struct sipc__req *q)
{
	if (q->buf != NULL)
		payc_put(&s->table.payc, q->buf, q->cap);
	if (q->fd >= 0)
		(void)close(q->fd);
	free(q->key);
	free(q);
}

/*
 * One maximal reply (max_payload).  Validation only guarantees
 * mem_ceiling >= max_payload + 24, so a ceiling under two maximal frames
 * keeps what is left beside one maximal request instead: every request
 * stays admissible, and replies larger than the reserve may then wait
 * for request memory (the stall rule bounds that wait).
 */
size_t
sipc__mem_reply_reserve(const struct sipc_supervisor *s)
{
	size_t c = s->cfg.mem_ceiling, m = s->cfg.max_payload;

	if (c / 2 >= m)
		return m;
	return c > m ? c - m : 0;
}

bool
sipc__mem_try_take(struct sipc_supervisor *s, size_t len, size_t limit)
{
	size_t held = atomic_load(&s->table.mem_held);

	while (held <= limit && len <= limit - held)
		if (atomic_compare_exchange_weak(&s->table.mem_held, &held,
		    held + len))
			return true;
	return false;
}

bool
sipc__mem_take_reply(struct sipc_supervisor *s, size_t len, bool wait,
                     bool (*leave)(void *), void *arg)
{
	struct sipc__table *t = &s->table;
	struct timespec ts;
	bool ok, waiting = false, gone;

	/* The common case takes no lock: room is there. */
	if (sipc__mem_try_take(s, len, s->cfg.mem_ceiling))
		return true;
	pthread_mutex_lock(&t->lock);
	for (;;) {
		if ((ok = sipc__mem_try_take(s, len, s->cfg.mem_ceiling)))
			break;
		if (!wait)
			break;
		if (!waiting)
			t->reply_waiters++;
		waiting = true;
		t->mem_waiters++;
		sipc__abstime(&ts, SIPC__WAIT_SLICE_MS);
		pthread_cond_timedwait(&t->cv, &t->lock, &ts);
		t->mem_waiters--;
		/* `leave` may take a slot lock, which comes before this one */
		pthread_mutex_unlock(&t->lock);
		gone = leave(arg);
		pthread_mutex_lock(&t->lock);
		if (gone)
			break;
	}
	if (waiting)
		t->reply_waiters--;
	pthread_mutex_unlock(&t->lock);
	return ok;
}

void
sipc__mem_release(struct sipc_supervisor *s, size_t n)
{
	if (n == 0)
		return;
	atomic_fetch_sub(&s->table.mem_held, n);
	if (atomic_load(&s->table.mem_waiters) > 0) {
		pthread_mutex_lock(&s->table.lock);
		pthread_cond_broadcast(&s->table.cv);
		pthread_mutex_unlock(&s->table.lock);
	}
}

/* Condition variables whose timed waits must not follow wall-clock
 * jumps: they time out on CLOCK_MONOTONIC (see sipc__abstime). */
int
sipc__table_init(struct sipc__table *t, unsigned hint, size_t payc_bytes)
{
	size_t n = 64;

	while (n < (size_t)hint * 2 && n < (1u << 20))
		n <<= 1;
	memset(t, 0, sizeof(*t));
	t->buckets = calloc(n, sizeof(*t->buckets));
	if (t->buckets == NULL)
		return -ENOMEM;
	t->nbuckets = n;
	pthread_mutex_init(&t->lock, NULL);
	sipc__cond_init(&t->cv);
	pthread_mutex_init(&t->payc.lock, NULL);
	t->payc.max_bytes = payc_bytes < SIPC__PAYC_BYTES ? payc_bytes :
	    SIPC__PAYC_BYTES;
	return 0;
}

void
sipc__table_fini(struct sipc__table *t)
{
	if (t->buckets == NULL)
		return;
	free(t->buckets);
	t->buckets = NULL;
	pthread_mutex_destroy(&t->lock);
	pthread_cond_destroy(&t->cv);
	while (t->payc.n > 0)
		free(t->payc.buf[--t->payc.n]);
	for (unsigned k = 0; k < SIPC__MIDC_CLASSES; k++)
		while (t->payc.nmid[k] > 0)
			free(t->payc.mid[k][--t->payc.nmid[k]]);
	pthread_mutex_destroy(&t->payc.lock);
}

static size_t
bucket(const struct sipc__table *t, uint64_t id)
{
	/* ids are sequential: a multiplicative hash spreads them */
	return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 20) & (t->nbuckets - 1);
}

/* Grow when the load passes 2; failure to grow only costs speed. */
static void
table_grow(struct sipc__table *t)
{
	struct sipc__req **nb, **ob = t->buckets, *q, *next;
	size_t i, on = t->nbuckets;

	if ((nb = calloc(on * 2, sizeof(*nb))) == NULL)
		return;
	t->buckets = nb;
	t->nbuckets = on * 2;
	for (i = 0; i < on; i++)
		for (q = ob[i]; q != NULL; q = next) {
			size_t b = bucket(t, q->id);

			next = q->hnext;
			q->hnext = nb[b];
			nb[b] = q;
		}
	free(ob);
}

void
sipc__table_insert(struct sipc__table *t, struct sipc__req *q)
{
	size_t b;

	if (t->count >= t->nbuckets * 2)
		table_grow(t);
	b = bucket(t, q->id);
	q->hnext = t->buckets[b];
	t->buckets[b] = q;
	q->in_table = true;
	t->count++;
	t->pending++;
}

struct sipc__req *
sipc__table_find(struct sipc__table *t, uint64_t id)
{
	struct sipc__req *q;

	for (q = t->buckets[bucket(t, id)]; q != NULL; q = q->hnext)
		if (q->id == id)
			return q;
	return NULL;
}

/* Unlink; the caller drops the table's reference after unlocking. */
void
sipc__table_remove(struct sipc__table *t, struct sipc__req *q)
{
	struct sipc__req **pp;

	if (!q->in_table)
		return;
	for (pp = &t->buckets[bucket(t, q->id)]; *pp != NULL;
	    pp = &(*pp)->hnext)
		if (*pp == q) {
			*pp = q->hnext;
			q->hnext = NULL;
			q->in_table = false;
			t->count--;
			return;
		}
}

void
sipc__table_foreach(struct sipc__table *t,
                    void (*fn)(struct sipc__req *, void *), void *arg)
{
	struct sipc__req *q, *next;
	size_t i;

	for (i = 0; i < t->nbuckets; i++)
		for (q = t->buckets[i]; q != NULL; q = next) {
			next = q->hnext;
			fn(q, arg);
		}
}

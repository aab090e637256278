/*
 * journal/state.c - what the journal remembers, in memory (see journal/journal.h).
 * No I/O, no locks: the journal's mutex guards every call.
 */
#include "journal/journal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bsd/stdlib.h>


static size_t
hash(uint32_t inst, uint64_t id, size_t nbuckets)
{
	uint64_t h = (id ^ ((uint64_t)inst << 48)) * 0x9E3779B97F4A7C15ull;

	return (size_t)(h >> 32) & (nbuckets - 1);
}

static struct sipc__jreq **
req_slot(struct sipc__jstate *s, uint32_t inst, uint64_t id)
{
	struct sipc__jreq **pp = &s->buckets[hash(inst, id, s->nbuckets)];

	while (*pp != NULL && ((*pp)->inst != inst || (*pp)->id != id))
		pp = &(*pp)->next;
	return pp;
}

struct sipc__jreq *
sipc__js_req_find(struct sipc__jstate *s, uint32_t inst, uint64_t id)
{
	return *req_slot(s, inst, id);
}

/* Insert a request not yet indexed; grows the table (may fail only by
 * not growing, which is harmless). */
void
sipc__js_req_insert(struct sipc__jstate *s, struct sipc__jreq *r)
{
	struct sipc__jreq **pp;

	if (s->nreq >= s->nbuckets) {
		size_t nb = s->nbuckets * 2;
		struct sipc__jreq **nbk = calloc(nb, sizeof(*nbk));

		if (nbk != NULL) {
			for (size_t i = 0; i < s->nbuckets; i++)
				while (s->buckets[i] != NULL) {
					struct sipc__jreq *e = s->buckets[i];

					s->buckets[i] = e->next;
					e->next = nbk[hash(e->inst, e->id, nb)];
					nbk[hash(e->inst, e->id, nb)] = e;
				}
			free(s->buckets);
			s->buckets = nbk;
			s->nbuckets = nb;
		}
	}
	pp = &s->buckets[hash(r->inst, r->id, s->nbuckets)];
	r->next = *pp;
	*pp = r;
	s->nreq++;
}

void
sipc__js_req_remove(struct sipc__jstate *s, uint32_t inst, uint64_t id)
{
	struct sipc__jreq **pp = req_slot(s, inst, id), *r = *pp;

	if (r == NULL)
		return;
	*pp = r->next;
	free(r);
	s->nreq--;
}

struct sipc__jreq *
sipc__js_req_new(uint32_t inst, const struct sipc__jaccepted *a)
{
	struct sipc__jreq *r = calloc(1, sizeof(*r) + a->keylen + 1);

	if (r == NULL)
		return NULL;
	r->inst = inst;
	r->id = a->id;
	r->digest = a->digest;
	r->len = a->len;
	r->deadline = a->deadline;
	r->keylen = a->keylen;
	memcpy(r->key, a->key, a->keylen);
	return r;
}

int
sipc__js_inst_find(struct sipc__jstate *s, const uint8_t id[16])
{
	for (uint32_t i = 0; i < s->ninst; i++)
		if (memcmp(s->inst[i].id, id, 16) == 0)
			return (int)i;
	return -1;
}

int
sipc__js_inst_add(struct sipc__jstate *s, const struct sipc__jinst *in)
{
	struct sipc__jinst *nv;
	int i = sipc__js_inst_find(s, in->id);

	if (i >= 0)
		return i;
	if ((nv = reallocarray(s->inst, s->ninst + 1, sizeof(*nv))) == NULL)
		return -ENOMEM;
	s->inst = nv;
	s->inst[s->ninst] = *in;
	return (int)s->ninst++;
}

ssize_t
sipc__js_worker_find(struct sipc__jstate *s, uint32_t inst, uint32_t slot,
    uint32_t gen)
{
	for (size_t i = 0; i < s->nworkers; i++)
		if (s->workers[i].inst == inst && s->workers[i].w.slot == slot &&
		    s->workers[i].w.generation == gen)
			return (ssize_t)i;
	return -1;
}

int
sipc__js_worker_add(struct sipc__jstate *s, uint32_t inst, const struct sipc__jowner *w)
{
	struct sipc__jworker *nv;
	ssize_t i = sipc__js_worker_find(s, inst, w->slot, w->generation);

	if (i >= 0) {
		s->workers[i].w = *w;
		return 0;
	}
	nv = reallocarray(s->workers, s->nworkers + 1, sizeof(*nv));
	if (nv == NULL)
		return -ENOMEM;
	s->workers = nv;
	s->workers[s->nworkers].inst = inst;
	s->workers[s->nworkers++].w = *w;
	return 0;
}

void
sipc__js_worker_remove(struct sipc__jstate *s, size_t i)
{
	s->workers[i] = s->workers[--s->nworkers];
}

/* Apply one decoded record read at open.  `*ctx` is the instance the
 * closest INSTANCE record named (-1 before any). */
int
sipc__js_apply(struct sipc__jstate *s, const struct sipc__jrec *rec, int *ctx)
{
	struct sipc__jreq *r;
	ssize_t wi;
	int i;

	switch (rec->type) {
	case SIPC__JR_INSTANCE: {
		struct sipc__jinst in;

		memcpy(in.id, rec->u.inst.instance, 16);
		memcpy(in.boot_id, rec->u.inst.boot_id, sizeof(in.boot_id));
		in.pid = rec->u.inst.pid;
		in.time_ms = rec->u.inst.time_ms;
		in.flags = rec->u.inst.flags;
		if ((i = sipc__js_inst_add(s, &in)) < 0)
			return i;
		*ctx = i;
		return 0;
	}
	case SIPC__JR_WORKER:
		if ((i = sipc__js_inst_find(s, rec->u.worker.instance)) < 0)
			break;
		return sipc__js_worker_add(s, (uint32_t)i, &rec->u.worker);
	case SIPC__JR_WORKER_GONE:
		if ((i = sipc__js_inst_find(s, rec->u.gone.instance)) < 0)
			break;
		wi = sipc__js_worker_find(s, (uint32_t)i, rec->u.gone.slot,
		    rec->u.gone.generation);
		if (wi < 0)
			break;
		sipc__js_worker_remove(s, (size_t)wi);
		return 0;
	case SIPC__JR_RESOLVED:
		if ((i = sipc__js_inst_find(s, rec->u.resolved.instance)) < 0 ||
		    sipc__js_req_find(s, (uint32_t)i, rec->u.resolved.id) == NULL)
			break;
		sipc__js_req_remove(s, (uint32_t)i, rec->u.resolved.id);
		return 0;
	case SIPC__JR_ACCEPTED:
		if (*ctx < 0)
			break;
		sipc__js_req_remove(s, (uint32_t)*ctx, rec->u.acc.id);
		if ((r = sipc__js_req_new((uint32_t)*ctx, &rec->u.acc)) == NULL)
			return -ENOMEM;
		sipc__js_req_insert(s, r);
		return 0;
	case SIPC__JR_WRITTEN:
		if (*ctx < 0 ||
		    (r = sipc__js_req_find(s, (uint32_t)*ctx, rec->u.wr.id)) == NULL)
			break;
		r->written = true;
		r->slot = rec->u.wr.slot;
		r->generation = rec->u.wr.generation;
		r->pid = rec->u.wr.pid;
		return 0;
	case SIPC__JR_COMPLETED:
		if (*ctx < 0 ||
		    (r = sipc__js_req_find(s, (uint32_t)*ctx, rec->u.done.id)) == NULL)
			break;
		r->completed = true;
		r->outcome = rec->u.done.outcome;
		r->error = rec->u.done.error;
		if (r->delivered)
			sipc__js_req_remove(s, (uint32_t)*ctx, rec->u.done.id);
		return 0;
	case SIPC__JR_DELIVERED:
		if (*ctx < 0 || (r = sipc__js_req_find(s, (uint32_t)*ctx,
		    rec->u.delivered_id)) == NULL)
			break;
		if (r->completed)
			sipc__js_req_remove(s, (uint32_t)*ctx, rec->u.delivered_id);
		else
			r->delivered = true;
		return 0;
	}
	s->orphans++;
	return 0;
}

static int
emit(uint8_t **buf, size_t *len, size_t *cap, const struct sipc__jrec *rec)
{
	size_t n;
	int r;

	if (*cap - *len < SIPC__JREC_MAX) {
		size_t nc = *cap ? *cap * 2 : 65536;
		uint8_t *nb = realloc(*buf, nc);

		if (nb == NULL)
			return -ENOMEM;
		*buf = nb;
		*cap = nc;
	}
	r = sipc__jrec_encode(rec, *buf + *len, *cap - *len, &n);
	if (r == 0)
		*len += n;
	return r;
}

void
sipc__js_rec_instance(const struct sipc__jinst *in, struct sipc__jrec *rec)
{
	memset(rec, 0, sizeof(*rec));
	rec->type = SIPC__JR_INSTANCE;
	memcpy(rec->u.inst.instance, in->id, 16);
	memcpy(rec->u.inst.boot_id, in->boot_id, sizeof(in->boot_id));
	rec->u.inst.pid = in->pid;
	rec->u.inst.time_ms = in->time_ms;
	rec->u.inst.flags = in->flags;
}

/* The records of one remembered request, in the order they were made. */
static int
emit_req(uint8_t **b, size_t *l, size_t *c, const struct sipc__jreq *q)
{
	struct sipc__jrec rec;
	int r;

	memset(&rec, 0, sizeof(rec));
	rec.type = SIPC__JR_ACCEPTED;
	rec.u.acc = (struct sipc__jaccepted){ q->id, q->keylen, { 0 },
	    q->digest, q->len, q->deadline };
	memcpy(rec.u.acc.key, q->key, q->keylen);
	if ((r = emit(b, l, c, &rec)) < 0)
		return r;
	if (q->written) {
		rec.type = SIPC__JR_WRITTEN;
		rec.u.wr = (struct sipc__jwritten){ q->id, q->slot,
		    q->generation, q->pid };
		if ((r = emit(b, l, c, &rec)) < 0)
			return r;
	}
	if (q->completed) {
		rec.type = SIPC__JR_COMPLETED;
		rec.u.done = (struct sipc__jcompleted){ q->id, q->outcome,
		    q->error };
		r = emit(b, l, c, &rec);
	}
	return r;
}

/* Serialize everything remembered, instance by instance (ours last, so
 * our later appends keep following our INSTANCE record). */
int
sipc__js_image(struct sipc__jstate *s, uint8_t **b, size_t *l)
{
	struct sipc__jrec rec;
	size_t cap = 0;
	int r = 0;

	for (uint32_t i = 0; i < s->ninst && r == 0; i++) {
		bool any = i == s->cur;

		for (size_t k = 0; k < s->nbuckets && !any; k++)
			for (struct sipc__jreq *q = s->buckets[k]; q; q = q->next)
				any = any || q->inst == i;
		for (size_t k = 0; k < s->nworkers && !any; k++)
			any = s->workers[k].inst == i;
		if (!any)
			continue;
		sipc__js_rec_instance(&s->inst[i], &rec);
		r = emit(b, l, &cap, &rec);
		for (size_t k = 0; k < s->nbuckets && r == 0; k++)
			for (struct sipc__jreq *q = s->buckets[k]; q && r == 0;
			    q = q->next)
				if (q->inst == i)
					r = emit_req(b, l, &cap, q);
		for (size_t k = 0; k < s->nworkers && r == 0; k++)
			if (s->workers[k].inst == i) {
				rec.type = SIPC__JR_WORKER;
				rec.u.worker = s->workers[k].w;
				r = emit(b, l, &cap, &rec);
			}
	}
	return r;
}

static int
by_id(const void *a, const void *b)
{
	const struct sipc_unresolved *x = a, *y = b;

	return x->request_id < y->request_id ? -1 :
	    x->request_id > y->request_id;
}

/*
 * Is "accepted, no WRITTEN record" proof that request q was never sent?
 * Only when its instance's WRITTEN records were durable before their
 * frames went out (group, each), or when this instance runs on the boot
 * that instance ran on: the process crashed, the kernel kept every
 * record it had been given.  After a reboot (a power cut, a kernel
 * crash) a durability = off instance may have sent a frame whose record
 * never reached the disk: the request may have run.
 */
static bool
never_sent_proven(const struct sipc__jstate *s, const struct sipc__jreq *q)
{
	const struct sipc__jinst *in = &s->inst[q->inst];
	const struct sipc__jinst *now = &s->inst[s->cur];

	if (in->flags & SIPC__JINST_SENT_DURABLE)
		return true;
	return q->inst != s->cur && in->boot_id[0] != '\0' &&
	    strcmp(in->boot_id, now->boot_id) == 0;
}

static void
fill_unresolved(struct sipc__jstate *s, const struct sipc__jreq *q,
    struct sipc_unresolved *u)
{
	u->request_id = q->id;
	memcpy(u->instance, s->inst[q->inst].id, 16);
	memcpy(u->key, q->key, q->keylen);
	u->key[q->keylen] = '\0';
	u->payload_digest = q->digest;
	u->payload_len = q->len;
	u->state = q->completed ? SIPC_UNRESOLVED_COMPLETED :
	    q->written || !never_sent_proven(s, q) ?
	    SIPC_UNRESOLVED_MAY_HAVE_RUN : SIPC_UNRESOLVED_NEVER_SENT;
	u->outcome = q->completed ? (enum sipc_outcome)q->outcome :
	    SIPC_OUTCOME_OK;
	u->error = q->completed ? q->error : 0;
}

int
sipc__js_unresolved(struct sipc__jstate *s,
    struct sipc_unresolved **ret, size_t *ret_n)
{
	struct sipc_unresolved *v = NULL;
	size_t n = 0;

	for (size_t k = 0; k < s->nbuckets; k++)
		for (struct sipc__jreq *q = s->buckets[k]; q; q = q->next)
			n += q->inst != s->cur;
	if (n > 0 && (v = calloc(n, sizeof(*v))) == NULL)
		return -ENOMEM;
	n = 0;
	for (uint32_t i = 0; i < s->ninst; i++) {
		size_t start = n;

		if (i == s->cur)
			continue;
		for (size_t k = 0; k < s->nbuckets; k++)
			for (struct sipc__jreq *q = s->buckets[k]; q; q = q->next)
				if (q->inst == i)
					fill_unresolved(s, q, &v[n++]);
		if (n - start > 1)
			qsort(v + start, n - start, sizeof(*v), by_id);
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

void
sipc__js_free(struct sipc__jstate *s)
{
	for (size_t k = 0; k < s->nbuckets; k++)
		while (s->buckets[k] != NULL) {
			struct sipc__jreq *q = s->buckets[k];

			s->buckets[k] = q->next;
			free(q);
		}
	free(s->buckets);
	free(s->workers);
	free(s->inst);
	memset(s, 0, sizeof(*s));
}

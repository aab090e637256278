/*
 * jstate.h - what the journal remembers in memory: exactly the requests
 * and workers that compaction must write back (previous instances'
 * unresolved requests and live leftover workers; this instance's requests
 * not yet completed-and-delivered and its live workers), indexed by
 * (instance, request id).  No I/O and no locks: the journal's mutex
 * guards every call.
 */
#ifndef SIPC_JSTATE_H
#define SIPC_JSTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sipc.h"
#include "unix/ident.h"
#include "jrec.h"

struct sipc__jreq {
	struct sipc__jreq *next;  /* hash chain */
	uint64_t id;
	uint32_t inst;            /* index in sipc__jstate.inst */
	bool written, completed, delivered;
	uint8_t outcome;
	int32_t error;
	uint32_t slot, generation;
	pid_t pid;
	uint64_t digest;
	uint32_t len;
	int64_t deadline;
	uint8_t keylen;
	char key[];               /* keylen bytes + NUL */
};

struct sipc__jinst {
	uint8_t id[16];
	char boot_id[SIPC__BOOT_ID_LEN + 1];
	pid_t pid;
	int64_t time_ms;
	uint8_t flags;            /* SIPC__JINST_* (jrec.h) */
};

struct sipc__jworker {
	uint32_t inst;
	struct sipc__jowner w;
};

struct sipc__jstate {
	struct sipc__jinst *inst; /* ordered by age; `cur` is this instance */
	uint32_t ninst, cur;
	struct sipc__jreq **buckets; /* power-of-two count */
	size_t nbuckets, nreq;
	struct sipc__jworker *workers;
	size_t nworkers;
	uint64_t orphans;         /* records read about unknown requests */
};

struct sipc__jreq *sipc__js_req_find(struct sipc__jstate *s, uint32_t inst,
    uint64_t id);
/* Index a request not yet indexed (growing the table when it can). */
void sipc__js_req_insert(struct sipc__jstate *s, struct sipc__jreq *r);
void sipc__js_req_remove(struct sipc__jstate *s, uint32_t inst, uint64_t id);
/* A request from an ACCEPTED record; NULL on ENOMEM. */
struct sipc__jreq *sipc__js_req_new(uint32_t inst,
    const struct sipc__jaccepted *a);

int sipc__js_inst_find(struct sipc__jstate *s, const uint8_t id[16]);
/* Index of the instance (added when new), or -ENOMEM. */
int sipc__js_inst_add(struct sipc__jstate *s, const struct sipc__jinst *in);

ssize_t sipc__js_worker_find(struct sipc__jstate *s, uint32_t inst,
    uint32_t slot, uint32_t gen);
int sipc__js_worker_add(struct sipc__jstate *s, uint32_t inst,
    const struct sipc__jowner *w);
void sipc__js_worker_remove(struct sipc__jstate *s, size_t i);

/* Apply one record read from disk; `*ctx` is the instance named by the
 * closest INSTANCE record before it (-1 before any).  -ENOMEM only. */
int sipc__js_apply(struct sipc__jstate *s, const struct sipc__jrec *rec,
    int *ctx);

void sipc__js_rec_instance(const struct sipc__jinst *in,
    struct sipc__jrec *rec);
/* Serialize everything remembered as records (this instance last, so its
 * later appends keep following its INSTANCE record).  *b is realloc'd. */
int sipc__js_image(struct sipc__jstate *s, uint8_t **b, size_t *l);
/* Previous instances' requests as reconcile entries (see journal.h). */
int sipc__js_unresolved(struct sipc__jstate *s, struct sipc_unresolved **ret,
    size_t *ret_n);
void sipc__js_free(struct sipc__jstate *s);

#endif

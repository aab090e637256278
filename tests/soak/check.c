/*
 * check.c - the soak's end-of-run checks: process resources against the
 * baseline taken before sipc_create, and every request record against
 * its outcome and the workers' execution log.  Runs on the main thread
 * after every other soak thread was joined and sipc_destroy returned.
 */
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proccount.h"
#include "sipc.h"
#include "soak.h"

/* ------------------------------------------------------------ baseline */

void
baseline_get(struct baseline *b)
{
	b->fds = tl_count_fds();
	b->threads = tl_count_threads();
	b->children = tl_count_children();
	b->zombies = tl_count_zombie_children();
}

/* After destroy: back to baseline at once (allow 2 s for the kernel to
 * finish tearing down exited threads). */
void
baseline_check(const struct baseline *b0)
{
	struct baseline b;
	int64_t end = now_ms() + 2000;

	for (;;) {
		baseline_get(&b);
		if ((b.fds == b0->fds && b.threads == b0->threads &&
		    b.children == b0->children && b.zombies == 0) ||
		    now_ms() > end)
			break;
		sleep_ms(20);
	}
	printf("soak: after destroy fds %d/%d threads %d/%d children %d/%d "
	    "zombies %d\n", b.fds, b0->fds, b.threads, b0->threads,
	    b.children, b0->children, b.zombies);
	if (b.fds != b0->fds)
		violation("descriptors %d, baseline %d", b.fds, b0->fds);
	if (b.threads != b0->threads)
		violation("threads %d, baseline %d", b.threads, b0->threads);
	if (b.children != b0->children)
		violation("children %d, baseline %d", b.children, b0->children);
	if (b.zombies != 0)
		violation("%d zombies", b.zombies);
}

/* ------------------------------------------------------------ checks */

struct idx_ent { uint64_t id, rec; };

static int
idx_cmp(const void *a, const void *b)
{
	const struct idx_ent *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* Count executions per record from the log; returns the count array
 * (indexed by record) or NULL when the log cannot be read. */
static uint16_t *
read_exec_log(uint64_t nrec, const char *log_path)
{
	struct idx_ent *ix = calloc(nrec + 1, sizeof(*ix)), key, *hit;
	uint16_t *runs = calloc(nrec + 1, sizeof(*runs));
	unsigned long long id;
	unsigned len, crc;
	uint64_t n = 0, lines = 0;
	char line[128];
	FILE *f;
	int pid;

	if (ix == NULL || runs == NULL || (f = fopen(log_path, "re")) ==
	    NULL) {
		violation("cannot read execution log %s", log_path);
		free(ix);
		free(runs);
		return NULL;
	}
	for (uint64_t i = 0; i < nrec; i++) {
		struct rec *r = rec_at(i);

		if (!(r->flags & RF_REFUSED) && r->id != 0)
			ix[n++] = (struct idx_ent){ r->id, i };
	}
	qsort(ix, n, sizeof(*ix), idx_cmp);
	while (fgets(line, sizeof(line), f) != NULL) {
		lines++;
		if (sscanf(line, "%d %llu %u %x", &pid, &id, &len, &crc) != 4) {
			violation("execution log: bad line %" PRIu64, lines);
			continue;
		}
		key.id = id;
		hit = bsearch(&key, ix, n, sizeof(*ix), idx_cmp);
		if (hit == NULL) {
			violation("worker %d ran id %llu, which was never "
			    "accepted", pid, id);
			continue;
		}
		if (rec_at(hit->rec)->len != len || rec_at(hit->rec)->crc != crc)
			violation("worker %d ran id %llu with len %u crc %08x, "
			    "submitted len %u crc %08x", pid, id, len, crc,
			    rec_at(hit->rec)->len, rec_at(hit->rec)->crc);
		if (runs[hit->rec] < UINT16_MAX)
			runs[hit->rec]++;
	}
	fclose(f);
	free(ix);
	printf("soak: execution log lines %" PRIu64 "\n", lines);
	return runs;
}

#define REJ_KINDS 8

struct tally {
	uint64_t requests, by[5], idem, sync, cmd, lent, refused, reruns,
	    never_ran, may_ran, unknown_never_ran, unknown_never_ran_cut,
	    unknown_never_ran_self_exit;
	/* REJECTED outcomes by error code (the first REJ_KINDS codes
	 * seen; any other counts in rej_other) */
	int rej_err[REJ_KINDS];
	uint64_t rej_n[REJ_KINDS], rej_other;
	unsigned nrej;
};

static void
count_rejected(struct tally *t, int err)
{
	unsigned i;

	for (i = 0; i < t->nrej && t->rej_err[i] != err; i++)
		;
	if (i == t->nrej) {
		if (t->nrej == REJ_KINDS) {
			t->rej_other++;
			return;
		}
		t->rej_err[t->nrej++] = err;
	}
	t->rej_n[i]++;
}

/* A record's executions when no execution log was kept. */
#define RUNS_UNKNOWN UINT_MAX

/* Check one record against its outcome and its executions. */
static void
check_rec(struct rec *r, unsigned runs, struct tally *t)
{
	uint32_t ncb = atomic_load(&r->ncb);
	bool idem = r->flags & RF_IDEM;

	if (r->flags & RF_REFUSED) {
		t->refused++;
		if (ncb != 0)
			violation("refused request got %u outcomes", ncb);
		return;
	}
	t->requests++;
	t->idem += idem;
	t->sync += (r->flags & RF_SYNC) != 0;
	t->cmd += (r->flags & RF_CMD) != 0;
	t->lent += (r->flags & (RF_LENT | RF_SYNC)) == RF_LENT;
	if (ncb != 1) {
		violation("request id %" PRIu64 " got %u outcomes", r->id, ncb);
		return;
	}
	t->by[r->outcome < 5 ? r->outcome : 0]++;
	if (r->outcome == SIPC_OUTCOME_REJECTED)
		count_rejected(t, r->error);
	if (r->cb_id != r->id)
		violation("request id %" PRIu64 " completed as id %" PRIu64,
		    r->id, r->cb_id);
	if (r->flags & RF_BADREPLY)
		violation("request id %" PRIu64 ": OK reply is not its payload",
		    r->id);
	if (r->outcome == SIPC_OUTCOME_WORKER_ERROR && !(r->flags & RF_CMD))
		violation("request id %" PRIu64 ": worker error for an echo",
		    r->id);
	if (runs == RUNS_UNKNOWN) {     /* no execution log kept */
		t->never_ran += !r->may_run;
		return;
	}
	if (runs > 1)
		t->reruns++;
	if (runs > 1 && !idem)
		violation("non-idempotent request id %" PRIu64 " ran %u times"
		    " (outcome %s)", r->id, runs,
		    sipc_outcome_name(r->outcome));
	if (runs > 1 + RETRIES)
		violation("idempotent request id %" PRIu64 " ran %u times",
		    r->id, runs);
	if (!r->may_run && runs > 0)
		violation("request id %" PRIu64 " ran %u times but its outcome "
		    "%s (%s) says it never ran%s", r->id, runs,
		    sipc_outcome_name(r->outcome), sipc_strerror(r->error),
		    idem ? " (idempotent)" : "");
	if (r->outcome == SIPC_OUTCOME_OK && runs == 0)
		violation("request id %" PRIu64 " is OK but never ran", r->id);
	t->never_ran += !r->may_run;
	t->may_ran += r->may_run && r->outcome != SIPC_OUTCOME_OK &&
	    r->outcome != SIPC_OUTCOME_WORKER_ERROR;
	/* "May have run" because its worker ended, yet it never ran.  A
	 * worker ends with at most one request accepted and not yet begun,
	 * unless it broke the protocol: then the bytes after the violation
	 * are never decoded and nothing it held is provably unstarted. */
	if (r->outcome == SIPC_OUTCOME_UNKNOWN && runs == 0) {
		if (r->error == SIPC_E_PROTOCOL)
			t->unknown_never_ran_cut++;
		else
			t->unknown_never_ran++;
		/* A fixture exits on its own only inside a handler, after
		 * logging it: the request it was running did run, and those
		 * behind it were never accepted. */
		if (r->exit_kind == SIPC_EXIT_CODE &&
		    r->error != SIPC_E_PROTOCOL)
			t->unknown_never_ran_self_exit++;
	}
}

/*
 * Start evidence is exact when requests reported "may have run" that the
 * execution log shows never ran are at most one per worker death (a
 * worker can be killed between a request's ACCEPT and its handler's
 * first side effect), and none at all where the worker exited by itself
 * inside a handler.  `deaths` counts the workers that ended before
 * sipc_destroy() (every outcome had arrived by then).
 */
static void
check_start_evidence(const struct tally *t, uint64_t deaths)
{
	printf("soak: start evidence worker_deaths %" PRIu64
	    " unknown_never_ran %" PRIu64 " (limit %" PRIu64 "), of them after"
	    " the worker exited inside a handler %" PRIu64 " (limit 0);"
	    " unknown_never_ran_after_violation %" PRIu64 " (no limit)\n",
	    deaths, t->unknown_never_ran, deaths,
	    t->unknown_never_ran_self_exit, t->unknown_never_ran_cut);
	if (t->unknown_never_ran > deaths)
		violation("unknown_never_ran %" PRIu64 " exceeds one per "
		    "worker death (%" PRIu64 "): start evidence is not exact",
		    t->unknown_never_ran, deaths);
	if (t->unknown_never_ran_self_exit > 0)
		violation("%" PRIu64 " requests behind a handler that exited "
		    "were reported \"may have run\" but never ran",
		    t->unknown_never_ran_self_exit);
}

void
check_all(uint64_t nrec, const char *log_path, uint64_t deaths)
{
	uint16_t *runs = log_path != NULL ? read_exec_log(nrec, log_path) :
	    NULL;
	struct tally t = { 0 };

	for (uint64_t i = 0; i < nrec; i++) {
		struct rec *r = rec_at(i);

		check_rec(r, runs ? runs[i] : log_path == NULL ?
		    RUNS_UNKNOWN : 0, &t);
		free(r->payload);
		r->payload = NULL;
	}
	printf("soak: requests %" PRIu64 " ok %" PRIu64 " worker_error %"
	    PRIu64 " rejected %" PRIu64 " timeout %" PRIu64 " unknown %"
	    PRIu64 "\n", t.requests, t.by[SIPC_OUTCOME_OK],
	    t.by[SIPC_OUTCOME_WORKER_ERROR], t.by[SIPC_OUTCOME_REJECTED],
	    t.by[SIPC_OUTCOME_TIMEOUT], t.by[SIPC_OUTCOME_UNKNOWN]);
	printf("soak: detail idempotent %" PRIu64 " sync %" PRIu64
	    " fault_commands %" PRIu64 " lent %" PRIu64
	    " refused_at_submit %" PRIu64
	    " ran_more_than_once %" PRIu64 " said_never_ran %" PRIu64
	    " said_may_have_run %" PRIu64 "\n", t.idem, t.sync, t.cmd,
	    t.lent, t.refused, t.reruns, t.never_ran, t.may_ran);
	if (t.nrej > 0) {
		printf("soak: rejected by reason");
		for (unsigned i = 0; i < t.nrej; i++)
			printf(" \"%s\" %" PRIu64, sipc_strerror(t.rej_err[i]),
			    t.rej_n[i]);
		if (t.rej_other > 0)
			printf(" other %" PRIu64, t.rej_other);
		printf("\n");
	}
	if (runs != NULL)
		check_start_evidence(&t, deaths);
	free(runs);
}


/*
 * durable.c - what the supervisor writes to its state directory, and the
 * reconciliation API built on it (journal.c has the format and the
 * durability modes; ident.c proves process identity).
 *
 * Threads: the note_* functions run on whichever thread passes the step
 * they record (submitters, writers, readers, the reaper); the journal
 * has its own leaf lock.  A journal append that fails is logged and the
 * request goes on: durability is best effort after the instance has
 * started, and the journal then refuses further appends, which the
 * reconcile list makes visible as unresolved entries.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ident.h"
#include "journal.h"
#include "provider.h"
#include "sipc_int.h"

static int64_t
wall_deadline(const struct sipc__req *q)
{
	struct timespec ts;

	if (q->deadline_ms == 0)
		return 0;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 +
	    (q->deadline_ms - sipc__now_ms());
}

static void
jcheck(struct sipc_supervisor *s, int rc, const char *what)
{
	if (rc < 0)
		sipc__log(s, SIPC_LOG_ERROR, NULL, "journal %s: %s", what,
		    sipc_strerror(rc));
}

void
sipc__journal_note_accepted(struct sipc_supervisor *s, struct sipc__req *q)
{
	if (s->journal == NULL)
		return;
	jcheck(s, sipc__journal_accepted(s->journal, q->id, q->key,
	    q->payload, q->len, wall_deadline(q)), "accepted");
}

void
sipc__journal_note_refused(struct sipc_supervisor *s, struct sipc__req *q)
{
	if (s->journal == NULL)
		return;
	jcheck(s, sipc__journal_completed(s->journal, q->id,
	    SIPC_OUTCOME_REJECTED, SIPC_E_FULL), "completed");
	sipc__journal_delivered(s->journal, q->id);
}

void
sipc__journal_note_written(struct sipc_supervisor *s, struct sipc__slot *sl,
                           struct sipc__req *q)
{
	if (s->journal == NULL)
		return;
	jcheck(s, sipc__journal_written(s->journal, q->id, sl->idx,
	    sl->generation, sl->pid), "written");
}

void
sipc__journal_note_done(struct sipc_supervisor *s, struct sipc__req *q,
                        const struct sipc_result *res)
{
	if (s->journal == NULL)
		return;
	jcheck(s, sipc__journal_completed(s->journal, q->id, res->outcome,
	    res->error), "completed");
}

void
sipc__journal_note_delivered(struct sipc_supervisor *s, struct sipc__req *q)
{
	if (s->journal != NULL)
		sipc__journal_delivered(s->journal, q->id);
}

void
sipc__journal_note_worker(struct sipc_supervisor *s, struct sipc__slot *sl,
                          const struct sipc__chan *ch)
{
	struct sipc__ident id;

	if (s->journal == NULL)
		return;
	memset(&id, 0, sizeof(id));
	id.pid = ch->pid;
	id.pgid = ch->pgid;
	id.starttime = ch->starttime;
	if (sipc__boot_id(id.boot_id) < 0)
		id.boot_id[0] = '\0';
	sipc__journal_instance(s->journal, id.instance);
	id.slot = sl->idx;
	id.generation = sl->generation;
	jcheck(s, sipc__journal_worker(s->journal, &id), "worker");
}

void
sipc__journal_note_worker_gone(struct sipc_supervisor *s, struct sipc__slot *sl)
{
	if (s->journal == NULL)
		return;
	jcheck(s, sipc__journal_worker_gone(s->journal, sl->idx,
	    sl->generation), "worker gone");
}

void
sipc__journal_note_tick(struct sipc_supervisor *s, int64_t now)
{
	if (s->journal != NULL)
		jcheck(s, sipc__journal_tick(s->journal, now), "sync");
}

/*
 * Workers of a dead instance may still run (reparented, holding the
 * journal's promises).  Each is terminated only if its identity is
 * proven against its record (pid + start time + boot id + group); a
 * pid now used by an unrelated process is left alone.
 */
static void
terminate_leftovers(struct sipc_supervisor *s)
{
	struct sipc__ident *w = NULL;
	size_t n = 0, i;
	int r;

	if (sipc__journal_leftover_workers(s->journal, &w, &n) < 0)
		return;
	for (i = 0; i < n; i++) {
		r = sipc__ident_terminate(&w[i], s->cfg.grace_ms);
		sipc__log(s, r == 1 ? SIPC_LOG_WARN : SIPC_LOG_INFO, NULL,
		    "leftover worker pid %ld (slot %u gen %u): %s",
		    (long)w[i].pid, w[i].slot, w[i].generation,
		    r == 1 ? "identity proven, terminated" :
		    r == 0 ? "not proven (gone or pid reused), left alone" :
		    sipc_strerror(r));
		if (r >= 0)
			jcheck(s, sipc__journal_leftover_gone(s->journal, &w[i]),
			    "leftover");
	}
	free(w);
}

int
sipc__durable_open(struct sipc_supervisor *s, char *errbuf, size_t errlen)
{
	int rc;

	rc = sipc__journal_open(s->cfg.state_dir, s->cfg.durability,
	    s->cfg.group_commit_ms, &s->journal, errbuf, errlen);
	if (rc < 0)
		return rc;
	terminate_leftovers(s);
	return 0;
}

void
sipc__durable_close(struct sipc_supervisor *s)
{
	if (s->journal == NULL)
		return;
	sipc__journal_close(s->journal);
	s->journal = NULL;
}

int
sipc_reconcile_list(sipc_supervisor *s, struct sipc_unresolved **ret,
                    size_t *ret_n)
{
	int rc;

	if (s == NULL || ret == NULL || ret_n == NULL)
		return -EINVAL;
	if ((rc = sipc__api_enter(s)) < 0)
		return rc;
	rc = s->journal == NULL ? SIPC_E_CONFIG :
	    sipc__journal_unresolved(s->journal, ret, ret_n);
	sipc__api_leave(s);
	return rc;
}

void
sipc_reconcile_free(struct sipc_unresolved *u)
{
	free(u);
}

int
sipc_reconcile_resolve(sipc_supervisor *s, const struct sipc_unresolved *u)
{
	int rc;

	if (s == NULL || u == NULL)
		return -EINVAL;
	if ((rc = sipc__api_enter(s)) < 0)
		return rc;
	rc = s->journal == NULL ? SIPC_E_CONFIG :
	    sipc__journal_resolve(s->journal, u->instance, u->request_id);
	sipc__api_leave(s);
	return rc;
}

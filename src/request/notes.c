/*
 * request/notes.c - what the supervisor writes to its state directory, and the
 * reconciliation API built on it (journal/append.c has the format and the
 * durability modes; each worker's provider proves its own identities).
 *
 * Threads: the note_* functions run on whichever thread passes the step
 * they record (submitters, writers, readers, the reaper); the journal
 * has its own leaf lock.
 *
 * Fail before the side effect: a request whose ACCEPTED or WRITTEN
 * record could not be appended is never written to a worker; it ends
 * REJECTED / SIPC_E_JOURNAL (provably never ran), or UNKNOWN when an
 * earlier worker that died with it may have run it.  Any failed append
 * or sync breaks the journal for good (journal/journal.h): the break is logged
 * once at ERROR, shown in stats (journal_error), and every later submit
 * is refused the same way until a new instance opens the directory.
 * Records that fail after the break (COMPLETED, DELIVERED, workers) only
 * leave the next instance with a more cautious list, never a false one:
 * a request written and then answered is listed MAY_HAVE_RUN, one
 * accepted and refused is NEVER_SENT.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "os/os.h"
#include "journal/journal.h"
#include "provider/provider.h"
#include "pool/pool.h"

static int64_t
wall_deadline(const struct sipc__req *q)
{
	if (q->deadline_ms == 0)
		return 0;
	return sipc__wall_ms() + (q->deadline_ms - sipc__now_ms());
}

/* Log a failed journal step: the break itself once, at ERROR (later
 * steps fail with the same error, quietly: the stats and the outcomes
 * say it), and any other error each time. */
static void
jcheck(struct sipc_supervisor *s, int rc, const char *what)
{
	bool first;
	int broken;

	if (rc >= 0)
		return;
	broken = sipc__journal_broken(s->journal, &first);
	if (broken == 0)
		sipc__log(s, SIPC_LOG_ERROR, NULL, "journal %s: %s", what,
		    sipc_strerror(rc));
	else if (first)
		sipc__log(s, SIPC_LOG_ERROR, NULL, "journal broken (%s: %s): "
		    "no request is sent until the supervisor is recreated",
		    what, sipc_strerror(broken));
}

int
sipc__journal_note_accepted(struct sipc_supervisor *s, struct sipc__req *q)
{
	int rc;

	if (s->journal == NULL)
		return 0;
	rc = sipc__journal_accepted(s->journal, q->id, q->key, q->payload,
	    q->len, wall_deadline(q));
	jcheck(s, rc, "accepted");
	return rc < 0 ? SIPC_E_JOURNAL : 0;
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

int
sipc__journal_note_written(struct sipc_supervisor *s, struct sipc__slot *sl,
                           struct sipc__req *q)
{
	int rc;

	rc = sipc__journal_written(s->journal, q->id, sl->idx, sl->generation,
	    sl->pid);
	if (rc == 0)
		return 0;
	/* SIPC_E_NOTFOUND: its outcome (a timeout) is journalled already;
	 * the caller has it, and the worker need not start it now. */
	if (rc != SIPC_E_NOTFOUND)
		jcheck(s, rc, "written");
	return SIPC_E_JOURNAL;
}

int
sipc__journal_note_sent_durable(struct sipc_supervisor *s)
{
	int rc;

	if (s->journal == NULL)
		return 0;
	rc = sipc__journal_written_durable(s->journal);
	jcheck(s, rc, "sync before send");
	return rc < 0 ? SIPC_E_JOURNAL : 0;
}

void
sipc__journal_note_done(struct sipc_supervisor *s, struct sipc__req *q,
                        const struct sipc_result *res)
{
	int rc;

	if (s->journal == NULL)
		return;
	rc = sipc__journal_completed(s->journal, q->id, res->outcome,
	    res->error);
	/* A request refused for its ACCEPTED record is not in the journal:
	 * nothing to complete. */
	if (!(rc == SIPC_E_NOTFOUND && res->error == SIPC_E_JOURNAL))
		jcheck(s, rc, "completed");
}

void
sipc__journal_note_delivered(struct sipc_supervisor *s, struct sipc__req *q)
{
	if (s->journal != NULL)
		sipc__journal_delivered(s->journal, q->id);
}

void
sipc__journal_note_worker(struct sipc_supervisor *s, struct sipc__slot *sl,
                          const struct sipc_provider_chan *ch)
{
	struct sipc__jowner w;

	if (s->journal == NULL)
		return;
	memset(&w, 0, sizeof(w));
	snprintf(w.provider, sizeof(w.provider), "%s", s->prov->name);
	w.id = ch->id;
	w.slot = sl->idx;
	w.generation = sl->generation;
	jcheck(s, sipc__journal_worker(s->journal, &w), "worker");
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
sipc__journal_note_stats(struct sipc_supervisor *s, struct sipc_stats *st)
{
	if (s->journal != NULL)
		st->journal_error = sipc__journal_broken(s->journal, NULL);
}

void
sipc__journal_note_tick(struct sipc_supervisor *s, int64_t now)
{
	if (s->journal != NULL)
		jcheck(s, sipc__journal_tick(s->journal, now), "sync");
}

static enum sipc_leftover_verdict
verdict_of(int r)
{
	return r == 1 ? SIPC_LEFTOVER_TERMINATED : r == 0 ?
	    SIPC_LEFTOVER_NOT_PROVEN : SIPC_LEFTOVER_FAILED;
}

/* The state of a provider named by a leftover record: this
 * supervisor's own, or one made for the reconciliation (kept in *other
 * for the records that follow; the caller destroys it).  NULL with *rc
 * set when the provider is not available or its state cannot be made. */
struct other_prov {
	const struct sipc_provider_ops *ops;
	void *state;
};

static const struct sipc_provider_ops *
leftover_provider(struct sipc_supervisor *s, const char *name,
                  struct other_prov *other, void **ret_state, int *rc)
{
	const struct sipc_provider_ops *ops;
	char why[160] = "";

	if (strcmp(name, s->prov->name) == 0) {
		*ret_state = s->prov_state;
		return s->prov;
	}
	if (other->ops != NULL && strcmp(name, other->ops->name) == 0) {
		*ret_state = other->state;
		return other->ops;
	}
	if ((ops = sipc__provider_find(name)) == NULL) {
		*rc = SIPC_E_CONFIG;
		return NULL;
	}
	if (other->ops != NULL)
		other->ops->destroy(other->state);
	other->ops = NULL;
	if ((*rc = ops->create(&s->cfg, &other->state, why, sizeof(why))) < 0) {
		sipc__log(s, SIPC_LOG_ERROR, NULL, "provider \"%s\" for leftover "
		    "workers: %s", name, why[0] ? why : sipc_strerror(*rc));
		return NULL;
	}
	other->ops = ops;
	*ret_state = other->state;
	return ops;
}

/* One leftover: its provider's verdict (1, 0, or an error); a provider
 * not available here is reported and the worker left alone (its record
 * kept for an instance that has the provider). */
static int
leftover_one(struct sipc_supervisor *s, const struct sipc__jowner *w,
             struct other_prov *other, struct sipc_leftover *v)
{
	const struct sipc_provider_ops *ops;
	struct sipc__ident k;
	void *state = NULL;
	int r = 0;

	memset(&k, 0, sizeof(k));
	if (strcmp(w->provider, "local") == 0)
		(void)sipc__ident_from_id(&w->id, &k);
	ops = leftover_provider(s, w->provider, other, &state, &r);
	if (ops != NULL)
		r = ops->leftover(state, &w->id, s->cfg.grace_ms);
	sipc__log(s, r == 1 ? SIPC_LOG_WARN : ops == NULL ? SIPC_LOG_ERROR :
	    SIPC_LOG_INFO, NULL,
	    "leftover worker of provider \"%s\" pid %ld (slot %u gen %u): %s",
	    w->provider, (long)k.pid, w->slot, w->generation,
	    ops == NULL && r == SIPC_E_CONFIG ? "provider not available here, "
	    "left alone (its record is kept)" :
	    r == 1 ? "identity proven, terminated" :
	    r == 0 ? "not proven (gone or identity reused), left alone" :
	    sipc_strerror(r));
	if (r >= 0)
		jcheck(s, sipc__journal_leftover_gone(s->journal, w), "leftover");
	if (v == NULL)
		return r;
	memcpy(v->instance, w->instance, sizeof(v->instance));
	snprintf(v->provider, sizeof(v->provider), "%s", w->provider);
	v->worker_id = w->slot;
	v->generation = w->generation;
	v->pid = k.pid;
	v->pgid = k.pgid;
	v->starttime = k.starttime;
	v->verdict = ops == NULL && r == SIPC_E_CONFIG ?
	    SIPC_LEFTOVER_NO_PROVIDER : verdict_of(r);
	v->error = r < 0 ? r : 0;
	return r;
}

/*
 * Workers of a dead instance may still run (reparented, holding the
 * journal's promises).  Each is handed to the provider that launched it,
 * which terminates it only if it proves the identity it journalled
 * (local: pid + start time + boot id + group); an identity that now
 * names something else is left alone.  The verdicts are kept for
 * sipc_reconcile_leftovers() (creating thread, before any other thread
 * exists: [const] afterwards).
 */
static void
terminate_leftovers(struct sipc_supervisor *s)
{
	struct other_prov other = { NULL, NULL };
	struct sipc__jowner *w = NULL;
	struct sipc_leftover *v;
	size_t n = 0, i;

	if (sipc__journal_leftover_workers(s->journal, &w, &n) < 0 || n == 0)
		return;
	/* Without room for the verdicts the workers are still handled;
	 * only the report is lost (the log keeps it). */
	s->leftovers = v = calloc(n, sizeof(*v));
	for (i = 0; i < n; i++) {
		(void)leftover_one(s, &w[i], &other, v != NULL ? &v[i] : NULL);
		if (v != NULL)
			s->nleftovers = i + 1;
	}
	if (other.ops != NULL)
		other.ops->destroy(other.state);
	free(w);
}

int
sipc__durable_open(struct sipc_supervisor *s, char *errbuf, size_t errlen)
{
	int rc;

	struct sipc__journal_stats st;

	rc = sipc__journal_open(s->cfg.state_dir, s->cfg.durability,
	    s->cfg.group_commit_ms, &s->journal, errbuf, errlen);
	if (rc < 0)
		return rc;
	sipc__journal_get_stats(s->journal, &st);
	if (st.corrupt)
		sipc__log(s, SIPC_LOG_ERROR, NULL, "journal: corrupt record at "
		    "byte %llu, %llu bytes from it on not read (requests "
		    "recorded there are missing); the file as found is kept "
		    "as %s", (unsigned long long)st.corrupt_offset,
		    (unsigned long long)st.corrupt_bytes, st.corrupt_copy);
	terminate_leftovers(s);
	return 0;
}

bool
sipc__durable_leftovers_kept(struct sipc_supervisor *s)
{
	struct sipc__jowner *w = NULL;
	size_t n = 0;

	if (s->journal == NULL)
		return false;
	/* a journal that cannot tell keeps them, as far as we know */
	if (sipc__journal_leftover_workers(s->journal, &w, &n) < 0)
		return true;
	free(w);
	return n > 0;
}

void
sipc__durable_close(struct sipc_supervisor *s)
{
	free(s->leftovers);
	s->leftovers = NULL;
	s->nleftovers = 0;
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

int
sipc_reconcile_leftovers(sipc_supervisor *s, struct sipc_leftover **ret,
                         size_t *ret_n)
{
	struct sipc_leftover *v = NULL;
	int rc;

	if (s == NULL || ret == NULL || ret_n == NULL)
		return -EINVAL;
	if ((rc = sipc__api_enter(s)) < 0)
		return rc;
	if (s->journal == NULL)
		rc = SIPC_E_CONFIG;
	else if (s->nleftovers > 0 &&
	    (v = reallocarray(NULL, s->nleftovers, sizeof(*v))) == NULL)
		rc = -ENOMEM;
	if (rc == 0) {
		if (v != NULL)
			memcpy(v, s->leftovers, s->nleftovers * sizeof(*v));
		*ret = v;
		*ret_n = s->nleftovers;
	}
	sipc__api_leave(s);
	return rc;
}

void
sipc_reconcile_leftovers_free(struct sipc_leftover *l)
{
	free(l);
}

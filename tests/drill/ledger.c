/*
 * ledger.c - the drill's ledger (format in drill.h): replay into
 * per-key state, the echo payloads, and the final tally against the
 * fixture's exec log.
 *
 * Threads: called by one thread at a time (a generation at start-up,
 * the controller at the end); no locks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wire/wire.h"
#include "drill.h"

static const char *const kind_names[DK__N] = {
	"ok", "werr", "rejected", "timeout", "unknown"
};
static const char *const rstate_names[DR__N] = {
	"never_sent", "may_have_run", "completed", "never_accepted"
};

const char *
drill_kind_name(int k)
{
	return k >= 0 && k < DK__N ? kind_names[k] : "?";
}

int
drill_kind_parse(const char *s)
{
	int i;

	for (i = 0; i < DK__N; i++)
		if (strcmp(s, kind_names[i]) == 0)
			return i;
	return -1;
}

const char *
drill_rstate_name(int r)
{
	return r >= 0 && r < DR__N ? rstate_names[r] : "?";
}

int
drill_rstate_parse(const char *s)
{
	int i;

	for (i = 0; i < DR__N; i++)
		if (strcmp(s, rstate_names[i]) == 0)
			return i;
	return -1;
}

static size_t
slot_of(uint32_t num, size_t cap)
{
	return (size_t)((num * 2654435761u) & (cap - 1));
}

static int
map_grow(struct drill_map *m)
{
	struct drill_map n = { NULL, m->cap ? m->cap * 2 : 1024, 0 };
	size_t i;

	if ((n.v = calloc(n.cap, sizeof(*n.v))) == NULL)
		return -ENOMEM;
	for (i = 0; i < m->cap; i++) {
		if (!m->v[i].used)
			continue;
		*drill_map_get(&n, m->v[i].num, true) = m->v[i];
	}
	free(m->v);
	*m = n;
	return 0;
}

struct drill_key *
drill_map_get(struct drill_map *m, uint32_t num, bool add)
{
	size_t i;

	if (add && (m->n + 1) * 2 > m->cap && map_grow(m) < 0)
		return NULL;
	if (m->cap == 0)
		return NULL;
	for (i = slot_of(num, m->cap); m->v[i].used; i = (i + 1) & (m->cap - 1))
		if (m->v[i].num == num)
			return &m->v[i];
	if (!add)
		return NULL;
	memset(&m->v[i], 0, sizeof(m->v[i]));
	m->v[i].used = true;
	m->v[i].num = num;
	m->v[i].last_kind = -1;
	m->n++;
	return &m->v[i];
}

void
drill_map_free(struct drill_map *m)
{
	free(m->v);
	memset(m, 0, sizeof(*m));
}

void
drill_payload(uint32_t num, uint8_t out[DRILL_PAYLOAD_LEN])
{
	memset(out, '.', DRILL_PAYLOAD_LEN);
	memcpy(out, "DRL1", 4);
	out[4] = (uint8_t)num;
	out[5] = (uint8_t)(num >> 8);
	out[6] = (uint8_t)(num >> 16);
	out[7] = (uint8_t)(num >> 24);
	/* Bytes a line-oriented protocol would choke on, on purpose. */
	out[8] = '\n';
	out[9] = '\0';
}

/* Close the open submission of `k` with a reconciliation record. */
static void
apply_r(struct drill_key *k, int st, int kind, struct drill_counts *c)
{
	if (!k->open) {
		/* A delivered outcome listed again: the delivery had not been
		 * journalled before the crash.  Must agree with what was
		 * delivered. */
		if (st == DR_COMPLETED && k->had_outcome) {
			c->dup_completed++;
			if (kind != k->last_kind)
				c->mismatch++;
		} else {
			c->contradiction++;
		}
		return;
	}
	k->open = false;
	c->recon[st]++;
	k->left_to_host = st == DR_MAY_HAVE_RUN;
	if (st == DR_COMPLETED) {
		c->outcome[kind]++;
		k->last_kind = kind;
	}
}

static void
apply_line(char *line, struct drill_map *m, struct drill_counts *c)
{
	char f[4][32];
	unsigned long num;
	struct drill_key *k;
	int n, st, kind;

	f[0][0] = f[1][0] = f[2][0] = f[3][0] = '\0';
	n = sscanf(line, "%31s %lu %31s %31s %31s", f[0], &num, f[1], f[2],
	    f[3]);
	if (n < 3 || f[0][1] != '\0' || num > UINT32_MAX ||
	    (k = drill_map_get(m, (uint32_t)num, true)) == NULL) {
		c->bad_lines++;
		return;
	}
	switch (f[0][0]) {
	case 'S':
		if (k->open)
			c->contradiction++;
		if (k->subs++ == 0)
			c->keys++;
		c->submissions++;
		k->open = true;
		k->accepted = false;
		k->idem = f[1][0] == 'i';
		k->left_to_host = false;
		break;
	case 'A':
		k->accepted = true;
		break;
	case 'O':
		if (n < 4 || (kind = drill_kind_parse(f[2])) < 0) {
			c->bad_lines++;
			break;
		}
		if (!k->open) {
			c->contradiction++;
			break;
		}
		k->open = false;
		k->had_outcome = true;
		k->last_kind = kind;
		c->outcome[kind]++;
		break;
	case 'R':
		if (n < 4 || (st = drill_rstate_parse(f[2])) < 0) {
			c->bad_lines++;
			break;
		}
		kind = st == DR_COMPLETED ? drill_kind_parse(f[3]) : 0;
		if (kind < 0) {
			c->bad_lines++;
			break;
		}
		apply_r(k, st, kind, c);
		break;
	case 'L':
		c->lost_marked++;
		break;
	default:
		c->bad_lines++;
	}
}

int
drill_ledger_load(const char *path, struct drill_map *m,
    struct drill_counts *c)
{
	char line[256];
	FILE *f;

	memset(c, 0, sizeof(*c));
	if ((f = fopen(path, "re")) == NULL)
		return errno == ENOENT ? 0 : -errno;
	while (fgets(line, sizeof(line), f) != NULL) {
		/* A line cut by a crash has no newline: the event it
		 * started never completed its write. */
		if (strchr(line, '\n') == NULL) {
			c->bad_lines++;
			continue;
		}
		apply_line(line, m, c);
	}
	fclose(f);
	return 0;
}

/* ------------------------------------------------------------ tally */

struct exec_stats {
	uint64_t lines, matched, commands, unmatched;
};

/* Count, per non-idempotent key, how often the fixture ran it. */
static int
count_execs(const char *path, struct drill_map *m, struct exec_stats *es)
{
	struct drill_map bycrc = { 0 };
	uint8_t p[DRILL_PAYLOAD_LEN];
	unsigned long long id;
	struct drill_key *k, *e;
	char line[128];
	unsigned crc;
	size_t i, len;
	int pid;
	FILE *f;

	memset(es, 0, sizeof(*es));
	/* crc -> key number; the map's num field holds the crc. */
	for (i = 0; i < m->cap; i++) {
		k = &m->v[i];
		if (!k->used || k->idem)
			continue;
		drill_payload(k->num, p);
		e = drill_map_get(&bycrc, sipc__crc32c(0, p, sizeof(p)), true);
		if (e == NULL)
			return -ENOMEM;
		e->subs = k->num;   /* by construction no two keys collide */
	}
	if ((f = fopen(path, "re")) == NULL) {
		drill_map_free(&bycrc);
		return errno == ENOENT ? 0 : -errno;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		es->lines++;
		if (sscanf(line, "%d %llu %zu %x", &pid, &id, &len, &crc) != 4)
			continue;
		if (len != DRILL_PAYLOAD_LEN) {
			es->commands++;
			continue;
		}
		e = drill_map_get(&bycrc, crc, false);
		if (e == NULL || (k = drill_map_get(m, e->subs, false)) == NULL) {
			es->unmatched++;
			continue;
		}
		k->execs++;
		es->matched++;
	}
	fclose(f);
	drill_map_free(&bycrc);
	return 0;
}

#define T(name, val, note) \
	printf("tally %-22s %10llu  %s\n", name, (unsigned long long)(val), note)

struct sums {
	uint64_t lost, rerun, rej_ran, ok_unseen, host, host_ran, closed;
};

/* Per-key checks: what is still open, and what the exec log says ran. */
static void
sum_keys(const struct drill_map *m, const struct drill_counts *c,
    struct sums *t)
{
	size_t i;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < m->cap; i++) {
		const struct drill_key *k = &m->v[i];

		if (!k->used)
			continue;
		if (k->open)
			t->lost++;
		if (k->idem)
			continue;
		if (k->execs > 1)
			t->rerun++;
		if (!k->open && k->last_kind == DK_REJECTED && k->execs > 0)
			t->rej_ran++;
		if (!k->open && !k->left_to_host && k->last_kind == DK_OK &&
		    k->execs == 0)
			t->ok_unseen++;
		if (k->left_to_host) {
			t->host++;
			t->host_ran += k->execs > 0;
		}
	}
	for (i = 0; i < DK__N; i++)
		t->closed += c->outcome[i];
	t->closed += c->recon[DR_NEVER_SENT] + c->recon[DR_MAY_HAVE_RUN] +
	    c->recon[DR_NEVER_ACCEPTED];
}

static void
print_counts(const struct drill_counts *c, const struct sums *t,
    const struct exec_stats *es)
{
	T("submitted", c->keys, "distinct keys (idempotency keys)");
	T("submissions", c->submissions, "S lines, resubmissions included");
	T("completed_ok", c->outcome[DK_OK], "outcome OK (live or journalled)");
	T("worker_error", c->outcome[DK_WERR], "outcome WORKER_ERROR");
	T("rejected", c->outcome[DK_REJECTED], "outcome REJECTED (never sent)");
	T("timeout", c->outcome[DK_TIMEOUT], "outcome TIMEOUT");
	T("unknown", c->outcome[DK_UNKNOWN],
	    "live outcome UNKNOWN (may have run)");
	T("never_sent", c->recon[DR_NEVER_SENT], "reconciled: resubmitted");
	T("may_have_run", c->recon[DR_MAY_HAVE_RUN],
	    "reconciled: idempotent resubmitted, others left to the host");
	T("completed", c->recon[DR_COMPLETED],
	    "reconciled: journalled outcome, counted in its kind above");
	T("completed_redelivery", c->dup_completed,
	    "listed again after delivery (consistent)");
	T("never_accepted", c->recon[DR_NEVER_ACCEPTED],
	    "crash inside sipc_submit: resubmitted");
	T("left_to_host", t->host, "may have run, not idempotent: not re-run");
	T("left_to_host_ran", t->host_ran,
	    "... of which the exec log shows ran");
	T("exec_matched", es->matched, "exec log lines of echo keys");
	T("exec_commands", es->commands, "exec log lines of commands");
	T("LOST", t->lost,
	    "no outcome and no reconciliation record (must be 0)");
	T("rerun", t->rerun, "non-idempotent keys executed twice (must be 0)");
	T("rejected_but_ran", t->rej_ran, "must be 0");
	T("ok_not_in_exec_log", t->ok_unseen, "must be 0");
	T("contradictions", c->contradiction + c->mismatch, "must be 0");
	T("bad_lines", c->bad_lines + es->unmatched, "must be 0");
}

static void
print_run(const struct drill_run *run)
{
	T("worker_kills", run->worker_kills, "SIGKILLed workers");
	T("supervisor_kills", run->supervisor_kills, "SIGKILLed supervisors");
	T("leftovers_after_crash", run->leftovers_seen,
	    "processes of the run alive right after a crash (sum)");
	T("leftovers_final", run->leftovers_final < 0 ? 0 :
	    run->leftovers_final, "must be 0");
	T("unresolved_after", run->unresolved_after < 0 ? 0 :
	    run->unresolved_after, "listed by a clean reopen (must be 0)");
	printf("tally %-22s %10d  baseline %d (final supervisor process)\n",
	    "fds_final", run->fds_final, run->fds_baseline);
	printf("tally %-22s %10s\n", "lock_probe", run->lock_probe == 1 ?
	    "ok" : run->lock_probe == 0 ? "FAILED" : "not run");
}

bool
drill_tally(const char *ledger, const char *exec_log,
    const struct drill_run *run)
{
	struct drill_map m = { 0 };
	struct drill_counts c;
	struct exec_stats es;
	struct sums t;
	bool ok;
	int r;

	memset(&es, 0, sizeof(es));
	if ((r = drill_ledger_load(ledger, &m, &c)) < 0 ||
	    (exec_log != NULL && (r = count_execs(exec_log, &m, &es)) < 0)) {
		printf("drill: cannot read the ledger or exec log: %s\n",
		    strerror(-r));
		drill_map_free(&m);
		return false;
	}
	sum_keys(&m, &c, &t);
	printf("drill: %u crash cycles + a final clean run, seed %llu\n",
	    run->cycles, run->seed);
	print_counts(&c, &t, &es);
	print_run(run);
	/* Without an execution log nothing is seen running: only the
	 * ledger's own checks hold. */
	if (exec_log == NULL)
		printf("drill: no execution log (sandboxed workers see no host "
		    "file): reruns and OK-but-not-run are not checked\n");
	ok = t.lost == 0 && t.rerun == 0 && t.rej_ran == 0 &&
	    (t.ok_unseen == 0 || exec_log == NULL) &&
	    c.contradiction == 0 && c.mismatch == 0 &&
	    c.bad_lines == 0 && es.unmatched == 0 &&
	    t.closed + t.lost == c.submissions && c.submissions > 0 &&
	    run->leftovers_final == 0 && run->unresolved_after == 0 &&
	    run->fds_final == run->fds_baseline && run->final_status == 0 &&
	    run->lock_probe != 0;
	if (t.closed + t.lost != c.submissions)
		printf("drill: closures %llu + lost %llu != submissions\n",
		    (unsigned long long)t.closed, (unsigned long long)t.lost);
	printf("drill: %s\n", ok ? "PASS" : "FAIL");
	drill_map_free(&m);
	return ok;
}

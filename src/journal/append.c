/*
 * journal/append.c - durable intent journal, instance lock, ownership records,
 * reconciliation data (contract and format in journal/journal.h).
 *
 * Threads: any thread may call any function.  j->mu guards everything in
 * struct sipc__journal; it is a leaf lock (taken after any other library
 * lock, never held while calling out).  The one slow step, fdatasync, runs
 * with j->mu released: one thread syncs (j->syncing) up to a record
 * sequence number while others append or wait on j->cv for their own
 * sequence number to be covered, so concurrent EACH appenders share syncs.
 * The descriptor is replaced only by compaction, which runs on the
 * thread that ticks (the reaper), never on an appender: it writes and
 * syncs the new file with j->mu released and takes it only to snapshot
 * memory and, once no sync is running, to copy the last records appended
 * meanwhile and swap (compact()).
 *
 * In memory: every request and worker the journal must still remember,
 * i.e. exactly what compaction writes back: previous instances'
 * unresolved requests and live leftover workers, this instance's
 * requests not yet completed-and-delivered and its live workers.
 */
#include "journal/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bsd/stdlib.h>

#include "base/base.h"
#include "wire/wire.h"

struct sipc__journal {
	pthread_mutex_t mu;
	pthread_cond_t cv;        /* a sync finished */
	int fd, dirfd, lockfd;
	char *dir;
	enum sipc_durability mode;
	unsigned group_ms;

	uint64_t size;            /* bytes in the journal file */
	uint64_t wseq, sseq;      /* records written / covered by a sync */
	bool syncing, compacting;
	bool compact_due;         /* the file outgrew compact_at: the next
	                           * tick compacts (compact()) */
	int broken;               /* sticky: the first failed write or sync
	                           * (journal/journal.h "broken") */
	bool broken_told;         /* sipc__journal_broken() reported it */
	int64_t last_sync_ms;     /* GROUP: tick clock of the last sync */
	uint64_t compact_min, compact_at;

	struct sipc__jstate s;     /* what is remembered (journal/journal.h) */
	struct sipc__journal_stats st;
};

uint64_t
sipc__payload_digest(const void *payload, size_t len)
{
	const uint8_t *p = payload;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* Read the previous journal into memory and cut what follows the good
 * prefix.  Called at open, single-threaded. */
static int
load(struct sipc__journal *j, char *errbuf, size_t errlen)
{
	return sipc__jread_load(j->fd, j->dirfd, &j->s, &j->st, &j->size,
	    errbuf, errlen);
}

/* ---------------------------------------------------- appending, sync */

/* Sync until record sequence `target` is covered.  j->mu held; released
 * around fdatasync. */
static int
sync_to(struct sipc__journal *j, uint64_t target)
{
	if (j->broken)
		return j->broken;
	while (j->sseq < target) {
		uint64_t upto;
		int fd, r;

		if (j->broken)
			return j->broken;
		if (j->syncing) {
			pthread_cond_wait(&j->cv, &j->mu);
			continue;
		}
		upto = j->wseq;
		fd = j->fd;
		j->syncing = true;
		pthread_mutex_unlock(&j->mu);
		r = sipc__jdir_sync(fd, true);
		pthread_mutex_lock(&j->mu);
		j->syncing = false;
		j->st.syncs++;
		if (r < 0)
			j->broken = r;
		else if (upto > j->sseq)
			j->sseq = upto;
		pthread_cond_broadcast(&j->cv);
	}
	return 0;
}

/* Write one record (j->mu held).  A failed write is cut back so the file
 * stays a sequence of whole records. */
static int
append_locked(struct sipc__journal *j, const struct sipc__jrec *rec)
{
	uint8_t buf[SIPC__JREC_MAX];
	size_t n;
	int r;

	if (j->broken)
		return j->broken;
	if ((r = sipc__jrec_encode(rec, buf, sizeof(buf), &n)) < 0)
		return r;
	if ((r = sipc__jdir_write_all(j->fd, buf, n)) < 0) {
		/* Cut back what reached the file, so that it stays a
		 * sequence of whole records, and write nothing more: the
		 * step this record was for will not happen, and no later
		 * record may speak of steps after it (the cause, a full
		 * disk, a file size limit or EIO, is rarely passing). */
		(void)ftruncate(j->fd, (off_t)j->size);
		j->broken = r;
		return r;
	}
	j->size += n;
	j->wseq++;
	j->st.appended++;
	return 0;
}

/* After a successful append: durability per mode; a compaction, when the
 * file outgrew its threshold, is only flagged here and runs off the
 * append path (sipc__journal_tick()), so no appender waits for it. */
static int
after_append(struct sipc__journal *j)
{
	int r = 0;

	if (j->mode == SIPC_DURABLE_EACH)
		r = sync_to(j, j->wseq);
	if (j->size > j->compact_at)
		j->compact_due = true;
	return r;
}

/* ----------------------------------------------------------- compaction */

void (*sipc__journal_compact_hook)(struct sipc__journal *j);

/* Copy the old journal's bytes [*from, upto) to the end of `fd` and sync
 * them.  Any lock state: the bytes before j->size are whole records that
 * nobody rewrites (a failed append cuts back only what follows them). */
static int
copy_tail(int oldfd, int fd, uint64_t *from, uint64_t upto)
{
	uint8_t buf[16384];
	ssize_t n;
	int r;

	while (*from < upto) {
		size_t want = upto - *from < sizeof(buf) ?
		    (size_t)(upto - *from) : sizeof(buf);

		if ((n = pread(oldfd, buf, want, (off_t)*from)) <= 0)
			return n < 0 ? -errno : -EIO;
		if ((r = sipc__jdir_write_all(fd, buf, (size_t)n)) < 0)
			return r;
		*from += (uint64_t)n;
	}
	return sipc__jdir_sync(fd, true);
}

static void
compact_failed(struct sipc__journal *j, int fd, int r)
{
	j->st.last_error = r;
	if (fd >= 0) {
		close(fd);
		(void)unlinkat(j->dirfd, "journal.tmp", 0);
	}
	/* Do not retry on every tick: wait for the file to double. */
	j->compact_at = j->size * 2 > j->compact_min ? j->size * 2 :
	    j->compact_min;
	j->compact_due = false;
	j->compacting = false;
}

/*
 * Rewrite the journal as what memory remembers, with j->mu released
 * around every write and fsync: appenders go on appending to the old
 * file meanwhile.
 *   1. under j->mu: the image of memory and the file size it stands for;
 *   2. unlocked: journal.tmp := image, fsync;
 *   3. unlocked, a few rounds: append to journal.tmp what was appended to
 *      the old file meanwhile (whole records, applied after the image),
 *      fdatasync;
 *   4. under j->mu, no sync running: the rest of that tail (only what
 *      came during the last round), rename over journal, swap the fd;
 *   5. unlocked, holding the sync turn (j->syncing) so that no append is
 *      reported synced before the rename is durable: fsync the directory.
 * A failure before the rename leaves the old journal in use (the error
 * is kept in stats).  A failed directory fsync after it breaks the
 * journal: the rename may not be on disk, so after a power loss the old
 * file could come back without the records appended to the new one.
 * Called with no lock held; `force` compacts even when not due (close).
 */
static void
compact(struct sipc__journal *j, bool force)
{
	uint8_t *buf = NULL;
	size_t len = 0;
	uint64_t start, from, upto, wseq;
	int fd = -1, oldfd, r;

	pthread_mutex_lock(&j->mu);
	if (j->compacting || j->broken || !(force || j->compact_due)) {
		pthread_mutex_unlock(&j->mu);
		return;
	}
	j->compacting = true;
	j->compact_due = false;
	r = sipc__js_image(&j->s, &buf, &len);
	start = from = j->size;
	oldfd = j->fd;
	pthread_mutex_unlock(&j->mu);
	if (r < 0)
		goto fail;
	fd = openat(j->dirfd, "journal.tmp",
	    O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0 || (r = sipc__jdir_write_all(fd, buf, len)) < 0 ||
	    (r = sipc__jdir_sync(fd, false)) < 0) {
		r = r < 0 ? r : -errno;
		goto fail;
	}
	free(buf);
	buf = NULL;
	if (sipc__journal_compact_hook != NULL)
		sipc__journal_compact_hook(j);
	for (int round = 0; round < 3; round++) {
		pthread_mutex_lock(&j->mu);
		upto = j->size;
		r = j->broken;
		pthread_mutex_unlock(&j->mu);
		if (r < 0)
			goto fail;
		if (upto == from)
			break;
		if ((r = copy_tail(oldfd, fd, &from, upto)) < 0)
			goto fail;
	}
	pthread_mutex_lock(&j->mu);
	while (j->syncing)
		pthread_cond_wait(&j->cv, &j->mu);
	if ((r = j->broken) < 0)
		goto fail_locked;
	/* what came during the last round: rare, and small */
	if (j->size > from &&
	    (r = copy_tail(oldfd, fd, &from, j->size)) < 0)
		goto fail_locked;
	if (renameat(j->dirfd, "journal.tmp", j->dirfd, "journal") < 0) {
		r = -errno;
		goto fail_locked;
	}
	/* The rename is done: the new file is the journal now, whatever
	 * the directory fsync says.  Everything written so far is in it,
	 * synced; only the rename's durability is still to come. */
	close(j->fd);
	j->fd = fd;
	j->size = len + (from - start);
	len = (size_t)j->size;
	wseq = j->wseq;
	j->syncing = true;
	pthread_mutex_unlock(&j->mu);
	r = sipc__jdir_sync(j->dirfd, false);
	pthread_mutex_lock(&j->mu);
	j->syncing = false;
	j->st.syncs += 2;
	if (r < 0) {
		j->st.last_error = r;
		j->broken = r;
	} else if (wseq > j->sseq) {
		j->sseq = wseq;
	}
	j->st.compactions++;
	j->compact_at = len * 2 > j->compact_min ? len * 2 : j->compact_min;
	/* appends during it may have flagged the old file's size: judge
	 * the new one */
	j->compact_due = j->size > j->compact_at;
	j->compacting = false;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
	return;
fail:
	pthread_mutex_lock(&j->mu);
fail_locked:
	compact_failed(j, fd, r);
	pthread_mutex_unlock(&j->mu);
	free(buf);
}

/* ---------------------------------------------------------- open/close */

static void
journal_free(struct sipc__journal *j)
{
	sipc__js_free(&j->s);
	if (j->fd >= 0)
		close(j->fd);
	sipc__jdir_unlock(j->dirfd, j->dir, j->lockfd);
	if (j->dirfd >= 0)
		close(j->dirfd);
	free(j->dir);
	pthread_cond_destroy(&j->cv);
	pthread_mutex_destroy(&j->mu);
	free(j);
}

/* New instance id and its INSTANCE record, synced in every mode so the
 * next instance can always attribute our records.  j->mu held. */
static int
start_instance(struct sipc__journal *j)
{
	struct sipc__jrec rec;
	struct sipc__jinst in;
	int i, r;

	memset(&in, 0, sizeof(in));
	arc4random_buf(in.id, sizeof(in.id));
	if ((r = sipc__boot_id(in.boot_id)) < 0)
		return r;
	in.pid = getpid();
	in.time_ms = sipc__wall_ms();
	/* group and each: sipc__journal_written_durable() before a send */
	in.flags = j->mode != SIPC_DURABLE_OFF ? SIPC__JINST_SENT_DURABLE : 0;
	if ((i = sipc__js_inst_add(&j->s, &in)) < 0)
		return i;
	j->s.cur = (uint32_t)i;
	sipc__js_rec_instance(&in, &rec);
	if ((r = append_locked(j, &rec)) < 0)
		return r;
	return sync_to(j, j->wseq);
}

static int
open_files(struct sipc__journal *j, char *errbuf, size_t errlen)
{
	int r;

	if ((r = sipc__jdir_open(j->dir, &j->dirfd, errbuf, errlen)) < 0 ||
	    (r = sipc__jdir_lock(j->dir, &j->lockfd, errbuf, errlen)) < 0)
		return r;
	j->fd = openat(j->dirfd, "journal",
	    O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (j->fd < 0) {
		r = -errno;
		snprintf(errbuf, errlen, "cannot open journal in %s: %s",
		    j->dir, strerror(-r));
		return r;
	}
	return 0;
}

int
sipc__journal_open(const char *dir, enum sipc_durability mode,
    unsigned group_commit_ms, struct sipc__journal **ret, char *errbuf,
    size_t errlen)
{
	struct sipc__journal *j;
	int r;

	if (errbuf == NULL)
		errlen = 0;
	if (dir == NULL || ret == NULL)
		return -EINVAL;
	if ((j = calloc(1, sizeof(*j))) == NULL)
		return -ENOMEM;
	j->fd = j->dirfd = j->lockfd = -1;
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	j->mode = mode;
	j->group_ms = group_commit_ms ? group_commit_ms : 10;
	j->compact_min = j->compact_at = SIPC__JOURNAL_COMPACT_DEFAULT;
	j->s.nbuckets = 64;
	j->s.buckets = calloc(j->s.nbuckets, sizeof(*j->s.buckets));
	j->dir = strdup(dir);
	if (j->s.buckets == NULL || j->dir == NULL) {
		r = -ENOMEM;
		goto fail;
	}
	if ((r = open_files(j, errbuf, errlen)) < 0)
		goto fail;
	if ((r = load(j, errbuf, errlen)) < 0)
		goto fail;
	pthread_mutex_lock(&j->mu);
	/* The directory entry of a new journal must be durable too. */
	r = sipc__jdir_sync(j->dirfd, false);
	if (r == 0)
		r = start_instance(j);
	pthread_mutex_unlock(&j->mu);
	/* only this thread knows the journal yet: compact right away */
	if (r == 0 && j->size > j->compact_at)
		compact(j, true);
	if (r < 0) {
		snprintf(errbuf, errlen, "cannot start journal in %s: %s",
		    dir, strerror(-r));
		goto fail;
	}
	*ret = j;
	return 0;
fail:
	journal_free(j);
	return r;
}

void
sipc__journal_close(struct sipc__journal *j)
{
	if (j == NULL)
		return;
	compact(j, true);
	pthread_mutex_lock(&j->mu);
	(void)sync_to(j, j->wseq);
	pthread_mutex_unlock(&j->mu);
	journal_free(j);
}

void
sipc__journal_instance(struct sipc__journal *j, uint8_t ret[16])
{
	pthread_mutex_lock(&j->mu);
	memcpy(ret, j->s.inst[j->s.cur].id, 16);
	pthread_mutex_unlock(&j->mu);
}

void
sipc__journal_set_compact_threshold(struct sipc__journal *j, uint64_t bytes)
{
	pthread_mutex_lock(&j->mu);
	j->compact_min = j->compact_at = bytes;
	pthread_mutex_unlock(&j->mu);
}

/* ------------------------------------------------------------ requests */

int
sipc__journal_accepted(struct sipc__journal *j, uint64_t id, const char *key,
    const void *payload, size_t len, int64_t deadline_ms)
{
	size_t kl = key != NULL ? strlen(key) : 0;
	struct sipc__jrec rec;
	struct sipc__jreq *q;
	int r;

	if (kl > SIPC__JOURNAL_KEY_MAX || (payload == NULL && len > 0) ||
	    len > UINT32_MAX)
		return -EINVAL;
	memset(&rec, 0, sizeof(rec));
	rec.type = SIPC__JR_ACCEPTED;
	rec.u.acc.id = id;
	rec.u.acc.keylen = (uint8_t)kl;
	memcpy(rec.u.acc.key, key != NULL ? key : "", kl);
	rec.u.acc.digest = sipc__payload_digest(payload, len);
	rec.u.acc.len = (uint32_t)len;
	rec.u.acc.deadline = deadline_ms;
	if ((q = sipc__js_req_new(0, &rec.u.acc)) == NULL)
		return -ENOMEM;
	pthread_mutex_lock(&j->mu);
	q->inst = j->s.cur;
	if (sipc__js_req_find(&j->s, j->s.cur, id) != NULL)
		r = -EEXIST;
	else if ((r = append_locked(j, &rec)) == 0) {
		sipc__js_req_insert(&j->s, q);
		q = NULL;
		r = after_append(j);
	}
	pthread_mutex_unlock(&j->mu);
	free(q);
	return r;
}

int
sipc__journal_written(struct sipc__journal *j, uint64_t id, uint32_t slot,
    uint32_t generation, pid_t pid)
{
	struct sipc__jrec rec;
	struct sipc__jreq *q;
	int r;

	memset(&rec, 0, sizeof(rec));
	rec.type = SIPC__JR_WRITTEN;
	rec.u.wr = (struct sipc__jwritten){ id, slot, generation, pid };
	pthread_mutex_lock(&j->mu);
	if ((q = sipc__js_req_find(&j->s, j->s.cur, id)) == NULL || q->completed)
		r = SIPC_E_NOTFOUND;
	else if ((r = append_locked(j, &rec)) == 0) {
		q->written = true;
		q->slot = slot;
		q->generation = generation;
		q->pid = pid;
		r = after_append(j);
	}
	pthread_mutex_unlock(&j->mu);
	return r;
}

int
sipc__journal_completed(struct sipc__journal *j, uint64_t id,
    enum sipc_outcome outcome, int error)
{
	struct sipc__jrec rec;
	struct sipc__jreq *q;
	int r;

	memset(&rec, 0, sizeof(rec));
	rec.type = SIPC__JR_COMPLETED;
	rec.u.done = (struct sipc__jcompleted){ id, (uint8_t)outcome, error };
	pthread_mutex_lock(&j->mu);
	if ((q = sipc__js_req_find(&j->s, j->s.cur, id)) == NULL || q->completed)
		r = SIPC_E_NOTFOUND;
	else if ((r = append_locked(j, &rec)) == 0) {
		q->completed = true;
		q->outcome = (uint8_t)outcome;
		q->error = error;
		if (q->delivered)
			sipc__js_req_remove(&j->s, j->s.cur, id);
		r = after_append(j);
	}
	pthread_mutex_unlock(&j->mu);
	return r;
}

/*
 * The callback returned.  Recorded (never synced: losing it only makes a
 * completed request show up once more in reconciliation, which hosts
 * resolve by idempotency key) so that a crash lists only what a caller
 * may not have seen.
 */
void
sipc__journal_delivered(struct sipc__journal *j, uint64_t id)
{
	struct sipc__jrec rec;
	struct sipc__jreq *q;

	memset(&rec, 0, sizeof(rec));
	rec.type = SIPC__JR_DELIVERED;
	rec.u.delivered_id = id;
	pthread_mutex_lock(&j->mu);
	if ((q = sipc__js_req_find(&j->s, j->s.cur, id)) != NULL) {
		(void)append_locked(j, &rec);
		if (q->completed)
			sipc__js_req_remove(&j->s, j->s.cur, id);
		else
			q->delivered = true;
		if (j->size > j->compact_at)
			j->compact_due = true;
	}
	pthread_mutex_unlock(&j->mu);
}

/* ------------------------------------------------------------- workers */

int
sipc__journal_worker(struct sipc__journal *j, const struct sipc__jowner *w)
{
	struct sipc__jrec rec;
	int r;

	memset(&rec, 0, sizeof(rec));
	rec.type = SIPC__JR_WORKER;
	rec.u.worker = *w;
	pthread_mutex_lock(&j->mu);
	memcpy(rec.u.worker.instance, j->s.inst[j->s.cur].id, 16);
	/* Remember first, so a record on disk is never missing in memory. */
	if ((r = sipc__js_worker_add(&j->s, j->s.cur, &rec.u.worker)) == 0) {
		if ((r = append_locked(j, &rec)) < 0)
			sipc__js_worker_remove(&j->s, (size_t)sipc__js_worker_find(&j->s, j->s.cur, w->slot,
			    w->generation));
		else
			r = after_append(j);
	}
	pthread_mutex_unlock(&j->mu);
	return r;
}

static int
gone_locked(struct sipc__journal *j, uint32_t inst, uint32_t slot,
    uint32_t gen)
{
	struct sipc__jrec rec;
	ssize_t wi = sipc__js_worker_find(&j->s, inst, slot, gen);
	int r;

	if (wi < 0)
		return SIPC_E_NOTFOUND;
	memset(&rec, 0, sizeof(rec));
	rec.type = SIPC__JR_WORKER_GONE;
	memcpy(rec.u.gone.instance, j->s.inst[inst].id, 16);
	rec.u.gone.slot = slot;
	rec.u.gone.generation = gen;
	if ((r = append_locked(j, &rec)) < 0)
		return r;
	sipc__js_worker_remove(&j->s, (size_t)wi);
	return after_append(j);
}

int
sipc__journal_worker_gone(struct sipc__journal *j, uint32_t slot,
    uint32_t generation)
{
	int r;

	pthread_mutex_lock(&j->mu);
	r = gone_locked(j, j->s.cur, slot, generation);
	pthread_mutex_unlock(&j->mu);
	return r;
}

int
sipc__journal_leftover_gone(struct sipc__journal *j,
    const struct sipc__jowner *w)
{
	int i, r = SIPC_E_NOTFOUND;

	pthread_mutex_lock(&j->mu);
	i = sipc__js_inst_find(&j->s, w->instance);
	if (i >= 0 && (uint32_t)i != j->s.cur)
		r = gone_locked(j, (uint32_t)i, w->slot, w->generation);
	pthread_mutex_unlock(&j->mu);
	return r;
}

int
sipc__journal_leftover_workers(struct sipc__journal *j,
    struct sipc__jowner **ret, size_t *ret_n)
{
	struct sipc__jowner *v = NULL;
	size_t n = 0;

	pthread_mutex_lock(&j->mu);
	for (size_t k = 0; k < j->s.nworkers; k++)
		n += j->s.workers[k].inst != j->s.cur;
	if (n > 0 && (v = calloc(n, sizeof(*v))) == NULL) {
		pthread_mutex_unlock(&j->mu);
		return -ENOMEM;
	}
	n = 0;
	for (size_t k = 0; k < j->s.nworkers; k++)
		if (j->s.workers[k].inst != j->s.cur)
			v[n++] = j->s.workers[k].w;
	pthread_mutex_unlock(&j->mu);
	*ret = v;
	*ret_n = n;
	return 0;
}

/* ------------------------------------------------------ reconciliation */

int
sipc__journal_unresolved(struct sipc__journal *j,
    struct sipc_unresolved **ret, size_t *ret_n)
{
	int r;

	pthread_mutex_lock(&j->mu);
	r = sipc__js_unresolved(&j->s, ret, ret_n);
	pthread_mutex_unlock(&j->mu);
	return r;
}

int
sipc__journal_resolve(struct sipc__journal *j, const uint8_t instance[16],
    uint64_t id)
{
	struct sipc__jrec rec;
	int i, r;

	memset(&rec, 0, sizeof(rec));
	rec.type = SIPC__JR_RESOLVED;
	memcpy(rec.u.resolved.instance, instance, 16);
	rec.u.resolved.id = id;
	pthread_mutex_lock(&j->mu);
	i = sipc__js_inst_find(&j->s, instance);
	if (i < 0 || (uint32_t)i == j->s.cur || sipc__js_req_find(&j->s, (uint32_t)i, id) == NULL)
		r = SIPC_E_NOTFOUND;
	else if ((r = append_locked(j, &rec)) == 0) {
		sipc__js_req_remove(&j->s, (uint32_t)i, id);
		r = after_append(j);
	}
	pthread_mutex_unlock(&j->mu);
	return r;
}

/* ---------------------------------------------------------- durability */

int
sipc__journal_tick(struct sipc__journal *j, int64_t now_ms)
{
	int r = 0;

	compact(j, false);
	pthread_mutex_lock(&j->mu);
	if (j->mode == SIPC_DURABLE_GROUP && j->sseq < j->wseq &&
	    now_ms - j->last_sync_ms >= (int64_t)j->group_ms) {
		if ((r = sync_to(j, j->wseq)) == 0) {
			j->last_sync_ms = now_ms;
			r = 1;
		}
	}
	pthread_mutex_unlock(&j->mu);
	return r;
}

int
sipc__journal_sync(struct sipc__journal *j)
{
	int r;

	pthread_mutex_lock(&j->mu);
	r = sync_to(j, j->wseq);
	pthread_mutex_unlock(&j->mu);
	return r;
}

int
sipc__journal_written_durable(struct sipc__journal *j)
{
	int r;

	pthread_mutex_lock(&j->mu);
	r = j->mode == SIPC_DURABLE_GROUP ? sync_to(j, j->wseq) : j->broken;
	pthread_mutex_unlock(&j->mu);
	return r;
}

int
sipc__journal_broken(struct sipc__journal *j, bool *ret_first)
{
	int r;

	pthread_mutex_lock(&j->mu);
	r = j->broken;
	if (ret_first != NULL)
		*ret_first = r != 0 && !j->broken_told;
	if (r != 0 && ret_first != NULL)
		j->broken_told = true;
	pthread_mutex_unlock(&j->mu);
	return r;
}

void
sipc__journal_get_stats(struct sipc__journal *j,
    struct sipc__journal_stats *ret)
{
	pthread_mutex_lock(&j->mu);
	*ret = j->st;
	ret->broken = j->broken;
	ret->orphans = j->s.orphans;
	ret->file_size = j->size;
	pthread_mutex_unlock(&j->mu);
}

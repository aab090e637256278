/*
 * journal.h - the durable intent journal of a supervisor instance, the
 * instance lock on its state directory, ownership records of workers, and
 * the data reconciliation needs after a crash.
 *
 * State directory layout:
 *   sipc.pid         instance lock (fcntl record lock) + holder pid;
 *                    the lock belongs to the holder's process and dies
 *                    with it, whatever children still have a copy of
 *                    the descriptor (opened close-on-exec all the same);
 *                    see jdir.c
 *   journal          append-only records (format below)
 *   journal.tmp      compaction in progress (renamed over journal)
 *   journal.corrupt.<epoch ms>
 *                    copy of the whole journal as found, written (and
 *                    synced) when a corrupt record was met at open,
 *                    before the journal is cut; one new file per such
 *                    open, never overwritten or removed by the library
 *                    (for an operator; remove them when examined)
 *
 * Record (integers little-endian; codec in jrec.c):
 *   u32 magic "SIPJ" | u32 length of payload | u8 type | payload |
 *   u32 CRC-32C over (length, type, payload)
 * A record belongs to the instance named by the closest INSTANCE record
 * before it (RESOLVED, WORKER and WORKER_GONE name their instance).
 *
 * Threads and locks: every function may be called from any thread; one
 * internal mutex guards all state.  It is a LEAF lock: the journal takes
 * it last, after any other library lock the caller holds, and never calls
 * out while holding it.  An append in SIPC_DURABLE_EACH mode blocks until
 * its record is on disk (concurrent appenders share one fdatasync), so
 * prefer appending without holding a lock other threads need.
 *
 * Durability (what an append that returned 0 survives):
 *   OFF    the record is in the kernel page cache: it survives a crash of
 *          the process (SIGKILL, abort), not a kernel crash or power loss.
 *   GROUP  as OFF, plus: sipc__journal_tick() fdatasyncs when records are
 *          unsynced and group_commit_ms passed since the last sync, so on
 *          power loss at most the records of the last group_commit_ms plus
 *          one tick period are lost.  Appends never sync, but no frame
 *          goes out before its WRITTEN record is synced
 *          (sipc__journal_written_durable(): one sync per batch, shared
 *          by concurrent writers), so on power loss a request that was
 *          sent is never left with ACCEPTED and no WRITTEN.
 *   EACH   fdatasync completed before the append returned: the record
 *          survives power loss (as far as the disk honours flushes).
 * After a power loss, an OFF instance's "ACCEPTED, no WRITTEN" proves
 * nothing (its frame may have gone out, its record not reached the
 * disk): the next instance on another boot lists such a request
 * MAY_HAVE_RUN, and NEVER_SENT only on the same boot (a crash of the
 * process loses nothing the kernel was given).  The INSTANCE record
 * says which promise its instance kept (SIPC__JINST_SENT_DURABLE).
 * Whatever is lost on power loss is lost from the tail: the reader cuts a
 * torn tail and never misreads it.  Open, compaction and close always
 * fsync (they are rare); a new state directory's parent is synced too.
 *
 * Broken: the first append whose write fails (a full disk, a file size
 * limit, EIO), the first failed fdatasync, and a failed directory fsync
 * after compaction's rename break the journal for good: every later
 * append, sync and compaction returns that first error and writes
 * nothing.  What the file holds is then a true, if shorter, history: a
 * failed write is cut back to whole records, and a step whose record
 * failed must not happen (the supervisor does not send a request whose
 * WRITTEN record failed).  A new instance (a new open) starts afresh.
 */
#ifndef SIPC_JOURNAL_H
#define SIPC_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sipc.h"
#include "jrec.h"

#define SIPC__JOURNAL_KEY_MAX 255u
#define SIPC__JOURNAL_COMPACT_DEFAULT (4u << 20)

enum sipc__jrec_type {
	SIPC__JR_INSTANCE = 1,    /* instance[16] boot_id[36] pid u32 time i64
	                           * flags u8 (SIPC__JINST_*, jrec.h; records
	                           * of 0.2 and earlier have none: read 0) */
	SIPC__JR_ACCEPTED = 2,    /* id u64, keylen u8, key, digest u64,
	                           * len u32, deadline (epoch ms) i64 */
	SIPC__JR_WRITTEN = 3,     /* id u64, slot u32, generation u32, pid u32 */
	SIPC__JR_COMPLETED = 4,   /* id u64, outcome u8, error i32 */
	SIPC__JR_WORKER_V1 = 5,   /* read only (0.x journals): pid u32,
	                           * pgid u32, starttime u64, boot_id[36],
	                           * instance[16], slot u32, gen u32 */
	SIPC__JR_WORKER_GONE = 6, /* instance[16], slot u32, generation u32 */
	SIPC__JR_RESOLVED = 7,    /* instance[16], id u64 */
	SIPC__JR_DELIVERED = 8,   /* id u64: the callback returned */
	SIPC__JR_WORKER = 9,      /* namelen u8, provider name, idlen u16,
	                           * id bytes, instance[16], slot u32,
	                           * generation u32 */
};

struct sipc__journal;

struct sipc__journal_stats {
	uint64_t records_read;    /* valid records read at open */
	uint64_t torn_bytes;      /* bytes of a torn tail cut at open */
	uint64_t corrupt;         /* corrupt records met at open (reading
	                           * stops at the first: 0 or 1) */
	uint64_t corrupt_offset;  /* where the corrupt record began */
	uint64_t corrupt_bytes;   /* bytes cut from the corrupt record on */
	char corrupt_copy[40];    /* name of the copy kept ("" if none) */
	uint64_t orphans;         /* valid records about unknown requests */
	uint64_t appended;        /* records appended by this instance */
	uint64_t syncs;           /* fdatasync/fsync calls on the journal */
	uint64_t compactions;
	uint64_t file_size;       /* current journal size in bytes */
	int last_error;           /* last compaction error (0 if none) */
	int broken;               /* the error that broke it, 0 if healthy */
};

/* FNV-1a 64 of a payload: a digest to match a resubmission against what
 * was journalled, not a security hash.  Pure. */
uint64_t sipc__payload_digest(const void *payload, size_t len);

/*
 * Open the state directory `dir` (created 0700 if missing; its parent
 * must exist) for a new instance: take the instance lock (SIPC_E_LOCKED
 * when another live instance holds it; errbuf names its pid), read the
 * previous journal, cut a torn tail (truncate at the last good record,
 * fsync), stop at a corrupt record (see below), generate a fresh instance
 * id and append its INSTANCE record (synced).
 *
 * A torn tail is what an interrupted append leaves at the end: a last
 * record that runs past the end of the file or fails its checksum, or
 * zeros.  A corrupt record is a bad one that is not a torn tail: bad
 * magic, checksum, length or content with other bytes after it, or any
 * bad or unfinished record followed somewhere by a valid one (so a
 * damaged length field near the end is told apart from a torn tail).  It
 * ends the reading: records before it are kept, the record and
 * everything after it are not trusted (framing after a bad record cannot
 * be trusted either), a copy of the whole file is kept as a new
 * journal.corrupt.<epoch ms> (stats.corrupt_copy; the open fails with
 * -errno if the copy cannot be written, rather than destroy the
 * evidence), the journal is truncated there, and stats.corrupt counts
 * it.  The open succeeds so the service can start; the host should alert
 * on it (the supervisor logs it at ERROR).  Requests whose only records
 * lay after the corruption are missing from reconciliation.
 *
 * group_commit_ms is used in GROUP mode (0 means 10).  `errbuf` (may be
 * NULL) gets a reason on failure.  Returns 0, SIPC_E_LOCKED,
 * SIPC_E_JOURNAL (unreadable), or -errno.
 */
int sipc__journal_open(const char *dir, enum sipc_durability mode,
    unsigned group_commit_ms, struct sipc__journal **ret, char *errbuf,
    size_t errlen);

/*
 * Compact (drops what this instance settled), sync, close, and release
 * the lock (removing sipc.pid).  Accepts NULL.  No other call may run
 * concurrently or after.
 */
void sipc__journal_close(struct sipc__journal *j);

/* This instance's id. */
void sipc__journal_instance(struct sipc__journal *j, uint8_t ret[16]);

/* A compaction is due when the file exceeds max(bytes, 2 x size after
 * the last compaction); an append only notes it, and the next
 * sipc__journal_tick() compacts (open and close compact at once).
 * Default SIPC__JOURNAL_COMPACT_DEFAULT. */
void sipc__journal_set_compact_threshold(struct sipc__journal *j,
    uint64_t bytes);

/*
 * Appends for this instance's requests.  Each returns 0 once the record
 * is written (and, in EACH mode, synced), or: -EINVAL (key over 255
 * bytes), -EEXIST (id already accepted), SIPC_E_NOTFOUND (id unknown or
 * already settled), -errno from write/fdatasync (after a failed write the
 * file is cut back to its previous length), or the error that broke the
 * journal earlier: any failed write or sync breaks it (see Broken above).
 *   accepted:  before the request may be written to a worker.  `key` may
 *              be NULL (empty).  The payload is only digested.  On an
 *              error the request MUST NOT be sent.
 *   written:   before the request's bytes go to a worker (so "not
 *              written" in the journal proves "never sent").  On an
 *              error the request MUST NOT be sent.  May repeat (a retry
 *              on another worker); the last one counts.
 *   completed: when the outcome is known, before the callback runs.
 *   delivered: after the completion callback returned; appends a
 *              DELIVERED record that is never synced on its own.  Only
 *              completed AND delivered requests are dropped by
 *              compaction, so after a crash every request whose callback
 *              had not returned is still listed.
 */
int sipc__journal_accepted(struct sipc__journal *j, uint64_t id,
    const char *key, const void *payload, size_t len, int64_t deadline_ms);
int sipc__journal_written(struct sipc__journal *j, uint64_t id,
    uint32_t slot, uint32_t generation, pid_t pid);
int sipc__journal_completed(struct sipc__journal *j, uint64_t id,
    enum sipc_outcome outcome, int error);
void sipc__journal_delivered(struct sipc__journal *j, uint64_t id);

/*
 * Ownership records of this instance's workers.  worker: after launch,
 * with the provider's name and the identity it returned (w->instance is
 * ignored: this instance's id is recorded).  worker_gone: after the worker was reaped
 * and its group swept.  SIPC_E_NOTFOUND for an unknown slot/generation.
 */
int sipc__journal_worker(struct sipc__journal *j, const struct sipc__jowner *w);
int sipc__journal_worker_gone(struct sipc__journal *j, uint32_t slot,
    uint32_t generation);

/*
 * Reconciliation of previous instances.
 *   unresolved: the previous instances' requests without a RESOLVED
 *     record, sorted by (instance age, id); *ret is malloc'd (free()),
 *     NULL when n == 0.  COMPLETED ones are listed too: the host may not
 *     have learnt (or persisted) their outcome before the crash.
 *   resolve: append RESOLVED (durable per mode) and forget the request.
 *     SIPC_E_NOTFOUND when it is not an unresolved request of a previous
 *     instance (already resolved, or never existed): a host that resolves
 *     again after a crash during reconciliation may treat it as done.
 *   leftover_workers: WORKER records of previous instances without
 *     WORKER_GONE; *ret malloc'd (free()), NULL when n == 0.
 *   leftover_gone: after a leftover was terminated or proven gone (the
 *     identity not proven: its provider's leftover op returned 1 or 0).
 */
int sipc__journal_unresolved(struct sipc__journal *j,
    struct sipc_unresolved **ret, size_t *ret_n);
int sipc__journal_resolve(struct sipc__journal *j, const uint8_t instance[16],
    uint64_t id);
int sipc__journal_leftover_workers(struct sipc__journal *j,
    struct sipc__jowner **ret, size_t *ret_n);
int sipc__journal_leftover_gone(struct sipc__journal *j,
    const struct sipc__jowner *w);

/*
 * Call periodically (the reaper's timer) with a monotonic clock in ms.
 * First compacts if a compaction is due: it writes and syncs the new file
 * without holding the journal's mutex, so appends on other threads go on
 * meanwhile (what they append is carried over before the swap).  Then, in
 * GROUP mode, fdatasyncs when records are unsynced and group_commit_ms
 * passed since the last sync.  Returns 1 when it synced, 0 when not,
 * -errno on a sync failure (a failed compaction shows in the stats).
 */
int sipc__journal_tick(struct sipc__journal *j, int64_t now_ms);

/* Tests only: when set, a compaction calls it with no lock held once the
 * new file holds the image of memory, before the records appended
 * meanwhile are carried over.  NULL in the library's own use. */
extern void (*sipc__journal_compact_hook)(struct sipc__journal *j);

/* The error that broke the journal (see "Broken" above), 0 while it is
 * healthy.  When it is broken, *ret_first (may be NULL) is true for
 * exactly one call, so that the break is reported once. */
int sipc__journal_broken(struct sipc__journal *j, bool *ret_first);

/* Sync everything appended so far, whatever the mode. */
int sipc__journal_sync(struct sipc__journal *j);

/*
 * Before the frames whose WRITTEN records were appended go to a worker:
 * in GROUP mode, sync everything appended so far (concurrent callers
 * share one fdatasync, so a writer's batch, and the batches of every
 * writer meanwhile, cost one sync); in EACH mode the appends synced
 * already; in OFF mode nothing is synced (the next instance after a
 * reboot lists such an instance's unwritten requests MAY_HAVE_RUN, see
 * sipc__js_unresolved()).  0, or the error that broke the journal: the
 * frames MUST NOT be sent.
 */
int sipc__journal_written_durable(struct sipc__journal *j);

void sipc__journal_get_stats(struct sipc__journal *j,
    struct sipc__journal_stats *ret);

#endif

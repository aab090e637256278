/*
 * journal/journal.h - what src/journal/ exports: the journal: its record codec, its state in memory, the state directory, reading back, appends.
 */
#ifndef SIPC_SRC_JOURNAL_H
#define SIPC_SRC_JOURNAL_H

#include "os/os.h"

struct sipc_supervisor;
struct sipc__slot;
struct sipc__req;
struct sipc__table;
struct sipc__event;
struct sipc__callread;
struct sipc__wbatch;
struct sipc__diag;
struct sipc__usage;
struct sipc__journal;
struct sipc__rx;
struct sipc_provider_ops;
struct sipc_provider_chan;

/* ---- jrec */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sipc_provider.h"

#define SIPC__JREC_HDR 9   /* magic u32, length u32, type u8 */
#define SIPC__JREC_MAX_PAYLOAD 512u
#define SIPC__JREC_MAX (SIPC__JREC_HDR + SIPC__JREC_MAX_PAYLOAD + 4)
#define SIPC__JREC_MAGIC 0x4A504953u  /* "SIPJ" little-endian */

/* INSTANCE flags: what the instance's records promise across a power
 * loss.  SENT_DURABLE: no frame went to a worker before its WRITTEN
 * record was synced (durability group and each). */
#define SIPC__JINST_SENT_DURABLE 0x01u

struct sipc__jinstance {
	uint8_t instance[16];
	char boot_id[SIPC__BOOT_ID_LEN + 1];
	pid_t pid;
	int64_t time_ms;           /* wall clock, epoch ms */
	uint8_t flags;             /* SIPC__JINST_*; absent (0) in the
	                            * records of earlier versions */
};

struct sipc__jaccepted {
	uint64_t id;
	uint8_t keylen;
	char key[256];             /* keylen bytes (NUL-terminated on decode) */
	uint64_t digest;
	uint32_t len;
	int64_t deadline;          /* wall clock, epoch ms; 0 = none */
};

struct sipc__jwritten {
	uint64_t id;
	uint32_t slot, generation;
	pid_t pid;
};

struct sipc__jcompleted {
	uint64_t id;
	uint8_t outcome;
	int32_t error;
};

/* A worker's ownership record: the provider that launched it and the
 * identity that provider can prove later (opaque here). */
struct sipc__jowner {
	char provider[SIPC_PROVIDER_NAME_MAX + 1];
	struct sipc_provider_id id;
	uint8_t instance[16];      /* supervisor instance that launched it */
	uint32_t slot, generation;
};

/* A version 1 WORKER record (SIPC__JR_WORKER_V1) began with these bytes:
 * pid u32, pgid u32, starttime u64, boot_id[36].  They are, by design,
 * the local provider's identity (os/os.h), so the decoder turns
 * such a record into a "local" owner record without knowing the
 * fields. */
#define SIPC__JREC_V1_ID_LEN 52

struct sipc__jgone {
	uint8_t instance[16];
	uint32_t slot, generation;
};

struct sipc__jresolved {
	uint8_t instance[16];
	uint64_t id;
};

struct sipc__jrec {
	uint8_t type;              /* enum sipc__jrec_type (journal/journal.h) */
	union {
		struct sipc__jinstance inst;
		struct sipc__jaccepted acc;
		struct sipc__jwritten wr;
		struct sipc__jcompleted done;
		struct sipc__jowner worker;
		struct sipc__jgone gone;
		struct sipc__jresolved resolved;
		uint64_t delivered_id;
	} u;
};

/* Encode `rec` into buf (cap >= SIPC__JREC_MAX always suffices).  Returns
 * 0 and the record length, or -EINVAL for an unknown type (the version 1
 * WORKER record is read, never written) or an owner record whose name or
 * identity does not fit. */
int sipc__jrec_encode(const struct sipc__jrec *rec, uint8_t *buf, size_t cap,
    size_t *ret_len);

/*
 * Decode the record at the start of buf[0..len).  Returns 0 with *ret and
 * *ret_used (its length in bytes); -EAGAIN when the bytes end before the
 * record does (a torn tail if this is the end of the file); -EBADMSG for
 * a bad record (magic, length, checksum, type, or payload that does not
 * parse exactly).  A version 1 WORKER record decodes as a WORKER record
 * of provider "local".  On -EBADMSG *ret_extent is the record's length when
 * its framing (magic, length) was sound and its bytes are all present,
 * else 0; on success it equals *ret_used.
 */
int sipc__jrec_decode(const uint8_t *buf, size_t len, struct sipc__jrec *ret,
    size_t *ret_used, size_t *ret_extent);

/* ---- jstate */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sipc.h"

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
	uint8_t flags;            /* SIPC__JINST_* (journal/journal.h) */
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
/* Previous instances' requests as reconcile entries (see journal/journal.h). */
int sipc__js_unresolved(struct sipc__jstate *s, struct sipc_unresolved **ret,
    size_t *ret_n);
void sipc__js_free(struct sipc__jstate *s);

/* ---- jdir */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Create `dir` (0700) if missing, syncing its parent when it was
 * created, and open it (O_DIRECTORY, close-on-exec) in *ret_dirfd.
 * Returns 0 or -errno, with a reason in errbuf. */
int sipc__jdir_open(const char *dir, int *ret_dirfd, char *errbuf,
    size_t errlen);

/* Take the instance lock `dir`/sipc.pid (opened close-on-exec, a POSIX
 * record lock owned by this process, holder pid written).  SIPC_E_LOCKED
 * names the holder in errbuf, this process included. */
int sipc__jdir_lock(const char *dir, int *ret_fd, char *errbuf,
    size_t errlen);

/* Remove sipc.pid (through dirfd when >= 0, else by `dir`), then close
 * the lock descriptor `fd`.  Accepts fd < 0. */
void sipc__jdir_unlock(int dirfd, const char *dir, int fd);

/* Save `buf` as a new journal.corrupt.<epoch ms> in the directory (a
 * name no earlier copy has), synced; its name in ret_name.  0 or
 * -errno. */
int sipc__jdir_save_corrupt(int dirfd, const uint8_t *buf, size_t len,
    char *ret_name, size_t namelen);

/* write() all of buf, retrying on EINTR and short writes.  0 or -errno.
 * Every write of the journal and its directory goes through it. */
int sipc__jdir_write_all(int fd, const void *buf, size_t len);

/* fdatasync() (data_only) or fsync() fd: 0 or -errno.  Every sync of the
 * journal, its copies and its directory goes through it. */
int sipc__jdir_sync(int fd, bool data_only);

/*
 * Tests only (a power-cut harness): when set, `wrote` is called after
 * sipc__jdir_write_all() wrote all of buf to fd, and `syncing` right
 * before sipc__jdir_sync() syncs fd (what fd holds then is what the sync
 * makes durable), on the thread that writes or syncs, with whatever
 * journal lock it holds (a hook must not call the library).  NULL in
 * the library's own use, where it costs one load and a branch.  Set it
 * while no journal is open.
 */
struct sipc__jio_hook {
	void (*wrote)(int fd, const void *buf, size_t len);
	void (*syncing)(int fd, bool data_only);
};
extern const struct sipc__jio_hook *sipc__jio_hook;

/* ---- journal */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>


#define SIPC__JOURNAL_KEY_MAX 255u
#define SIPC__JOURNAL_COMPACT_DEFAULT (4u << 20)

enum sipc__jrec_type {
	SIPC__JR_INSTANCE = 1,    /* instance[16] boot_id[36] pid u32 time i64
	                           * flags u8 (SIPC__JINST_*, journal/journal.h; records
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

/* ---- jread */
#include <stddef.h>
#include <stdint.h>


/*
 * Read the journal open on `fd` (directory `dirfd`), apply every good
 * record to `s`, count what was read and cut in `st`, keep a copy of a
 * corrupt journal, cut the file after the good prefix (fsync) and return
 * its length in *ret_size.  0, SIPC_E_JOURNAL (over 1 GiB, short read),
 * -ENOMEM or -errno, with a reason in errbuf.
 */
int sipc__jread_load(int fd, int dirfd, struct sipc__jstate *s,
    struct sipc__journal_stats *st, uint64_t *ret_size, char *errbuf,
    size_t errlen);

#endif /* SIPC_SRC_JOURNAL_H */

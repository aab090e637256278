/*
 * request/request.h - what src/request/ exports: requests and the correlation table, rings, the restart and settle policy, outcomes and their journal notes.
 */
#ifndef SIPC_SRC_REQUEST_H
#define SIPC_SRC_REQUEST_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include "sipc.h"
#include "base/base.h"
#include "wire/wire.h"

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

/* ---- ring */
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

struct sipc__req;

struct sipc__ring_item {
	struct sipc__req *q;
	size_t len;
};

struct sipc__ring {
	struct sipc__ring_item *items;
	unsigned cap, head;
	/* Written under the owner's lock; atomic so that dispatch may read
	 * a ring's fill level without taking that lock (a hint it checks
	 * again under the lock). */
	_Atomic unsigned count;
	_Atomic size_t bytes;
	size_t max_bytes;
	/* Returned requests, popped first, oldest first; counted in
	 * `count` and `bytes` */
	struct sipc__ring_item *back;
	unsigned nback, back_head, back_cap;
};

int sipc__ring_init(struct sipc__ring *r, unsigned cap, size_t max_bytes);
void sipc__ring_fini(struct sipc__ring *r);
/* Would a frame of `len` payload bytes fit now?  An empty ring takes any
 * frame (validation guarantees max_bytes >= one maximal frame).  May be
 * called without the lock as a hint. */
bool sipc__ring_fits(const struct sipc__ring *r, size_t len);
/* Append; -EAGAIN when it does not fit. */
int sipc__ring_push(struct sipc__ring *r, struct sipc__req *q, size_t len);
/* Make room for one more returned request: 0, or -ENOMEM. */
int sipc__ring_back_reserve(struct sipc__ring *r);
/* Put back an accepted request ahead of the array's, whatever the fill;
 * -ENOMEM only when the list cannot grow (never after a reserve). */
int sipc__ring_return(struct sipc__ring *r, struct sipc__req *q, size_t len);
/* Remove the oldest; NULL when empty. */
struct sipc__req *sipc__ring_pop(struct sipc__ring *r);
/* Remove a given entry (order kept); false if absent. */
bool sipc__ring_remove(struct sipc__ring *r, struct sipc__req *q);

/* ---- policy */
#include <stdbool.h>
#include <stdint.h>


/* Upper bounds enforced by configuration validation; they size the
 * timestamp rings below, so the state is a fixed-size value. */
#define SIPC__RESTART_INTENSITY_MAX 100
#define SIPC__POOL_BUDGET_MAX 1000

/* Fixed-capacity ring of timestamps in chronological order. */
struct sipc__times {
	unsigned head;            /* index of the oldest entry */
	unsigned n;               /* entries in use */
	unsigned cap;             /* effective capacity (<= array size) */
};

/* Per-slot restart state. */
struct sipc__restart {
	unsigned base_ms, cap_ms, reset_ms, intensity, window_ms, cooldown_ms;
	unsigned exponent;        /* next ceiling = min(cap, base * 2^exponent) */
	uint64_t restarts;        /* planned restarts (not cooldowns), total */
	uint64_t cooldowns;       /* times the intensity limit was hit */
	struct sipc__times ring;  /* decision times of recent restarts */
	int64_t t[SIPC__RESTART_INTENSITY_MAX];
};

/* Pool-wide budget: restarts of all slots within the window. */
struct sipc__pool_budget {
	unsigned budget, window_ms;
	struct sipc__times ring;
	int64_t t[SIPC__POOL_BUDGET_MAX];
};

/* Copy the restart settings of `cfg` (clamped to the bounds above, so an
 * unvalidated config cannot overflow the rings) and clear the history. */
void sipc__restart_init(struct sipc__restart *r, const struct sipc_config *cfg);
void sipc__pool_budget_init(struct sipc__pool_budget *pool,
                            const struct sipc_config *cfg);

/*
 * Plan the respawn of a slot whose worker ended and should be restarted.
 * `now_ms` is the current time, `uptime_ms` how long the ended worker ran,
 * `failed_before_ready` whether it ended before completing the handshake
 * (exec failure, crash at start-up, handshake timeout).
 *
 * Returns the delay in ms before the respawn:
 *   - Intensity: if this restart would be the (R+1)-th of this slot
 *     within the last restart_window_ms, or the (B+1)-th of the pool
 *     (B = pool_restart_budget), *ret_cooldown is set to true and
 *     cooldown_ms is returned.  The slot should refuse work meanwhile
 *     (callers get SIPC_E_UNAVAILABLE).  A cooldown is not recorded as a
 *     restart, so once the window has slid past the old restarts, restarts
 *     are allowed again.
 *   - Otherwise *ret_cooldown is set to false, the restart is recorded
 *     against the slot and the pool, and the delay is drawn with full
 *     jitter: uniform in [0, ceiling], ceiling = min(cap, base * 2^n),
 *     n counting restarts since the last reset.  n resets to 0 when the
 *     ended worker had been ready and ran for at least restart_reset_ms.
 *   - A start-up failure counts against the same limits and its delay is
 *     uniform in [base, ceiling]: never 0, never a tight loop.
 */
int64_t sipc__restart_plan(struct sipc__restart *r,
                           struct sipc__pool_budget *pool, int64_t now_ms,
                           int64_t uptime_ms, bool failed_before_ready,
                           bool *ret_cooldown);

/* Restarts of this slot recorded within the window ending at now_ms. */
unsigned sipc__restart_recent(const struct sipc__restart *r, int64_t now_ms);

/*
 * What to do with a request whose worker ended (or which must be settled
 * otherwise) before a reply arrived.
 *
 *   REQUEUE  it provably never started: queue it for another worker.
 *   RETRY    it may have run, but the caller marked it idempotent and the
 *            retry budget allows another attempt: write it again.
 *   UNKNOWN  it may have run: report SIPC_OUTCOME_UNKNOWN.
 *   POISON   it was in flight on two workers that died: report UNKNOWN
 *            with SIPC_E_POISON and never send it again.
 *   TIMEOUT  its deadline has passed: report SIPC_OUTCOME_TIMEOUT.
 */
enum sipc__settle {
	SIPC__SETTLE_REQUEUE,
	SIPC__SETTLE_RETRY,
	SIPC__SETTLE_UNKNOWN,
	SIPC__SETTLE_POISON,
	SIPC__SETTLE_TIMEOUT,
};

/*
 * Rules, in this order ("deadline passed" means deadline_ms != 0 and
 * now_ms >= deadline_ms):
 *   1. not written, or written but proven not started (the worker
 *      announced ACCEPT support and sent no ACCEPT for it):
 *      deadline passed -> TIMEOUT, else REQUEUE.
 *   2. written and ambiguous, workers_died_with_it >= 2 (counting the
 *      death being settled now) -> POISON (even past the deadline: the
 *      request is dangerous, the caller must know).
 *   3. deadline passed -> TIMEOUT.
 *   4. idempotent and attempts <= retries_allowed -> RETRY
 *      (attempts = times written so far, so retries_allowed extra
 *      attempts are made after the first).
 *   5. otherwise -> UNKNOWN.
 */
enum sipc__settle sipc__settle_decide(bool written,
                                      bool accepted_proven_not_started,
                                      bool idempotent, unsigned attempts,
                                      unsigned retries_allowed,
                                      unsigned workers_died_with_it,
                                      int64_t now_ms, int64_t deadline_ms);

const char *sipc__settle_name(enum sipc__settle s);

/* ---- from the former pool/pool.h */

/* Where a request is.  One explicit state; `delivered` is separate
 * because a timed-out request stays on its worker until it answers. */
enum sipc__rstate {
	SIPC__R_QUEUED = 0,   /* in a slot's ring, never written */
	SIPC__R_WRITTEN,      /* taken by a writer: bytes may be on the wire */
	SIPC__R_ACCEPTED,     /* worker said it is starting the handler */
	SIPC__R_GONE,         /* answered or settled; not on any worker */
};

struct sipc__req {
	uint64_t id;                  /* [const] */
	atomic_int refs;
	uint8_t *payload;             /* the bytes: `buf`, the request's
	                               * own block, or while `borrowed`
	                               * the calling thread's */
	uint32_t len;                 /* [const] */
	uint8_t *buf;                 /* [const] a large payload's own
	                               * block (table.c), freed at last
	                               * unref; NULL: in the request's */
	size_t cap;                   /* [const] buf's size */
	/* A large sipc_call() payload is borrowed (payload is not buf):
	 * read where the caller holds it while only the calling thread
	 * reads it (the direct path); before anything else may (a ring, a
	 * writer finishing the frame), sipc__req_own() copies it into
	 * `buf`: on the calling thread, or under the table lock while the
	 * request is not delivered (the caller still waits). */
	unsigned flags;               /* [const] SIPC_REQ_* */
	/* SIPC_REQ_FD: the document, a read-only duplicate of the host's,
	 * closed at the last unref whatever the outcome; payload then
	 * holds its length (8 bytes, the frame's).  -1 otherwise. */
	int fd;                       /* [const] */
	char *key;                    /* [const] idempotency key or NULL */
	bool call;                    /* [const] from sipc_call(): its
	                               * thread waits for the outcome */
	/* A lent payload (SIPC_REQ_LEND on a submit) stays the caller's
	 * memory until the callback begins.  `senders` counts the holders
	 * that may still write its frame (the ring's reference, wherever
	 * it has gone: ring, writer batch, rest, hand-off, direct send);
	 * an outcome that comes while one does waits in `late` until the
	 * last lets go (outcome.c). */
	struct sipc__late *late;      /* [const] NULL: not lent */
	atomic_uint senders;
	int64_t deadline_ms;          /* [const] monotonic; 0 = none */
	int64_t queue_deadline_ms;    /* [const] queue budget's end; 0 = none */
	int64_t submit_ns;            /* [const] monotonic */
	sipc_done_fn done;            /* [const] */
	void *done_arg;               /* [const] */
	/* [table] */
	enum sipc__rstate state;
	bool delivered;               /* outcome handed to the caller */
	bool in_table;
	int slot;                     /* ring it sits in / worker it is on */
	uint32_t gen;                 /* generation it was written to */
	pid_t pid;
	unsigned attempts;            /* times written */
	int64_t written_ns;           /* first write; 0 = never written */
	unsigned deaths;              /* workers that died with it in flight */
	bool fd_counted;              /* counted in its worker's
	                               * fds_inflight; a request with a
	                               * descriptor taken while it is not
	                               * is refused, never sent (writer.c) */
	bool unstarted;               /* settle: provably never started */
	uint64_t pos;                 /* its REQUEST frame's place on the
	                               * channel of `gen`, from 1 (the
	                               * start counter's unit, A5); 0 until
	                               * the frame is committed.  Written
	                               * under the slot lock by the channel's
	                               * holder (writer.c), read by settle
	                               * after the channel is released */
	int64_t cancel_at_ms;         /* CANCEL queued at; 0 = not cancelled */
	/* Per-request figures (figures.c): written while nothing else was
	 * in flight on its worker, and the slot's fig_writes after its
	 * write (another write since: not alone); at its reply, what was
	 * measured (SIPC_FIG_* bits in `figures`). */
	bool fig_alone;
	uint64_t fig_seq;
	unsigned figures;
	uint64_t fig_cpu_us, fig_peak_kb;
	struct sipc_exit last_exit;
	struct sipc__req *hnext;      /* table bucket chain */
};

/* A lent request's outcome, kept until no library thread may write its
 * payload (outcome.c).  state: LATE_NONE, then LATE_WAIT once stored;
 * whoever moves it to LATE_TAKEN delivers it. */
enum { SIPC__LATE_NONE = 0, SIPC__LATE_WAIT, SIPC__LATE_TAKEN };
struct sipc__late {
	struct sipc_result res;
	size_t held;                  /* the reply's mem_ceiling bytes,
	                               * released after the callback */
	atomic_int state;
	struct sipc__req *next;       /* on the supervisor's late stack */
};

#define SIPC__EXIT_KINDS (SIPC_EXIT_LIMIT + 1)
#define SIPC__HIST_BUCKETS 9            /* metrics.c: 8 bounds and +Inf */
/* The bucket of a duration in us, and the buckets' bounds (outcome.c). */
unsigned sipc__hist_bucket(uint64_t us);
extern const uint64_t sipc__hist_bound_us[SIPC__HIST_BUCKETS - 1];

/*
 * Large request payload buffers kept for reuse (table.c).  The copy a
 * submit makes of a large payload went into memory malloc had just
 * given back to the kernel (a freed 1 MiB block above the arena's trim
 * threshold), so every submit faulted it in again: a single thread
 * submitting 1 MiB requests ran at a seventh of its speed.  Buffers of
 * at least SIPC__PAYC_MIN bytes are kept when freed, up to
 * SIPC__PAYC_SLOTS of them and a quarter of mem_ceiling or
 * SIPC__PAYC_BYTES, whichever is less; a submit takes one at most half
 * again as large as its payload.  Freed at destroy.
 */
#define SIPC__PAYC_MIN (64u * 1024)
#define SIPC__PAYC_SLOTS 8
#define SIPC__PAYC_BYTES (8u * 1024 * 1024)
/*
 * Mid-size payloads (SIPC__MIDC_MIN to SIPC__MIDC_MAX) were copied
 * into the request's own block, which the submitting thread allocates
 * and a reader or writer thread frees: bursts of those blocks went back
 * to the kernel at the arena's top and faulted in again (4 KiB, one
 * submitter, 256 outstanding: 0.1 page faults a request, in malloc).
 * They now get a buffer of their power-of-two class, kept when freed:
 * up to SIPC__MIDC_SLOTS a class, under the same byte bound.
 */
#define SIPC__MIDC_MIN 1024u
#define SIPC__MIDC_CLASSES 6          /* 1, 2, 4, 8, 16, 32 KiB */
#define SIPC__MIDC_MAX (SIPC__MIDC_MIN << (SIPC__MIDC_CLASSES - 1))
#define SIPC__MIDC_SLOTS 256
struct sipc__payc {
	pthread_mutex_t lock;
	void *buf[SIPC__PAYC_SLOTS];
	size_t cap[SIPC__PAYC_SLOTS];
	unsigned n;
	void *mid[SIPC__MIDC_CLASSES][SIPC__MIDC_SLOTS];
	unsigned nmid[SIPC__MIDC_CLASSES];
	size_t bytes, max_bytes;
	atomic_uint_fast64_t reused;  /* buffers taken from here */
};

struct sipc__table {
	struct sipc__payc payc;       /* its own lock */
	pthread_mutex_t lock;
	pthread_cond_t cv;            /* pending/mem changes (drain, memory) */
	struct sipc__req **buckets;   /* [table] */
	size_t nbuckets, count;       /* count = entries in the table */
	unsigned pending;             /* not yet delivered */
	/* Payload bytes held: live requests, and reply (any received
	 * frame's) buffers from before their allocation until delivered or
	 * dropped.  Added to only by sipc__mem_try_take() (check and add
	 * are one compare-and-swap against a limit); releases subtract.
	 * The lock serves the waits: waiters are counted so that a release
	 * takes it only when someone waits (a missed wake-up costs a waiter
	 * at most one SIPC__WAIT_SLICE_MS). */
	_Atomic size_t mem_held;
	atomic_uint mem_waiters;
	unsigned reply_waiters;       /* [table] readers waiting for room:
	                               * replies go first, submits wait */
};

/* requests (table.c) */
struct sipc__req *sipc__req_new(struct sipc_supervisor *s,
                                const struct sipc_request *r, uint64_t id,
                                sipc_done_fn done, void *arg, bool call);
/* Copy a borrowed payload into the request's own block (no-op when not
 * borrowed).  The calling thread of the call, or under the table lock
 * with the request not delivered. */
void sipc__req_own(struct sipc__req *q);
static inline bool
sipc__req_borrowed(const struct sipc__req *q)
{
	return q->buf != NULL && q->payload != q->buf;
}
void sipc__req_ref(struct sipc__req *q);
void sipc__req_unref(struct sipc_supervisor *s, struct sipc__req *q);
/* Free a request that was never admitted (its bytes were never taken
 * from mem_ceiling). */
void sipc__req_discard(struct sipc_supervisor *s, struct sipc__req *q);

/*
 * The memory ceiling (table.c).  Requests are admitted only while
 * sipc__mem_reply_reserve() bytes stay free for replies, so a reader
 * can always get room for one maximal reply once the replies being read
 * or delivered are done.
 *
 * sipc__mem_take_reply(): a reader takes `len` bytes for a received
 * frame's payload; while they do not fit it waits (if `wait`), and
 * submits take no memory meanwhile.  Every SIPC__WAIT_SLICE_MS it asks
 * `leave(arg)`, with no library lock held, whether to give up.  True
 * when taken.  No lock held on entry.
 * sipc__mem_release(): any thread, no lock.
 */
#define SIPC__WAIT_SLICE_MS 20
size_t sipc__mem_reply_reserve(const struct sipc_supervisor *s);
/* Add `len` to the bytes held if the sum stays <= `limit`; any thread,
 * no lock needed.  True when added. */
bool sipc__mem_try_take(struct sipc_supervisor *s, size_t len, size_t limit);
bool sipc__mem_take_reply(struct sipc_supervisor *s, size_t len, bool wait,
                          bool (*leave)(void *), void *arg);
void sipc__mem_release(struct sipc_supervisor *s, size_t n);

/* hint: requests expected at once; payc_bytes: the payload cache's
 * bound (mem_ceiling / 4, at most SIPC__PAYC_BYTES). */
int sipc__table_init(struct sipc__table *t, unsigned hint,
                     size_t payc_bytes);
void sipc__table_fini(struct sipc__table *t);
/* [table] held */
void sipc__table_insert(struct sipc__table *t, struct sipc__req *q);
struct sipc__req *sipc__table_find(struct sipc__table *t, uint64_t id);
void sipc__table_remove(struct sipc__table *t, struct sipc__req *q);
/* Iterate: fn may not remove entries; collect first. */
void sipc__table_foreach(struct sipc__table *t,
                         void (*fn)(struct sipc__req *, void *), void *arg);

/*
 * Outcome delivery.  sipc__outcome_set() is called with the table lock
 * held: it marks the request delivered, drops it from `pending`, and
 * fills `res`.  The caller then drops the lock and calls
 * sipc__outcome_deliver(), which runs the callback with no lock held.
 * Returns false if the request was already delivered.
 */
bool sipc__outcome_set(struct sipc_supervisor *s, struct sipc__req *q,
                       enum sipc_outcome o, int err, bool may_have_run,
                       struct sipc_result *res);
void sipc__outcome_deliver(struct sipc_supervisor *s, struct sipc__req *q,
                           struct sipc_result *res);
/* The same for a reply whose payload holds `held` bytes of mem_ceiling:
 * they are released once the callback has returned, however long the
 * outcome waits for it (a lent request's, below). */
void sipc__outcome_deliver_held(struct sipc_supervisor *s, struct sipc__req *q,
                                struct sipc_result *res, size_t held);
/* The ring's reference: held by whoever may still write the request's
 * frame (ring, write batch, rest, hand-off, a direct send).  Dropping a
 * lent request's last one hands an outcome that waited for it to the
 * reaper. */
void sipc__req_send_ref(struct sipc__req *q);
void sipc__req_send_unref(struct sipc_supervisor *s, struct sipc__req *q);
/* The reaper: deliver what waited (any thread with no lock held, under a
 * callback's rules; sipc_destroy's reaper after the last worker thread
 * has ended). */
void sipc__late_run(struct sipc_supervisor *s);
/* Convenience: lock, set, unlock, deliver.  Takes ownership of `reply`
 * (malloc'd or NULL) whether or not it wins. */
/* `q`, taken by the writer for `sl`, could not be journalled as written:
 * undo the take and give it REJECTED (UNKNOWN if an earlier worker may
 * have run it) / SIPC_E_JOURNAL, unless it was settled meanwhile. */
void sipc__outcome_unsend(struct sipc_supervisor *s, struct sipc__slot *sl,
                          struct sipc__req *q, int err);
void sipc__outcome(struct sipc_supervisor *s, struct sipc__req *q,
                   enum sipc_outcome o, int err, bool may_have_run,
                   uint8_t *reply, size_t reply_len, uint32_t wcode);

/* journal glue (request/notes.c); no-ops without a state directory */
/* Writer thread or a direct sender (under callback rules), no lock held,
 * s->journal set: journal that `q` is being written to `sl`'s worker.
 * 0: send it.  SIPC_E_JOURNAL: do NOT send it, and give it its outcome
 * with sipc__outcome_unsend() (the ring's reference stays yours). */
int sipc__journal_note_written(struct sipc_supervisor *s, struct sipc__slot *sl,
                               struct sipc__req *q);
/* After the WRITTEN records of the frames about to be sent, before any
 * of their bytes go out: their records are durable as far as the mode
 * promises for a power loss (journal/journal.h, sipc__journal_written_durable()).
 * 0: send them.  SIPC_E_JOURNAL: send none of them (unsend each). */
int sipc__journal_note_sent_durable(struct sipc_supervisor *s);
void sipc__journal_note_done(struct sipc_supervisor *s, struct sipc__req *q,
                             const struct sipc_result *res);
void sipc__journal_note_worker(struct sipc_supervisor *s, struct sipc__slot *sl,
                               const struct sipc_provider_chan *ch);
void sipc__journal_note_worker_gone(struct sipc_supervisor *s,
                                    struct sipc__slot *sl);
void sipc__journal_note_tick(struct sipc_supervisor *s, int64_t now);
void sipc__journal_note_delivered(struct sipc_supervisor *s, struct sipc__req *q);
/* Submitting thread: 0, or SIPC_E_JOURNAL when the ACCEPTED record could
 * not be appended (the request must then not be sent). */
int sipc__journal_note_accepted(struct sipc_supervisor *s, struct sipc__req *q);
/* Journal fields of the stats (zero without a state directory). */
void sipc__journal_note_stats(struct sipc_supervisor *s, struct sipc_stats *st);
void sipc__journal_note_refused(struct sipc_supervisor *s, struct sipc__req *q);

#endif /* SIPC_SRC_REQUEST_H */

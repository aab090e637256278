/*
 * sipc_int.h - internal types shared by the supervisor modules.
 *
 * Threads:
 *   - callers: sipc_submit/sipc_call/sipc_stats_get/sipc_destroy
 *   - per worker slot: one reader (reader.c), one writer (writer.c);
 *     a submitting thread may write for an idle worker (writer.c), and
 *     a sipc_call() thread then read its own reply (callread.c)
 *   - one reaper (reaper.c, its loop): pidfds + timerfd + eventfd;
 *     spawns, reaps, classifies (slot.c), settles (settle.c), enforces
 *     deadlines, stalls and grace periods.
 *
 * Locks, in the only order they may be nested:
 *   slot->lock  ->  sup->table.lock  ->  (journal lock, leaf)
 * No library lock is held while a completion or log callback runs.
 *
 * Which lock guards what is written next to each field: [slot], [table],
 * [reaper] (only the reaper thread touches it), [const] (set before the
 * threads start), [atomic].
 */
#ifndef SIPC_INT_H
#define SIPC_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "sipc.h"
#include "clock.h"
#include "frame.h"
#include "ring.h"
#include "unix/usage.h"

struct sipc_provider_ops;
struct sipc_provider_chan;
struct sipc__journal;

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

enum sipc__sender {
	SIPC__SEND_NONE = 0,
	SIPC__SEND_WRITER,
	SIPC__SEND_CALLER,
	SIPC__SEND_READER,            /* refilling after replies (writer.c) */
};

enum sipc__rd_owner {
	SIPC__RD_READER = 0,
	SIPC__RD_CALLER,
	/* Nobody: the last caller left the socket out of the reader's
	 * interest set with nothing in flight, undecoded or to send, so
	 * that the next call takes it without two epoll_ctl() calls.  Any
	 * other need gives it back to the reader first (unpark). */
	SIPC__RD_PARKED,
};

struct sipc__rx;
/* The protocol socket's tag in the reader's interest set. */
#define SIPC__RX_PROTO 0u

/*
 * Worker slot.  One per pool position; generations replace each other.
 * Three parts, kept apart by who may touch them (a split into member
 * structs would rename every field use in every module; the groups
 * below are the same split, marked):
 *   - its I/O part, under the slot lock: what the reader, the writer, a
 *     direct sender and the reaper share about the live channel;
 *   - its counters, atomics read without a lock (dispatch, stats);
 *   - its process part, the reaper thread's alone (slot.c, reaper.c).
 * The state is apart: written only by sipc__slot_set_state().
 */
struct sipc__slot {
	struct sipc_supervisor *sup;        /* [const] */
	uint32_t idx;                 /* [const] */
	pthread_mutex_t lock;
	pthread_cond_t cv_writer;     /* ring non-empty / room in flight / stop */
	pthread_cond_t cv_space;      /* ring has room */
	/* [slot] for writes, through sipc__slot_set_state() only; atomic
	 * so dispatch can read it unlocked */
	_Atomic enum sipc_worker_state state;
	/* ---- I/O part: [slot] (generation and pid: written by the reaper,
	 * under the lock, read by the I/O threads and stats) */
	uint32_t generation;
	pid_t pid;                    /* the provider's display_pid */
	/* [reaper] the provider's own child for this generation (its
	 * chan.child_pid, or display_pid when it gave none): what owner
	 * mode must not reap while the handle lives, and the group it
	 * waits for at destroy */
	pid_t child_pid;
	struct sipc__ring ring;
	/* Who is sending on the channel now (nobody else may): the writer,
	 * or a caller writing its own request (writer.c, direct path). */
	enum sipc__sender sending;
	/* Planned recycling: requests written to this generation, and why
	 * it is retiring (enum sipc_recycle_reason, 0 = not); both reset at
	 * each start.  gen_written: slot lock; retiring: atomic, a hint to
	 * dispatch and steal, set once per generation. */
	unsigned gen_written;
	_Atomic int retiring;
	bool recycle_noted;           /* [reaper] retirement acted on */
	int64_t rss_at_ms;            /* [reaper] next max_rss reading */
	/* A warm spare: dispatch and steal give it nothing.  Changed only
	 * by sipc__slot_hand_over() (a spare claimed by compare-exchange). */
	_Atomic bool spare;
	_Atomic uint64_t recycles;
	/* A request a caller could write only in part (or not at all):
	 * the writer sends its bytes from rest_off on before anything
	 * else.  Holds the ring's reference. */
	struct sipc__req *rest;
	size_t rest_off;
	/* A batch the reader could send only in part (writer.c): the
	 * writer sends the rest of it, from handoff_off on, before
	 * anything else.  Holds the ring's references of its requests. */
	struct sipc__wbatch *handoff;
	size_t handoff_off;
	uint64_t *cancels;            /* ids to send CANCEL for */
	unsigned ncancels, cancels_cap;
	bool accepts;                 /* worker sends ACCEPT frames */
	bool deadlines;               /* worker reads REQUEST deadlines
	                               * (HELLO, SIPC_HELLO_F_DEADLINES) */
	bool fds;                     /* worker takes and sends documents
	                               * by descriptor (SIPC_HELLO_F_FDS) */
	/* The worker's start counter (A5), mapped read-only at HELLO by
	 * the reader, read by settle once the worker is gone, unmapped by
	 * the reaper; NULL without one.  npos: REQUEST frames committed to
	 * this generation's channel, counted by the thread that holds the
	 * channel (frame_commit(), writer.c). */
	const _Atomic uint64_t *start_ctr;
	uint64_t npos;
	bool stop;                    /* threads must exit */
	bool proc_gone;               /* reaped: reader drains and exits */
	bool channel_lost;            /* EOF / write error on protocol fd */
	bool violation;               /* protocol violation seen */
	int violation_err;
	bool stream_cut;              /* a violation stopped decoding before
	                               * the end of the stream: unread bytes
	                               * may hold ACCEPTs */
	struct sipc_exit last_exit;
	enum sipc_containment containment; /* what this generation got */
	bool cgroup;                  /* ... in a cgroup of its own */
	unsigned cg_limits;           /* ... with these enum sipc_limit bits */
	int cg_err;                   /* ... or why not (0: none wanted) */
	char *diag_tail;              /* ring of the last diag bytes */
	size_t diag_tail_len, diag_tail_pos;
	/* Who reads the protocol socket (callread.c, "caller reads"): the
	 * reader thread, or a sipc_call() thread waiting for its own
	 * reply on an otherwise idle worker.  Only the owner touches the
	 * decode state `rx` (set by the reader thread while it runs, NULL
	 * otherwise); the reader sets rd_busy before it reads and clears
	 * it after, and the socket is taken only while it is clear. */
	enum sipc__rd_owner rd_owner;
	bool rd_busy;
	bool rd_revoke;               /* the caller must give it back */
	int rd_give_fd;               /* ... told through this eventfd */
	int rd_epfd;                  /* the reader's interest set, where
	                               * an unpark adds the socket back */
	struct sipc__rx *rx;
	pthread_cond_t cv_read;       /* the caller gave the socket back */
	/* ---- counters */
	/* [table] (counts written-unanswered on the current generation) */
	_Atomic unsigned inflight;
	/* Per-request figures (figures.c, with request_figures).
	 * fig_writes [table]: requests written, counted by mark_written().
	 * fig0: the reading before the one request written while nothing
	 * was in flight, taken by the thread that sends it, before its
	 * bytes; fig_id: that request's id, stored (release) once fig0 is
	 * complete; the thread that decodes its reply reads fig0 after
	 * loading fig_id (acquire) and finding that request still owed and
	 * alone (table lock).  The next such request is written only after
	 * that reply left the table, so fig0 has one user at a time.
	 * cg_fd [slot]: the generation's cgroup directory (a copy of the
	 * provider's), -1: none; set by the reaper before the threads
	 * start, closed by it after they are joined. */
	uint64_t fig_writes;
	_Atomic uint64_t fig_id;
	struct sipc__usage fig0;
	int cg_fd;
	/* [table] of those, requests with a descriptor (fd_counted), at
	 * most cfg.max_fds_in_flight */
	unsigned fds_inflight;
	/* [table] The worker's time per reply (dispatch.c): svc_from_ns is
	 * when the current interval began (the write that made the worker
	 * busy, or its last reply); svc_ns the moving mean, 0 = none yet
	 * (atomic: dispatch reads it unlocked). */
	int64_t svc_from_ns;
	_Atomic uint32_t svc_ns;
	/* [atomic] progress, for stall detection and stats */
	_Atomic int64_t last_progress_ms;
	_Atomic uint64_t bytes_in, bytes_out, frames_in, frames_out;
	/* Which path did the work, counted where it is decided (tests read
	 * these: a mechanism shows in them, not in wake-ups, which depend
	 * on scheduling): requests taken to send, by enum sipc__sender;
	 * replies decoded by the reader [0] and by a calling thread [1];
	 * pushes that signalled the writer. */
	_Atomic uint64_t taken_by[4], replies_by[2], push_wakes;
	_Atomic uint64_t completed, violations, restarts;
	/* ---- process part: [reaper] */
	bool deadline_stop;           /* a cancelled request outstayed its
	                               * grace: stop the worker (settle.c) */
	void *handle;                 /* provider handle of the live worker */
	int proto_fd, diag_fd, wake_fd;
	int end_fd;                   /* the provider's (chan.end_fd), -1 */
	pthread_t reader, writer;
	bool threads;
	struct sipc__wbatch *rbatch;  /* the reader's send batch; lives as
	                               * long as the writer (handoff) */
	int64_t started_ms, ready_ms;
	int64_t term_at_ms;           /* TERM sent; KILL at term_at + grace */
	int64_t lost_at_ms;           /* channel loss first seen; 0 = none */
	bool killed;
	enum sipc_term_reason term_reason;
	int64_t respawn_at_ms;        /* IDLE/COOLDOWN: when to spawn */
	int64_t sweep_since_ms;       /* the provider's sweep first said
	                               * "not yet" (1); 0 = it has not */
	void *policy;                 /* struct sipc__restart * */
};

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

struct sipc_supervisor {
	struct sipc_config cfg;       /* [const] deep copy */
	char **argv, **envp;          /* [const] owned */
	void *cfg_strings;            /* [const] owned copies */
	const struct sipc_provider_ops *prov; /* [const] */
	void *prov_state;             /* [const] its create()'s state */
	struct sipc__table table;
	struct sipc__slot *slots;     /* [const] array */
	unsigned nslots;
	_Atomic uint64_t next_id;
	atomic_uint rr;               /* dispatch rotation */
	atomic_uint gather_slot;      /* dispatch: the slot asynchronous
	                               * requests gather on */
	atomic_uint busy_hint;        /* dispatch: workers with work, as its
	                               * last look sampled them */
	unsigned ncpu;                /* [const] CPUs this process may use */
	atomic_bool closing;          /* no new submits */
	atomic_bool end_now;          /* sipc_destroy_now(): the reaper's
	                               * shutdown sends TERM at once */
	atomic_int users;             /* callers inside the API */
	void *pool_budget;            /* [reaper] struct sipc__pool_budget * */
	struct sipc__journal *journal;
	struct sipc_leftover *leftovers; /* [const] verdicts at open */
	size_t nleftovers;               /* [const] (durable.c) */
	bool owner_held;              /* [const] holds owner mode */
	/* reaper */
	pthread_t reaper;
	bool reaper_started;
	int sig_fd, timer_fd, evt_fd;
	/* [atomic] when the reaper's timer fires next (monotonic ms);
	 * INT64_MAX while it scans deadlines.  A submit with an earlier
	 * deadline wakes it, so TIMEOUT comes at the deadline. */
	_Atomic int64_t timer_at_ms;
	/* [atomic] lent requests whose outcome waited for their last
	 * sender: the reaper delivers them (sipc__late_run()) */
	_Atomic(struct sipc__req *) late_head;
	pthread_mutex_t rlock;        /* guards the fields below */
	pthread_cond_t rcv;
	bool rshutdown;               /* reaper: begin shutdown */
	bool initial_round;           /* first spawn round done */
	unsigned ready_count;
	unsigned live_count;          /* READY or STARTING */
	int start_err;                /* why the last start failed, 0 */
	/* counters [atomic] */
	_Atomic uint64_t n_submitted, n_ok, n_werr, n_rejected, n_timeout,
	    n_unknown, n_requeued, n_retried, n_violations, n_restarts;
	_Atomic uint64_t n_bounds_expired;  /* sipc__bounds_take() */
	_Atomic uint64_t queue_us_sum, run_us_sum;  /* over outcomes */
	_Atomic uint64_t cpu_us_sum, peak_kb_sum, n_cpu_known, n_peak_known;
	_Atomic uint64_t n_recycled[4];     /* by enum sipc_recycle_reason */
	_Atomic uint64_t n_takeovers;       /* spares that took a place */
	/* One hand-over at a time (sipc__slot_hand_over(): the writer and
	 * the reaper may both try for one leaving slot).  A leaf: nothing
	 * is locked under it. */
	pthread_mutex_t spare_lock;
	/* cfg.scratch_root's instance directory and its descriptor (-1:
	 * none): worker generations' directories are made in it */
	int scratch_fd;
	char scratch_path[4096];
	/* whose the directories in it are: a root supervisor's sandbox
	 * identity (sandbox_uid/gid), -1: the supervisor's own */
	int scratch_uid, scratch_gid;
	/* Worker ends by enum sipc_exit_kind; results' queue_us and run_us
	 * by bucket (metrics.c: the bucket bounds) */
	_Atomic uint64_t n_exits[SIPC__EXIT_KINDS];
	_Atomic uint64_t hist_queue[SIPC__HIST_BUCKETS],
	    hist_run[SIPC__HIST_BUCKETS];
};

/* true in library threads (reader, writer, reaper), and on a host thread
 * while it runs a callback for an immediate outcome (supervisor.c) */
extern _Thread_local bool sipc__lib_thread;

/* api.c: public entry points count themselves against sipc_destroy():
 * 0, or SIPC_E_SHUTDOWN (nothing counted) once destroy has begun.
 * Every successful enter is paired with one leave.  Any thread. */
int sipc__api_enter(struct sipc_supervisor *s);
void sipc__api_leave(struct sipc_supervisor *s);
/* 0, or -EDEADLK on a library thread (for destroy, call, wait_ready). */
int sipc__api_blocking_ok(void);
/* Run the next callback on this host thread under a library thread's
 * rules; restore with sipc__lib_thread = <returned value>. */
bool sipc__callback_rules_begin(void);

/* A one-shot wake-up for one waiter (event.c): sipc__event_set() once,
 * from any thread; sipc__event_wait() returns once it is set, with what
 * the setter wrote before it visible. */
struct sipc__event {
	atomic_uint word;
};
void sipc__event_init(struct sipc__event *ev);
void sipc__event_set(struct sipc__event *ev);
void sipc__event_wait(struct sipc__event *ev);
/* True once set (the waiter's own check; no wait). */
bool sipc__event_is_set(struct sipc__event *ev);

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

/* dispatch (dispatch.c) */
/* Put a request that may run again (never started, or an idempotent
 * retry) on some slot's ring: another slot than `avoid` (-1 = none) with
 * room first, else `avoid` itself when its restart is planned (IDLE),
 * else another slot that runs or will run, ahead of its queue.
 * Returns 0, or SIPC_E_UNAVAILABLE when no slot can take it. */
int sipc__dispatch_requeue(struct sipc_supervisor *s, struct sipc__req *q, int avoid);
/* A sipc_call() whose thread took its slot's protocol socket to read
 * its own reply (callread.c): the slot, or NULL; the request's deadline. */
struct sipc__callread {
	struct sipc__slot *sl;
	int64_t deadline_ms;
};
/* Dispatch a new request (dispatch.c): 0 queued (or written directly),
 * else SIPC_E_FULL / _UNAVAILABLE / _SHUTDOWN / SIPC_E_TIMEOUT.  With
 * `cr` (a sipc_call() only), a call written directly may also take its
 * slot's socket (cr->sl set); its thread then runs
 * sipc__callread_run() before it waits for its outcome. */
int sipc__dispatch_new(struct sipc_supervisor *s, struct sipc__req *q,
                       struct sipc__callread *cr);

/* A worker's start counter (startctr.c; CONTRACT A5).  recv() of the
 * bytes before HELLO, taking the one descriptor they may carry (*fdp:
 * -1 or the caller's); the counter checked and mapped read-only (NULL
 * and *why if it is unfit; fd consumed); its mapping dropped. */
ssize_t sipc__recv_hello(int sock, void *buf, size_t len, int *fdp);
const _Atomic uint64_t *sipc__start_ctr_map(int fd, const char **why);
void sipc__start_ctr_unmap(const _Atomic uint64_t *ctr);

/* Per-request figures (figures.c): the sender of a request written
 * while nothing was in flight, before its bytes, no lock held; the
 * decoder of a reply, before the table lock (true: read); and under the
 * table lock, the answered request's figures if it was alone. */
void sipc__fig_begin(struct sipc__slot *sl, const struct sipc__req *q);
bool sipc__fig_end(struct sipc__slot *sl, uint64_t id,
                   struct sipc__usage *ret);
void sipc__fig_note(struct sipc__slot *sl, struct sipc__req *q,
                    const struct sipc__usage *u);

/* worker threads (reader.c) */
/* Bound on a dead worker's final drain past what it left: the bytes
 * buffered when it was seen gone are all decoded (reader.c), and then a
 * surviving descendant's new bytes are read for at most this long (the
 * time completion callbacks take is not counted; they run after the
 * drain).  A stop with bytes unread marks the stream cut. */
#define SIPC__FINAL_DRAIN_MS 100
/* How long a provider's sweep may keep answering "not yet" (1) before
 * the reaper gives up on it, logs an error and settles the worker's end
 * anyway (the local and sandbox providers finish within 2 s). */
#define SIPC__SWEEP_MAX_MS 10000
int sipc__worker_threads_start(struct sipc__slot *sl);
/* writer.c: the writer thread's body (started by reader.c) */
void *sipc__writer_main(void *arg);
/* Name the calling thread "<what><slot index>" (base.c). */
void sipc__thread_name(const char *what, const struct sipc__slot *sl);
/* Watch (EPOLL_CTL_ADD) or stop watching (EPOLL_CTL_DEL) `fd` for input
 * in the interest set `epfd` under `tag`, level-triggered: an fd added
 * back with bytes pending is reported at once.  0 or -1 (errno); base.c.
 * The reader's set: the caller holds the slot lock (or the threads have
 * not started). */
int sipc__epoll_in(int epfd, int op, int fd, uint32_t tag);
/*
 * The direct path: a submitting thread writes its own request when the
 * slot's worker is ready and idle, its ring empty, nobody else sending
 * and the pool lightly loaded (writer.c), instead of waking the writer
 * for it.  sipc__direct_claim(): slot lock held;
 * true when `q` is now written to this generation (as the writer's take
 * does) and the channel is the caller's; then the caller drops the slot
 * lock and calls sipc__direct_send(), which journals it (CONTRACT J7:
 * not sent if that fails), writes without blocking and hands what did
 * not fit to the writer.  Consumes the ring's reference.
 */
bool sipc__direct_claim(struct sipc__slot *sl, struct sipc__req *q);
void sipc__direct_send(struct sipc__slot *sl, struct sipc__req *q);
/*
 * Caller reads (callread.c).  sipc__callread_take(): slot lock held, just
 * after sipc__direct_claim() for a sipc_call(): true when the socket is
 * now the caller's (the reader is not reading, holds no partial frame,
 * no bytes wait for reply room, the stream is sound).
 * sipc__callread_run(): that caller, no lock held: reads and handles
 * frames with the reader's code until `ev` is set, the deadline passes
 * or the socket is asked back, then gives it back to the reader.
 * sipc__callread_revoke() (writer.c): slot lock held, any library
 * thread: ask the caller for the socket (no-op when the reader has it;
 * a parked socket goes back to the reader at once); true when the
 * caller has it (the one asking waits for cv_read or cv_writer, which
 * the caller broadcasts when it gives it back).
 * sipc__callread_unpark(): slot lock held: a parked socket back into
 * the reader's interest set (no-op otherwise).
 */
bool sipc__callread_take(struct sipc__slot *sl);
void sipc__callread_run(struct sipc__slot *sl, struct sipc__event *ev,
                        int64_t deadline_ms);
bool sipc__callread_revoke(struct sipc__slot *sl);
void sipc__callread_unpark(struct sipc__slot *sl);
/*
 * The reader's refill (writer.c): replies gave a writer that had no room
 * some.  Reader thread, no lock held.  When the channel is free and
 * nothing but the ring waits to be sent, the reader (awake anyway) sends
 * what fits in the room itself, without blocking, instead of waking the
 * writer for it; what the socket did not take is handed to the writer.
 * Otherwise the writer is woken.
 */
void sipc__reader_refill(struct sipc__slot *sl);
/* reader.c, start/stop of a generation: the reader's batch buffer. */
struct sipc__wbatch *sipc__wbatch_new(void);
/* After the writer is joined: drop the references of a batch left
 * unsent (its requests are settled with the generation's others). */
void sipc__wbatch_drop(struct sipc__slot *sl);
void sipc__worker_threads_stop(struct sipc__slot *sl);
void sipc__slot_diag_tail(struct sipc__slot *sl, char **ret);

/* diag.c: one worker's diagnostics cut into escaped pieces (reader
 * thread only). */
struct sipc__diag {
	char *line;                   /* max bytes: the piece being cut */
	size_t len, max;
	bool cut;                     /* the last piece was cut at max: a
	                               * '\n' right after it ends it */
	char *vis;                    /* 4 * max + 1 */
};
int sipc__diag_init(struct sipc__diag *d, size_t line_max);
void sipc__diag_free(struct sipc__diag *d);
void sipc__diag_feed(struct sipc__diag *d, struct sipc__slot *sl,
                     const uint8_t *p, size_t n);
void sipc__diag_flush(struct sipc__diag *d, struct sipc__slot *sl);
void sipc__log(struct sipc_supervisor *s, enum sipc_log_level lvl,
               const struct sipc__slot *sl, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* journal glue (durable.c); no-ops without a state directory */
/* Writer thread or a direct sender (under callback rules), no lock held,
 * s->journal set: journal that `q` is being written to `sl`'s worker.
 * 0: send it.  SIPC_E_JOURNAL: do NOT send it, and give it its outcome
 * with sipc__outcome_unsend() (the ring's reference stays yours). */
int sipc__journal_note_written(struct sipc_supervisor *s, struct sipc__slot *sl,
                               struct sipc__req *q);
/* After the WRITTEN records of the frames about to be sent, before any
 * of their bytes go out: their records are durable as far as the mode
 * promises for a power loss (journal.h, sipc__journal_written_durable()).
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
/* state directory: lock, journal, leftovers of a dead instance */
int sipc__durable_open(struct sipc_supervisor *s, char *errbuf, size_t errlen);
void sipc__durable_close(struct sipc_supervisor *s);
/* After sipc__durable_open(): does the journal still keep a leftover
 * record (a verdict that failed, or a provider not available here) for
 * a later instance?  false without a state directory.  The creating
 * thread. */
bool sipc__durable_leftovers_kept(struct sipc_supervisor *s);

/* settle.c (reaper thread) */
void sipc__settle(struct sipc__slot *sl, const struct sipc_exit *e,
                  const char *tail, int64_t now);
void sipc__move_queued(struct sipc__slot *sl, bool slot_will_run,
                       int reject_err);
/* sipc_destroy_now() (its caller's thread, under a callback's rules):
 * REJECT what is queued; CANCEL what is written (returns how many). */
void sipc__reject_queued(struct sipc__slot *sl, int err);
/* A never-written request off every ring ends REJECTED (holds the ring's
 * reference).  No lock held. */
void sipc__reject_req(struct sipc_supervisor *s, struct sipc__req *q, int err);

/* steal.c (reaper thread): never-written requests move from a worker
 * without room to one with room and nothing queued; sets *next when a
 * backlog stays, at most SIPC__STEAL_TICK_MS ahead.  A request queued
 * behind a worker without room wakes the reaper unless a scan is due
 * within that tick (dispatch.c), which also does the move. */
#define SIPC__STEAL_TICK_MS 10
void sipc__steal_scan(struct sipc_supervisor *s, int64_t now, int64_t *next);
extern _Atomic bool sipc__steal_off; /* tests only */
/* max_rss readings by where they came from (enum sipc__mem_src,
 * unix/usage.h): counted for tests (reaper.c). */
extern _Atomic uint64_t sipc__rss_reads[2];
int sipc__dispatch_move(struct sipc_supervisor *s, struct sipc__req *q,
                        unsigned to, unsigned from);
unsigned sipc__cancel_written(struct sipc__slot *sl);
extern _Atomic unsigned sipc__collect_max;  /* tests only (settle.c) */
/* A serving slot's place goes to a ready spare (slot_state.c). */
int sipc__slot_hand_over(struct sipc__slot *sl);
/* Log a hand-over (slot.c); reaper, no lock held. */
void sipc__slot_note_hand_over(struct sipc__slot *sl, int to);
/* sipc_cancel()'s work (settle.c); no lock held. */
int sipc__cancel(struct sipc_supervisor *s, uint64_t id);
/* Expire what passed its deadline; a slot whose worker must be stopped
 * for it gets deadline_stop set, for the reaper to act on. */
void sipc__scan_deadlines(struct sipc_supervisor *s, int64_t now,
                          int64_t *next);

/*
 * A slot's state (slot_state.c).  sipc__slot_set_state() is the only
 * writer of sl->state: any thread, slot lock held.  It allows only the
 * changes sipc__slot_state_allowed() names (its table is in
 * slot_state.c); any other is a library bug and aborts the process.
 */
bool sipc__slot_state_allowed(enum sipc_worker_state from,
                              enum sipc_worker_state to);
void sipc__slot_set_state(struct sipc__slot *sl, enum sipc_worker_state to);

/*
 * A slot's life (slot.c), reaper thread.  Spawns of one pass of the
 * loop go into a batch: begun (cloned) by sipc__slot_spawn(), collected
 * (exec and handshake start awaited) by sipc__slot_spawn_collect().
 * Without a batch (NULL, or its init failed) a spawn completes at once.
 */
struct sipc__spawn_job;
struct sipc__spawn_batch {
	struct sipc__spawn_job *jobs; /* nslots entries, or NULL */
	unsigned n;                   /* begun, not yet collected */
};
int sipc__spawn_batch_init(struct sipc__spawn_batch *b, unsigned nslots);
void sipc__spawn_batch_fini(struct sipc__spawn_batch *b);
void sipc__slot_spawn(struct sipc__slot *sl, int64_t now,
                      struct sipc__spawn_batch *b);
void sipc__slot_spawn_collect(struct sipc__spawn_batch *b);
/* Begin TERM -> grace -> KILL of the slot's worker tree (the reaper's
 * tick sends KILL when the grace period is over). */
void sipc__slot_terminate(struct sipc__slot *sl, enum sipc_term_reason why,
                          int64_t now);
/* The provider reported the worker ended with `e` (classified here). */
void sipc__slot_on_end(struct sipc__slot *sl, struct sipc_exit *e,
                       int64_t now);
/* Refresh the READY / live counts sipc_wait_ready() waits on. */
void sipc__slot_count_ready(struct sipc_supervisor *s);

/* reaper (reaper.c) */
int sipc__reaper_start(struct sipc_supervisor *s);
void sipc__reaper_wake(struct sipc_supervisor *s);
/* Reaper thread, after the provider's ops for slot sl (NULL: none): the
 * bounds that ran out meanwhile (clock.h), logged and counted (base.c). */
void sipc__bounds_note(struct sipc_supervisor *s, const struct sipc__slot *sl);
void sipc__reaper_shutdown(struct sipc_supervisor *s);

/* unix/orphan.c (reaper thread, owner mode): reap ended adopted orphans and
 * return how many are shown ended but cannot be reaped yet (a thread
 * still runs); reap members of the last workers' groups and return how
 * many processes are still in those groups (destroy waits for both);
 * empty the SIGCHLD signalfd, true if a signal came. */
unsigned sipc__orphans_reap(struct sipc_supervisor *s);
unsigned sipc__orphans_left(struct sipc_supervisor *s);
/* unix/orphan.c (sipc_create() / destroy): take owner mode (SIGCHLD blocked
 * in the calling thread, s->sig_fd, subreaper flag; -EBUSY if taken),
 * undo the mask change after a failed create, give it back. */
int sipc__owner_hold(struct sipc_supervisor *s);
void sipc__owner_unblock(void);
void sipc__owner_release(void);
bool sipc__orphans_signalled(struct sipc_supervisor *s);

#endif

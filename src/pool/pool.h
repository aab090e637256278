/*
 * pool/pool.h - what src/pool/ exports: the pool: the worker slot and the supervisor, dispatch, settling, stealing, a slot's life, the reaper.
 */
#ifndef SIPC_SRC_POOL_H
#define SIPC_SRC_POOL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include "sipc.h"
#include "conn/conn.h"
#include "provider/provider.h"
#include "journal/journal.h"

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

/* ---- from the former pool/pool.h */
/*
 * pool/pool.h - internal types shared by the supervisor modules.
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
	size_t nleftovers;               /* [const] (request/notes.c) */
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
/* dispatch (dispatch.c) */
/* Put a request that may run again (never started, or an idempotent
 * retry) on some slot's ring: another slot than `avoid` (-1 = none) with
 * room first, else `avoid` itself when its restart is planned (IDLE),
 * else another slot that runs or will run, ahead of its queue.
 * Returns 0, or SIPC_E_UNAVAILABLE when no slot can take it. */
int sipc__dispatch_requeue(struct sipc_supervisor *s, struct sipc__req *q, int avoid);
/* Dispatch a new request (dispatch.c): 0 queued (or written directly),
 * else SIPC_E_FULL / _UNAVAILABLE / _SHUTDOWN / SIPC_E_TIMEOUT.  With
 * `cr` (a sipc_call() only), a call written directly may also take its
 * slot's socket (cr->sl set); its thread then runs
 * sipc__callread_run() before it waits for its outcome. */
int sipc__dispatch_new(struct sipc_supervisor *s, struct sipc__req *q,
                       struct sipc__callread *cr);

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
 * os/os.h): counted for tests (reaper.c). */
extern _Atomic uint64_t sipc__rss_reads[2];
int sipc__dispatch_move(struct sipc_supervisor *s, struct sipc__req *q,
                        unsigned to, unsigned from);
unsigned sipc__cancel_written(struct sipc__slot *sl);
extern _Atomic unsigned sipc__collect_max;  /* tests only (settle.c) */
/* Log a hand-over (slot.c); reaper, no lock held. */
void sipc__slot_note_hand_over(struct sipc__slot *sl, int to);
/* sipc_cancel()'s work (settle.c); no lock held. */
int sipc__cancel(struct sipc_supervisor *s, uint64_t id);
/* Expire what passed its deadline; a slot whose worker must be stopped
 * for it gets deadline_stop set, for the reaper to act on. */
void sipc__scan_deadlines(struct sipc_supervisor *s, int64_t now,
                          int64_t *next);


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
 * bounds that ran out meanwhile (base/base.h), logged and counted (base.c). */
void sipc__bounds_note(struct sipc_supervisor *s, const struct sipc__slot *sl);
void sipc__reaper_shutdown(struct sipc_supervisor *s);


#endif /* SIPC_SRC_POOL_H */

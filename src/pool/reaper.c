/*
 * reaper.c - the one thread that owns worker processes: its loop.
 *
 * It waits on each live worker's pidfd (readable once that worker has
 * exited), a timerfd for deadlines, grace periods, stalls and respawns,
 * and an eventfd that other library threads write to ("look again").
 * Workers are cloned with exit_signal = 0: they raise no SIGCHLD, so the
 * library neither needs nor touches the host's SIGCHLD, and a host
 * wait(-1) cannot take them.  Only in owner mode (cfg.owner) does it
 * also read SIGCHLD, from a signalfd, to reap adopted orphans.  On every wake it rescans every owned
 * worker.
 *
 * It spawns every worker itself (slot.c: spawn, terminate, a worker's
 * end, its restart), so registering a new worker can never race with
 * reaping it: a worker that exits at once is simply found on the next
 * scan.  It reaps only through the provider, which for local
 * workers means waitid(P_PIDFD) on a pidfd taken at spawn: never
 * waitpid(-1), and a process it did not start only in owner mode.  Because this thread
 * lives as long as the supervisor, a worker's parent-death signal (which
 * follows the spawning *thread*) fires only when the supervisor ends.
 *
 * What happens to a dead worker's requests, and to requests whose
 * deadline passed, is in settle.c (same thread).
 *
 * Fields marked [reaper] in pool/pool.h belong to this thread alone.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "provider/provider.h"
#include "pool/pool.h"
#include "os/os.h"

#define RESCAN_MS 250             /* longest sleep while anything lives */
#define SHUTDOWN_EOF_MS 500       /* channel closed -> TERM on destroy */
#define ORPHAN_WAIT_MS 1000       /* destroy: owner mode's orphans to die */
#define LOST_GRACE_MS 100         /* channel EOF to "lost while alive" */

static int64_t
min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}


/* Is there work this worker owes or holds? */
static bool
has_work(struct sipc__slot *sl)
{
	/* both counters are atomic: no lock needed for a yes/no look */
	return sl->ring.count > 0 || atomic_load(&sl->inflight) > 0;
}

/*
 * Planned recycling of a READY worker: retire it at max_age_ms (at
 * max_requests the writer did, writer.c); a retired one's queue goes
 * where it can run, and once nothing is in flight or half-sent it is
 * ended (POLICY: SIPC_EXIT_RECYCLED, slot.c).  What ends its last
 * request wakes the reaper (reader.c); a poll covers the other ways a
 * request leaves (a deadline, a cancel answered).
 */
#define RECYCLE_POLL_MS 50
#define RSS_POLL_MS 1000

_Atomic uint64_t sipc__rss_reads[2];

/* The worker tree's resident memory: its cgroup's memory.current, else
 * the sum of its processes' from /proc (os/usage.c). */
static int
rss_read(struct sipc__slot *sl, uint64_t *ret)
{
	enum sipc__mem_src src;
	int rc;

	if ((rc = sipc__tree_mem(sl->cg_fd, sl->pid, ret, &src)) == 0)
		atomic_fetch_add(&sipc__rss_reads[src], 1);
	return rc;
}

static void
tick_recycle(struct sipc__slot *sl, int64_t now, int64_t *next)
{
	struct sipc_supervisor *s = sl->sup;
	int why = atomic_load(&sl->retiring), none = SIPC_RECYCLE_NONE;
	bool idle;

	if (why == SIPC_RECYCLE_NONE && s->cfg.max_age_ms != 0) {
		if (now - sl->started_ms >= s->cfg.max_age_ms &&
		    atomic_compare_exchange_strong(&sl->retiring, &none,
		    SIPC_RECYCLE_AGE))
			why = SIPC_RECYCLE_AGE;
		else
			*next = min64(*next, sl->started_ms + s->cfg.max_age_ms);
	}
	if (why == SIPC_RECYCLE_NONE && s->cfg.max_rss != 0) {
		if (now >= sl->rss_at_ms) {
			uint64_t rss = 0;

			sl->rss_at_ms = now + RSS_POLL_MS;
			none = SIPC_RECYCLE_NONE;
			if (rss_read(sl, &rss) == 0 &&
			    rss > s->cfg.max_rss &&
			    atomic_compare_exchange_strong(&sl->retiring,
			    &none, SIPC_RECYCLE_RSS))
				why = SIPC_RECYCLE_RSS;
		}
		*next = min64(*next, sl->rss_at_ms);
	}
	if (why == SIPC_RECYCLE_NONE)
		return;
	if (!sl->recycle_noted) {
		sl->recycle_noted = true;
		sipc__log(s, SIPC_LOG_INFO, sl, "recycling worker: %s",
		    why == SIPC_RECYCLE_AGE ? "max_age_ms reached" :
		    why == SIPC_RECYCLE_RSS ? "max_rss exceeded" :
		    "max_requests written");
		/* At max_requests the writer handed over (and said
		 * nothing under its locks): the spare serving now is named
		 * by the log below only when it happens here. */
		sipc__slot_note_hand_over(sl, sipc__slot_hand_over(sl));
		sipc__move_queued(sl, true, SIPC_E_UNAVAILABLE);
	}
	pthread_mutex_lock(&sl->lock);
	idle = atomic_load(&sl->inflight) == 0 &&
	    sl->sending == SIPC__SEND_NONE && sl->rest == NULL &&
	    sl->handoff == NULL;
	pthread_mutex_unlock(&sl->lock);
	if (idle)
		sipc__slot_terminate(sl, SIPC_TERM_POLICY, now);
	else
		*next = min64(*next, now + RECYCLE_POLL_MS);
}

static void
tick_live(struct sipc__slot *sl, int64_t now, int64_t *next)
{
	struct sipc_supervisor *s = sl->sup;
	enum sipc_worker_state st;
	bool lost, bad;
	int64_t idle;

	pthread_mutex_lock(&sl->lock);
	st = sl->state;
	lost = sl->channel_lost;
	bad = sl->violation;
	pthread_mutex_unlock(&sl->lock);
	if (st == SIPC_WS_READY && sl->ready_ms == 0)
		sl->ready_ms = now;
	if (sl->term_reason != SIPC_TERM_NONE) {
		/* already being stopped (shutdown): the first reason wins */
	} else if (bad) {
		sipc__slot_terminate(sl, SIPC_TERM_PROTOCOL, now);
	} else if (lost && sl->term_at_ms == 0) {
		/* An exiting worker closes its channel just before its exit
		 * becomes observable: wait a moment before calling it a lost
		 * channel, so a crash is not misreported as our termination. */
		if (sl->lost_at_ms == 0)
			sl->lost_at_ms = now;
		if (now - sl->lost_at_ms >= LOST_GRACE_MS)
			sipc__slot_terminate(sl, SIPC_TERM_CHANNEL_LOST, now);
		else
			*next = min64(*next, sl->lost_at_ms + LOST_GRACE_MS);
	}
	if (st == SIPC_WS_STARTING && sl->term_at_ms == 0) {
		if (now - sl->started_ms >= s->cfg.handshake_ms)
			sipc__slot_terminate(sl, SIPC_TERM_PROTOCOL, now);
		else
			*next = min64(*next, sl->started_ms + s->cfg.handshake_ms);
	}
	if (st == SIPC_WS_READY && sl->term_at_ms == 0 &&
	    sl->term_reason == SIPC_TERM_NONE)
		tick_recycle(sl, now, next);
	if (st == SIPC_WS_READY && sl->term_at_ms == 0 && has_work(sl)) {
		idle = now - atomic_load(&sl->last_progress_ms);
		if (idle >= s->cfg.stall_ms)
			sipc__slot_terminate(sl, SIPC_TERM_STALL, now);
		else
			*next = min64(*next, now + s->cfg.stall_ms - idle);
	}
	if (sl->term_at_ms != 0 && !sl->killed) {
		if (now >= sl->term_at_ms + s->cfg.grace_ms) {
			sipc__log(s, SIPC_LOG_WARN, sl, "grace period over: "
			    "killing worker tree");
			(void)s->prov->stop(sl->handle, SIPC_STOP_FORCED);
			sl->killed = true;
		} else {
			*next = min64(*next, sl->term_at_ms + s->cfg.grace_ms);
		}
	}
}

static void tick_slot_pass(struct sipc__slot *sl, int64_t now,
                           int64_t *next, struct sipc__spawn_batch *b);

/*
 * A recycled slot that has not handed its place over yet: no spare was
 * READY when it retired (the replacement of the last one retired still
 * starting).  Its place goes to the first spare that is, as soon as one
 * is (a HELLO wakes the reaper), and what waits on its ring goes there
 * too, instead of waiting for this worker's end and its restart.  The
 * slot itself still takes nothing new, finishes what it holds and ends
 * as before.  Every pass, any state until its restart clears retiring.
 */
static void
recycle_hand_over(struct sipc__slot *sl)
{
	int to;

	if (sl->sup->cfg.spares == 0 || atomic_load(&sl->spare) ||
	    atomic_load(&sl->retiring) == SIPC_RECYCLE_NONE ||
	    atomic_load(&sl->sup->closing))
		return;
	if ((to = sipc__slot_hand_over(sl)) < 0)
		return;
	sipc__slot_note_hand_over(sl, to);
	sipc__move_queued(sl, true, SIPC_E_UNAVAILABLE);
}

/* One slot's pass, then what ran out of its bound in it (the provider's
 * ops run on this thread) is logged and counted for that slot. */
static void
tick_slot(struct sipc__slot *sl, int64_t now, int64_t *next,
          struct sipc__spawn_batch *b)
{
	recycle_hand_over(sl);
	tick_slot_pass(sl, now, next, b);
	sipc__bounds_note(sl->sup, sl);
}

/* One slot's pass: its end, its timers, its respawn (begun in b, when
 * given: the caller collects the batch). */
static void
tick_slot_pass(struct sipc__slot *sl, int64_t now, int64_t *next,
               struct sipc__spawn_batch *b)
{
	struct sipc_supervisor *s = sl->sup;
	struct sipc_exit e;
	int r;

	if (sl->handle != NULL) {
		/* Note readiness before looking for the end: a worker that
		 * handshook, took a request and died between two wakes was
		 * ready, not a start-up failure. */
		pthread_mutex_lock(&sl->lock);
		if (sl->state == SIPC_WS_READY && sl->ready_ms == 0)
			sl->ready_ms = now;
		pthread_mutex_unlock(&sl->lock);
		memset(&e, 0, sizeof(e));
		r = s->prov->try_end(sl->handle, &e);
		if (r == 1) {
			/* what the worker left goes before its end is settled;
			 * 1: not gone yet, its end_fd wakes us to ask again
			 * (no other slot waits for it meanwhile), and the
			 * timer does at the bound: a provider that never
			 * finishes does not hold the slot for ever */
			if (s->prov->sweep != NULL &&
			    (r = s->prov->sweep(sl->handle)) == 1) {
				if (sl->sweep_since_ms == 0)
					sl->sweep_since_ms = now;
				if (now - sl->sweep_since_ms < SIPC__SWEEP_MAX_MS) {
					*next = min64(*next, sl->sweep_since_ms +
					    SIPC__SWEEP_MAX_MS);
					return;
				}
				sipc__log(s, SIPC_LOG_ERROR, sl, "provider %s: "
				    "sweep not done after %d ms; the worker's end "
				    "is settled without it", s->prov->name,
				    SIPC__SWEEP_MAX_MS);
				r = 0;
			}
			sl->sweep_since_ms = 0;
			if (r < 0)
				sipc__log(s, SIPC_LOG_ERROR, sl, "sweeping worker: "
				    "%s", sipc_strerror(r));
			sipc__slot_on_end(sl, &e, now);
		} else {
			if (r < 0)
				sipc__log(s, SIPC_LOG_ERROR, sl, "observing "
				    "worker: %s", sipc_strerror(r));
			tick_live(sl, now, next);
			return;
		}
	}
	if (atomic_load(&s->closing))
		return;
	if (sl->state == SIPC_WS_IDLE || sl->state == SIPC_WS_COOLDOWN) {
		if (now >= sl->respawn_at_ms)
			sipc__slot_spawn(sl, now, b);
		else
			*next = min64(*next, sl->respawn_at_ms);
	}
}

/* ------------------------------------------------------------ main loop */

static void
arm_timer(struct sipc_supervisor *s, int64_t at_ms)
{
	struct itimerspec its;

	memset(&its, 0, sizeof(its));
	if (at_ms < 1)
		at_ms = 1;
	its.it_value.tv_sec = at_ms / 1000;
	its.it_value.tv_nsec = (at_ms % 1000) * 1000000;
	(void)timerfd_settime(s->timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
	/* after arming: a submit whose deadline is earlier wakes us */
	atomic_store(&s->timer_at_ms, at_ms);
}

static void
drain_wakeups(struct sipc_supervisor *s)
{
	uint64_t v;

	(void)read(s->timer_fd, &v, sizeof(v));
	(void)read(s->evt_fd, &v, sizeof(v));
}

/*
 * Sleep until the timer fires, another thread wakes us, or a live
 * worker ends: its end descriptor (a pidfd) polls readable the moment it
 * exits.  No SIGCHLD is involved, so nothing a host does with SIGCHLD
 * can delay or hide an exit from this loop.  In owner mode the SIGCHLD
 * signalfd is polled too, for adopted orphans (os/orphan.c).  pfd has
 * nslots + 3 entries (NULL: timer, wake-up and signalfd only; the
 * timer's rescan still finds every end).  timeout_ms -1: no timeout.
 */
static void
wait_events(struct sipc_supervisor *s, struct pollfd *pfd, int timeout_ms)
{
	struct pollfd two[3];
	nfds_t n = 0;
	int fd;

	if (pfd == NULL)
		pfd = two;
	pfd[n++] = (struct pollfd){ .fd = s->timer_fd, .events = POLLIN };
	pfd[n++] = (struct pollfd){ .fd = s->evt_fd, .events = POLLIN };
	if (s->sig_fd >= 0)
		pfd[n++] = (struct pollfd){ .fd = s->sig_fd, .events = POLLIN };
	for (unsigned i = 0; pfd != two && i < s->nslots; i++)
		if (s->slots[i].handle != NULL &&
		    (fd = s->slots[i].end_fd) >= 0)
			pfd[n++] = (struct pollfd){ .fd = fd, .events = POLLIN };
	while (poll(pfd, n, timeout_ms) < 0 && errno == EINTR)
		;
}


static bool
has_pending(struct sipc_supervisor *s)
{
	bool p;

	pthread_mutex_lock(&s->table.lock);
	p = s->table.count > 0;
	pthread_mutex_unlock(&s->table.lock);
	return p;
}

static bool
any_live(struct sipc_supervisor *s)
{
	for (unsigned i = 0; i < s->nslots; i++)
		if (s->slots[i].handle != NULL)
			return true;
	return false;
}

/*
 * Shutdown: channels closed and TERM sent together; KILL after grace;
 * every worker reaped and settled; whatever is still queued REJECTED.
 */
static void
shutdown_all(struct sipc_supervisor *s, struct pollfd *pfd)
{
	int64_t now = sipc__now_ms(), next, term_at;
	unsigned i;

	/* First the polite step: end of input.  A worker built on the
	 * runtime finishes its batch and exits 0.  TERM follows after a
	 * short wait, KILL after the grace period. */
	term_at = now + (s->cfg.grace_ms < 2 * SHUTDOWN_EOF_MS ?
	    s->cfg.grace_ms / 2 : SHUTDOWN_EOF_MS);
	if (atomic_load(&s->end_now))
		term_at = now;          /* sipc_destroy_now(): no polite wait */
	for (i = 0; i < s->nslots; i++) {
		struct sipc__slot *sl = &s->slots[i];

		if (sl->handle == NULL)
			continue;
		(void)shutdown(sl->proto_fd, SHUT_WR);
		pthread_mutex_lock(&sl->lock);
		sipc__slot_set_state(sl, SIPC_WS_STOPPING);
		pthread_mutex_unlock(&sl->lock);
	}
	while (any_live(s)) {
		now = sipc__now_ms();
		next = now + 50;
		for (i = 0; i < s->nslots; i++) {
			struct sipc__slot *sl = &s->slots[i];

			if (sl->handle != NULL && sl->term_at_ms == 0) {
				if (now >= term_at)
					sipc__slot_terminate(sl, SIPC_TERM_SHUTDOWN, now);
				else
					sl->term_reason = SIPC_TERM_SHUTDOWN;
			}
			tick_slot(sl, now, &next, NULL);
		}
		if (now < term_at && term_at < next)
			next = term_at;
		if (!any_live(s))
			break;
		arm_timer(s, next);
		wait_events(s, pfd, -1);
		drain_wakeups(s);
		sipc__late_run(s);
		if (s->sig_fd >= 0 && sipc__orphans_signalled(s))
			(void)sipc__orphans_reap(s);
	}
	for (i = 0; i < s->nslots; i++) {
		pthread_mutex_lock(&s->slots[i].lock);
		sipc__slot_set_state(&s->slots[i], SIPC_WS_FAILED);
		pthread_mutex_unlock(&s->slots[i].lock);
		sipc__move_queued(&s->slots[i], false, SIPC_E_SHUTDOWN);
	}
	/* Owner mode: the end-of-worker sweep sent SIGKILL to each group;
	 * members die a moment later and come to us as their parents die.
	 * Wait (bounded) until no process is left in those groups and no
	 * adopted child shown ended is still held back by a live thread, so
	 * none becomes a zombie of the host after we stop reaping. */
	if (s->sig_fd < 0)
		return;
	term_at = sipc__now_ms() + s->cfg.grace_ms + ORPHAN_WAIT_MS;
	for (;;) {
		unsigned left = sipc__orphans_reap(s);

		left += sipc__orphans_left(s);
		if (left == 0 || sipc__now_ms() >= term_at)
			break;
		/* SIGCHLD wakes us for our own children; members that are
		 * not ours yet are looked for again after 10 ms */
		wait_events(s, NULL, 10);
		drain_wakeups(s);
		(void)sipc__orphans_signalled(s);
	}
}

static void *
reaper_main(void *arg)
{
	struct sipc_supervisor *s = arg;
	struct pollfd *pfd = calloc(s->nslots + 3, sizeof(*pfd));
	/* without it, each worker is spawned in turn */
	struct sipc__spawn_batch b;
	unsigned i;
	int64_t now, next;
	bool stop;

	sipc__lib_thread = true;
	(void)sipc__spawn_batch_init(&b, s->nslots);
	now = sipc__now_ms();
	for (i = 0; i < s->nslots; i++)
		sipc__slot_spawn(&s->slots[i], now, &b);
	sipc__slot_spawn_collect(&b);
	pthread_mutex_lock(&s->rlock);
	s->initial_round = true;
	pthread_cond_broadcast(&s->rcv);
	pthread_mutex_unlock(&s->rlock);
	for (;;) {
		drain_wakeups(s);
		sipc__late_run(s);
		/* before the deadline scan: a request inserted after it sees
		 * this (or the time armed below) and wakes us (sipc_submit) */
		atomic_store(&s->timer_at_ms, INT64_MAX);
		pthread_mutex_lock(&s->rlock);
		stop = s->rshutdown;
		pthread_mutex_unlock(&s->rlock);
		if (stop)
			break;
		now = sipc__now_ms();
		next = now + RESCAN_MS;
		for (i = 0; i < s->nslots; i++)
			tick_slot(&s->slots[i], now, &next, &b);
		sipc__slot_spawn_collect(&b);
		sipc__scan_deadlines(s, now, &next);
		sipc__steal_scan(s, now, &next);
		for (i = 0; i < s->nslots; i++)
			if (s->slots[i].deadline_stop) {
				s->slots[i].deadline_stop = false;
				sipc__slot_terminate(&s->slots[i],
				    SIPC_TERM_DEADLINE, now);
			}
		/* after the slots: a worker that ended is reaped by pidfd
		 * first, and one just spawned is known as live */
		if (s->sig_fd >= 0 && sipc__orphans_signalled(s))
			(void)sipc__orphans_reap(s);
		sipc__journal_note_tick(s, now);
		/* group commit: while requests are moving, wake in time for
		 * the next sync (idle, the rescan period is enough) */
		if (s->journal != NULL &&
		    s->cfg.durability == SIPC_DURABLE_GROUP && has_pending(s))
			next = min64(next, now + s->cfg.group_commit_ms);
		sipc__slot_count_ready(s);
		arm_timer(s, next);
		wait_events(s, pfd, -1);
	}
	shutdown_all(s, pfd);
	/* Every worker thread has ended: no sender is left. */
	sipc__late_run(s);
	sipc__slot_count_ready(s);
	sipc__spawn_batch_fini(&b);
	free(pfd);
	return NULL;
}

/*
 * Start the reaper with every signal blocked (its children and the
 * worker threads it creates inherit that mask, and no host signal
 * handler ever runs on a library thread).  The host's own signal mask
 * and dispositions are left as they were.
 */
int
sipc__reaper_start(struct sipc_supervisor *s)
{
	sigset_t all, old;
	int rc;

	s->timer_fd = timerfd_create(CLOCK_MONOTONIC,
	    TFD_NONBLOCK | TFD_CLOEXEC);
	s->evt_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->timer_fd < 0 || s->evt_fd < 0)
		return -errno;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&s->reaper, NULL, reaper_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		return -rc;
	s->reaper_started = true;
	return 0;
}

void
sipc__reaper_shutdown(struct sipc_supervisor *s)
{
	if (!s->reaper_started)
		return;
	pthread_mutex_lock(&s->rlock);
	s->rshutdown = true;
	pthread_mutex_unlock(&s->rlock);
	sipc__reaper_wake(s);
	pthread_join(s->reaper, NULL);
	s->reaper_started = false;
}

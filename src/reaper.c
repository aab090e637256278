/*
 * reaper.c - the one thread that owns worker processes.
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
 * It spawns every worker itself, so registering a new worker can never
 * race with reaping it: a worker that exits at once is simply found on
 * the next scan.  Spawns do not wait on each other: a pass clones every
 * worker that is due, then collects each launch (its exec, and in the
 * namespace modes sipc-init's start report) while the others exec.  It reaps only through the provider, which for local
 * workers means waitid(P_PIDFD) on a pidfd taken at spawn: never
 * waitpid(-1), and a process it did not start only in owner mode.  Because this thread
 * lives as long as the supervisor, a worker's parent-death signal (which
 * follows the spawning *thread*) fires only when the supervisor ends.
 *
 * What happens to a dead worker's requests, and to requests whose
 * deadline passed, is in settle.c (same thread).
 *
 * Fields marked [reaper] in sipc_int.h belong to this thread alone.
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
#include <sys/wait.h>
#include <unistd.h>

#include "policy.h"
#include "provider.h"
#include "sipc_int.h"

#define RESCAN_MS 250             /* longest sleep while anything lives */
#define SHUTDOWN_EOF_MS 500       /* channel closed -> TERM on destroy */
#define ORPHAN_WAIT_MS 1000       /* destroy: owner mode's orphans to die */
#define LOST_GRACE_MS 100         /* channel EOF to "lost while alive" */

static int64_t
min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* ------------------------------------------------------------ spawn */

static char **
worker_env(struct sipc_supervisor *s, struct sipc__slot *sl)
{
	size_t n = 0, i;
	char **env;

	while (s->envp[n] != NULL)
		n++;
	if ((env = calloc(n + 5, sizeof(*env))) == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		env[i] = s->envp[i];
	if (asprintf(&env[n], "SIPC_WORKER_ID=%u", sl->idx) < 0)
		env[n] = NULL;
	if (asprintf(&env[n + 1], "SIPC_GENERATION=%u", sl->generation) < 0)
		env[n + 1] = NULL;
	if (env[n] == NULL || env[n + 1] == NULL) {
		free(env[n]);
		free(env[n + 1]);
		free(env);
		return NULL;
	}
	return env;
}

static void
free_env(struct sipc_supervisor *s, char **env)
{
	size_t n = 0;

	while (s->envp[n] != NULL)
		n++;
	free(env[n]);
	free(env[n + 1]);
	free(env);
}

static void schedule_restart(struct sipc__slot *sl, int64_t now,
                             int64_t uptime, bool before_ready);

static void count_ready(struct sipc_supervisor *s);

/* Remember why the last worker start failed, so sipc_wait_ready() can
 * say so instead of timing out; a worker becoming ready clears it.  The
 * ready and live counts are refreshed with it: a waiter must not pair
 * this error with a count from before the failure. */
static void
note_start_error(struct sipc_supervisor *s, int err)
{
	pthread_mutex_lock(&s->rlock);
	s->start_err = err;
	pthread_mutex_unlock(&s->rlock);
	count_ready(s);
}

/* Say how the worker's tree is contained whenever it changes (the first
 * start included): a fallback is reported, never hidden. */
static void
note_containment(struct sipc__slot *sl, const struct sipc_provider_chan *ch)
{
	const struct sipc_provider_info *in = &ch->info;
	bool contained = ch->contain == SIPC_CONTAIN_PID_NAMESPACE ||
	    in->cgroup;

	if (in->cgroup_err != 0 && in->cgroup_err != sl->cg_err)
		sipc__log(sl->sup, SIPC_LOG_WARN, sl, "cgroup: not provided for "
		    "this worker: %s", sipc_strerror(in->cgroup_err));
	if (sl->containment == ch->contain && sl->cgroup == in->cgroup)
		return;
	sipc__log(sl->sup, contained ? SIPC_LOG_INFO : SIPC_LOG_WARN, sl,
	    "tree containment: %s%s%s%s%s", sipc_containment_name(ch->contain),
	    ch->contain == SIPC_CONTAIN_PROCESS_GROUP && !in->cgroup ?
	    " (a descendant that calls setsid() escapes)" : "",
	    in->cgroup ? "; cgroup: provided (cgroup.kill ends the whole "
	    "tree)" : "",
	    ch->note[0] ? "; stronger mode refused: " : "", ch->note);
}

/*
 * A worker launch begun in this pass of the loop and collected at its
 * end: every child of a pass is cloned first, then each is waited for
 * in turn while the others exec, so N launches cost about one exec wait,
 * not N.  The environment and launch arguments live until collected.
 */
struct spawn_job {
	struct sipc__slot *sl;
	char **env;
	struct sipc_provider_launch l;
	void *pending;                /* provider's launch_start, or NULL */
	int rc;                       /* the start's result */
};

struct spawn_batch {
	struct spawn_job *jobs;       /* nslots entries */
	unsigned n;
};

/* Start a launch: clone the child, without waiting for its exec. */
static void
spawn_begin(struct sipc__slot *sl, struct spawn_job *j)
{
	struct sipc_supervisor *s = sl->sup;

	memset(j, 0, sizeof(*j));
	j->sl = sl;
	pthread_mutex_lock(&sl->lock);
	sl->generation++;
	pthread_mutex_unlock(&sl->lock);
	if ((j->env = worker_env(s, sl)) == NULL) {
		j->rc = -ENOMEM;
		return;
	}
	j->l = (struct sipc_provider_launch){ .path = s->cfg.path,
	    .argv = s->argv, .envp = j->env, .worker_id = sl->idx,
	    .generation = sl->generation,
	    .nproc_limit = s->cfg.worker_nproc_limit,
	    .contain = s->cfg.containment, .init_path = s->cfg.init_path };
	if (s->prov->launch_start != NULL)
		j->rc = s->prov->launch_start(s->prov_state, &j->l,
		    &j->pending);
}

/* Collect a launch: wait until the worker started (or not), then set
 * the slot up for it (or plan its restart). */
static void
spawn_end(struct spawn_job *j, int64_t now)
{
	struct sipc__slot *sl = j->sl;
	struct sipc_supervisor *s = sl->sup;
	struct sipc_provider_chan ch;
	int rc = j->rc, eno = 0;

	memset(&ch, 0, sizeof(ch));
	if (rc == 0 && j->pending != NULL)
		rc = s->prov->launch_finish(j->pending, &ch, &sl->handle, &eno);
	else if (rc == 0)
		rc = s->prov->launch(s->prov_state, &j->l, &ch, &sl->handle,
		    &eno);
	if (j->env != NULL)
		free_env(s, j->env);
	if (rc < 0)
		goto fail;
	/* Outside development and test an end must be seen when it
	 * happens, not on the next rescan. */
	if (ch.end_fd < 0 && s->cfg.environment != SIPC_ENV_DEVELOPMENT &&
	    s->cfg.environment != SIPC_ENV_TEST)
		rc = SIPC_E_PRODUCTION;
	else if ((sl->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0)
		rc = -errno;
	if (rc < 0) {
		/* release kills, observes and sweeps an unended worker */
		s->prov->release(sl->handle);
		sl->handle = NULL;
		close(ch.proto_fd);
		close(ch.diag_fd);
		goto fail;
	}
	sl->proto_fd = ch.proto_fd;
	sl->diag_fd = ch.diag_fd;
	sl->end_fd = ch.end_fd;
	sl->started_ms = now;
	sl->ready_ms = 0;
	sl->term_at_ms = 0;
	sl->lost_at_ms = 0;
	sl->killed = false;
	sl->term_reason = SIPC_TERM_NONE;
	atomic_store(&sl->last_progress_ms, now);
	note_containment(sl, &ch);
	pthread_mutex_lock(&sl->lock);
	sl->pid = (pid_t)ch.display_pid;
	sl->containment = ch.contain;
	sl->cgroup = ch.info.cgroup;
	sl->cg_limits = ch.info.limits;
	sl->cg_err = ch.info.cgroup_err;
	sl->state = SIPC_WS_STARTING;
	sl->accepts = false;
	/* Why a start failed belongs to that generation: a version error
	 * of the previous one must not explain this one's end. */
	sl->violation_err = 0;
	sl->diag_tail_len = sl->diag_tail_pos = 0;
	pthread_mutex_unlock(&sl->lock);
	if (s->journal != NULL)
		sipc__journal_note_worker(s, sl, &ch);
	if ((rc = sipc__worker_threads_start(sl)) < 0) {
		sipc__log(s, SIPC_LOG_ERROR, sl, "cannot start worker threads: %s",
		    sipc_strerror(rc));
		(void)s->prov->stop(sl->handle, SIPC_STOP_FORCED);
		sl->term_at_ms = now;
		sl->killed = true;
		sl->term_reason = SIPC_TERM_POLICY;
	}
	sipc__log(s, SIPC_LOG_INFO, sl, "worker started");
	return;
fail:
	/* before the exit is visible in stats (a host waits on either) */
	note_start_error(s, rc == SIPC_E_EXEC ? SIPC_E_EXEC : rc);
	{
		struct sipc_exit e = { .kind = SIPC_EXIT_HANDSHAKE, .code = -rc };

		if (rc == SIPC_E_EXEC) {
			e = (struct sipc_exit){ .kind = SIPC_EXIT_EXEC_FAILED,
			    .code = eno };
			sipc__log(s, SIPC_LOG_ERROR, sl, "cannot execute %s: %s",
			    s->cfg.path, strerror(eno));
		} else {
			sipc__log(s, SIPC_LOG_ERROR, sl, "cannot launch worker: %s",
			    sipc_strerror(rc));
		}
		pthread_mutex_lock(&sl->lock);
		sl->last_exit = e;
		pthread_mutex_unlock(&sl->lock);
	}
	schedule_restart(sl, now, 0, true);
}

static void
spawn_slot(struct sipc__slot *sl, int64_t now)
{
	struct spawn_job j;

	spawn_begin(sl, &j);
	spawn_end(&j, now);
}

/* Spawn now, or (with a batch) begin now and collect at the pass's end. */
static void
spawn_or_begin(struct sipc__slot *sl, int64_t now, struct spawn_batch *b)
{
	if (b == NULL || b->jobs == NULL)
		spawn_slot(sl, now);
	else
		spawn_begin(sl, &b->jobs[b->n++]);
}

/* Collect the pass's launches in the order begun.  Each is dated when
 * collected: its handshake time starts then, not while earlier ones
 * were being collected. */
static void
spawn_collect(struct spawn_batch *b)
{
	for (unsigned i = 0; b->jobs != NULL && i < b->n; i++)
		spawn_end(&b->jobs[i], sipc__now_ms());
	b->n = 0;
}

/* ------------------------------------------------------------ lifecycle */

static void
schedule_restart(struct sipc__slot *sl, int64_t now, int64_t uptime,
                 bool before_ready)
{
	struct sipc_supervisor *s = sl->sup;
	bool cool = false;
	int64_t delay;

	if (atomic_load(&s->closing)) {
		pthread_mutex_lock(&sl->lock);
		sl->state = SIPC_WS_FAILED;
		pthread_mutex_unlock(&sl->lock);
		sipc__move_queued(sl, false, SIPC_E_SHUTDOWN);
		return;
	}
	delay = sipc__restart_plan(sl->policy, s->pool_budget, now, uptime,
	    before_ready, &cool);
	sl->respawn_at_ms = now + delay;
	/* A cool-down is the refusal to restart (CONTRACT P3): only a
	 * planned respawn counts, as in the policy's own tally. */
	if (!cool) {
		atomic_fetch_add(&sl->restarts, 1);
		atomic_fetch_add(&s->n_restarts, 1);
	}
	pthread_mutex_lock(&sl->lock);
	sl->state = cool ? SIPC_WS_COOLDOWN : SIPC_WS_IDLE;
	pthread_mutex_unlock(&sl->lock);
	if (cool)
		sipc__log(s, SIPC_LOG_WARN, sl, "restart intensity exceeded: "
		    "cooling down for %lld ms", (long long)delay);
	/* Queued work goes where it can run soon; in a cool-down, what no
	 * other slot takes fails fast instead of waiting. */
	sipc__move_queued(sl, !cool, SIPC_E_UNAVAILABLE);
}

/* Begin TERM -> grace -> KILL for this slot's worker tree. */
void
sipc__terminate(struct sipc__slot *sl, enum sipc_term_reason why, int64_t now)
{
	struct sipc_supervisor *s = sl->sup;

	if (sl->handle == NULL || sl->term_at_ms != 0)
		return;
	sl->term_reason = why;
	sl->term_at_ms = now;
	pthread_mutex_lock(&sl->lock);
	sl->state = SIPC_WS_STOPPING;
	pthread_mutex_unlock(&sl->lock);
	sipc__log(s, SIPC_LOG_WARN, sl, "terminating worker: %s",
	    sipc_term_reason_name(why));
	(void)s->prov->stop(sl->handle, SIPC_STOP_GRACEFUL);
	if (why != SIPC_TERM_SHUTDOWN)
		sipc__move_queued(sl, true, SIPC_E_UNAVAILABLE);
}

static void
on_end(struct sipc__slot *sl, struct sipc_exit *e, int64_t now)
{
	struct sipc_supervisor *s = sl->sup;
	bool before_ready = sl->ready_ms == 0;
	char buf[160], *tail = NULL;

	/* A worker that never completed the handshake failed to start,
	 * whoever ended it (handshake timeout, bad version); the reason
	 * stays attached.  Only shutdown during start-up is not a fault. */
	if (e->kind == SIPC_EXIT_LOST || e->kind == SIPC_EXIT_OOM) {
		/* say so whatever we were doing: the status is unknown, or
		 * the kernel ended it for memory before we could */
		e->reason = sl->term_reason;
	} else if (before_ready && sl->term_reason != SIPC_TERM_SHUTDOWN) {
		e->kind = SIPC_EXIT_HANDSHAKE;
		e->reason = sl->term_reason;
	} else if (sl->term_reason != SIPC_TERM_NONE) {
		e->kind = SIPC_EXIT_TERMINATED;
		e->reason = sl->term_reason;
	}
	sipc__worker_threads_stop(sl);
	close(sl->proto_fd);
	close(sl->diag_fd);
	close(sl->wake_fd);
	sl->proto_fd = sl->diag_fd = sl->wake_fd = -1;
	s->prov->release(sl->handle);
	sl->handle = NULL;
	sl->end_fd = -1;
	pthread_mutex_lock(&sl->lock);
	sl->last_exit = *e;
	sl->state = SIPC_WS_DRAINING;
	/* CANCELs name ids this generation held; the writer is joined, so
	 * none is sent now, and a replacement never received those ids. */
	sl->ncancels = 0;
	pthread_mutex_unlock(&sl->lock);
	sipc_exit_format(e, buf, sizeof(buf));
	sipc__log(s, e->kind == SIPC_EXIT_CLEAN ? SIPC_LOG_INFO : SIPC_LOG_WARN,
	    sl, "worker ended: %s", buf);
	if (before_ready) {
		int err;

		pthread_mutex_lock(&sl->lock);
		err = sl->violation_err == SIPC_E_VERSION ? SIPC_E_VERSION :
		    SIPC_E_HANDSHAKE;
		pthread_mutex_unlock(&sl->lock);
		note_start_error(s, err);
	}
	/* Decide the slot's future first: requests that may run again
	 * (never started, idempotent retries) can then wait for this very
	 * slot when it restarts, instead of being refused because no other
	 * slot exists (a pool of one).  In a cool-down they are refused. */
	schedule_restart(sl, now, now - sl->started_ms, before_ready);
	sipc__slot_diag_tail(sl, &tail);
	sipc__settle(sl, e, tail, now);
	free(tail);
	sipc__journal_note_worker_gone(s, sl);
}

/* Is there work this worker owes or holds? */
static bool
has_work(struct sipc__slot *sl)
{
	/* both counters are atomic: no lock needed for a yes/no look */
	return sl->ring.count > 0 || atomic_load(&sl->inflight) > 0;
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
		sipc__terminate(sl, SIPC_TERM_PROTOCOL, now);
	} else if (lost && sl->term_at_ms == 0) {
		/* An exiting worker closes its channel just before its exit
		 * becomes observable: wait a moment before calling it a lost
		 * channel, so a crash is not misreported as our termination. */
		if (sl->lost_at_ms == 0)
			sl->lost_at_ms = now;
		if (now - sl->lost_at_ms >= LOST_GRACE_MS)
			sipc__terminate(sl, SIPC_TERM_CHANNEL_LOST, now);
		else
			*next = min64(*next, sl->lost_at_ms + LOST_GRACE_MS);
	}
	if (st == SIPC_WS_STARTING && sl->term_at_ms == 0) {
		if (now - sl->started_ms >= s->cfg.handshake_ms)
			sipc__terminate(sl, SIPC_TERM_PROTOCOL, now);
		else
			*next = min64(*next, sl->started_ms + s->cfg.handshake_ms);
	}
	if (st == SIPC_WS_READY && sl->term_at_ms == 0 && has_work(sl)) {
		idle = now - atomic_load(&sl->last_progress_ms);
		if (idle >= s->cfg.stall_ms)
			sipc__terminate(sl, SIPC_TERM_STALL, now);
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

/* One slot's pass: its end, its timers, its respawn (begun in b, when
 * given: the caller collects the batch). */
static void
tick_slot(struct sipc__slot *sl, int64_t now, int64_t *next,
          struct spawn_batch *b)
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
			/* what the worker left goes before its end is settled */
			if (s->prov->sweep != NULL &&
			    (r = s->prov->sweep(sl->handle)) < 0)
				sipc__log(s, SIPC_LOG_ERROR, sl, "sweeping worker: "
				    "%s", sipc_strerror(r));
			on_end(sl, &e, now);
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
			spawn_or_begin(sl, now, b);
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
 * signalfd is polled too, for adopted orphans (unix/orphan.c).  pfd has
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

static void
count_ready(struct sipc_supervisor *s)
{
	unsigned i, ready = 0, live = 0;

	for (i = 0; i < s->nslots; i++) {
		struct sipc__slot *sl = &s->slots[i];

		pthread_mutex_lock(&sl->lock);
		if (sl->state == SIPC_WS_READY)
			ready++;
		if (sl->state == SIPC_WS_READY || sl->state == SIPC_WS_STARTING)
			live++;
		pthread_mutex_unlock(&sl->lock);
	}
	pthread_mutex_lock(&s->rlock);
	s->ready_count = ready;
	s->live_count = live;
	if (ready > 0)
		s->start_err = 0;
	pthread_cond_broadcast(&s->rcv);
	pthread_mutex_unlock(&s->rlock);
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
	for (i = 0; i < s->nslots; i++) {
		struct sipc__slot *sl = &s->slots[i];

		if (sl->handle == NULL)
			continue;
		(void)shutdown(sl->proto_fd, SHUT_WR);
		pthread_mutex_lock(&sl->lock);
		sl->state = SIPC_WS_STOPPING;
		pthread_mutex_unlock(&sl->lock);
	}
	while (any_live(s)) {
		now = sipc__now_ms();
		next = now + 50;
		for (i = 0; i < s->nslots; i++) {
			struct sipc__slot *sl = &s->slots[i];

			if (sl->handle != NULL && sl->term_at_ms == 0) {
				if (now >= term_at)
					sipc__terminate(sl, SIPC_TERM_SHUTDOWN, now);
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
		if (s->sig_fd >= 0 && sipc__orphans_signalled(s))
			(void)sipc__orphans_reap(s);
	}
	for (i = 0; i < s->nslots; i++) {
		pthread_mutex_lock(&s->slots[i].lock);
		s->slots[i].state = SIPC_WS_FAILED;
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
	struct spawn_batch b = { calloc(s->nslots, sizeof(*b.jobs)), 0 };
	unsigned i;
	int64_t now, next;
	bool stop;

	sipc__lib_thread = true;
	now = sipc__now_ms();
	for (i = 0; i < s->nslots; i++)
		spawn_or_begin(&s->slots[i], now, &b);
	spawn_collect(&b);
	pthread_mutex_lock(&s->rlock);
	s->initial_round = true;
	pthread_cond_broadcast(&s->rcv);
	pthread_mutex_unlock(&s->rlock);
	for (;;) {
		drain_wakeups(s);
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
		spawn_collect(&b);
		sipc__scan_deadlines(s, now, &next);
		for (i = 0; i < s->nslots; i++)
			if (s->slots[i].deadline_stop) {
				s->slots[i].deadline_stop = false;
				sipc__terminate(&s->slots[i],
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
		count_ready(s);
		arm_timer(s, next);
		wait_events(s, pfd, -1);
	}
	shutdown_all(s, pfd);
	count_ready(s);
	free(b.jobs);
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

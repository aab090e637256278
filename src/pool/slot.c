/*
 * slot.c - a worker slot's life: spawn, terminate, the end of a worker
 * and the plan for its restart.  Reaper thread (the loop in reaper.c
 * calls these); fields marked [reaper] in pool/pool.h are this thread's.
 *
 * Every state change goes through sipc__slot_set_state() (slot_state.c),
 * which allows only the changes in its table.
 *
 * Spawns do not wait on each other: a pass of the reaper's loop clones
 * every worker that is due, then collects each launch (its exec, and in
 * the namespace modes sipc-init's start report) while the others exec.
 * What happens to a dead worker's requests is in settle.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "request/request.h"
#include "provider/provider.h"
#include "pool/pool.h"
#include "os/os.h"

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
	if (s->scratch_fd >= 0 && asprintf(&env[n + 2], "SIPC_SCRATCH=%s/w%u.%u",
	    s->scratch_path, sl->idx, sl->generation) < 0)
		env[n + 2] = NULL;
	if (env[n] == NULL || env[n + 1] == NULL ||
	    (s->scratch_fd >= 0 && env[n + 2] == NULL)) {
		free(env[n]);
		free(env[n + 1]);
		free(env[n + 2]);
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
	free(env[n + 2]);
	free(env);
}

static void schedule_restart(struct sipc__slot *sl, int64_t now,
                             int64_t uptime, bool before_ready);

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
	sipc__slot_count_ready(s);
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
	    ch->note[0] ? "; " : "", ch->note);
}

/*
 * A worker launch begun in this pass of the loop and collected at its
 * end: every child of a pass is cloned first, then each is waited for
 * in turn while the others exec, so N launches cost about one exec wait,
 * not N.  The environment and launch arguments live until collected.
 */
struct sipc__spawn_job {
	struct sipc__slot *sl;
	char **env;
	struct sipc_provider_launch l;
	void *pending;                /* provider's launch_start, or NULL */
	int rc;                       /* the start's result */
	char *scratch_dir;            /* the generation's scratch directory */
};

int
sipc__spawn_batch_init(struct sipc__spawn_batch *b, unsigned nslots)
{
	b->n = 0;
	b->jobs = calloc(nslots, sizeof(*b->jobs));
	return b->jobs != NULL ? 0 : -ENOMEM;
}

void
sipc__spawn_batch_fini(struct sipc__spawn_batch *b)
{
	free(b->jobs);
	b->jobs = NULL;
	b->n = 0;
}

/* Start a launch: clone the child, without waiting for its exec. */
static void
spawn_begin(struct sipc__slot *sl, struct sipc__spawn_job *j)
{
	struct sipc_supervisor *s = sl->sup;

	memset(j, 0, sizeof(*j));
	j->sl = sl;
	pthread_mutex_lock(&sl->lock);
	sl->generation++;
	sl->gen_written = 0;
	sl->recycle_noted = false;
	atomic_store(&sl->retiring, SIPC_RECYCLE_NONE);
	pthread_mutex_unlock(&sl->lock);
	if (s->scratch_fd >= 0) {
		/* the generation's scratch directory, before its start */
		char name[32];

		sipc__scratch_name(name, sizeof(name), sl->idx, sl->generation, 0);
		if ((j->rc = sipc__scratch_mkdir(s->scratch_fd, name,
		    s->scratch_uid, s->scratch_gid)) < 0) {
			sipc__log(s, SIPC_LOG_ERROR, sl, "scratch directory "
			    "%s/%s: %s", s->scratch_path, name,
			    strerror(-j->rc));
			return;
		}
		if (asprintf(&j->scratch_dir, "%s/%s", s->scratch_path,
		    name) < 0) {
			j->scratch_dir = NULL;
			j->rc = -ENOMEM;
			return;
		}
	}
	if ((j->env = worker_env(s, sl)) == NULL) {
		j->rc = -ENOMEM;
		return;
	}
	j->l = (struct sipc_provider_launch){ .path = s->cfg.path,
	    .argv = s->argv, .envp = j->env, .worker_id = sl->idx,
	    .generation = sl->generation,
	    .nproc_limit = s->cfg.worker_nproc_limit,
	    .contain = s->cfg.containment, .init_path = s->cfg.init_path,
	    .scratch_dir = j->scratch_dir };
	if (s->prov->launch_start != NULL)
		j->rc = s->prov->launch_start(s->prov_state, &j->l,
		    &j->pending);
}

/* Collect a launch: wait until the worker started (or not), then set
 * the slot up for it (or plan its restart). */
static void
spawn_end(struct sipc__spawn_job *j, int64_t now)
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
	free(j->scratch_dir);
	j->scratch_dir = NULL;
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
	sl->child_pid = (pid_t)(ch.child_pid > 0 ? ch.child_pid :
	    ch.display_pid);
	sl->containment = ch.contain;
	sl->cgroup = ch.info.cgroup;
	sl->cg_limits = ch.info.limits;
	sl->cg_err = ch.info.cgroup_err;
	/* its own copy: the provider's may be closed by a sweep while
	 * this generation's threads still read through it */
	sl->cg_fd = ch.cgroup_fd > 0 ?
	    fcntl(ch.cgroup_fd, F_DUPFD_CLOEXEC, 3) : -1;
	sipc__slot_set_state(sl, SIPC_WS_STARTING);
	sl->accepts = false;
	sl->deadlines = false;
	sl->npos = 0;
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
	/* before the exit is visible in stats (a host waits on either);
	 * a launch failure other than exec or a refused provider is a
	 * HANDSHAKE end, and sipc_wait_ready() says so with that code, not
	 * the launch's raw errno (the exit's code and the log keep it) */
	note_start_error(s, rc == SIPC_E_EXEC || rc == SIPC_E_PRODUCTION ? rc :
	    SIPC_E_HANDSHAKE);
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
	if (s->scratch_fd >= 0) {
		char name[32];

		sipc__scratch_name(name, sizeof(name), sl->idx, sl->generation, 0);
		(void)sipc__scratch_remove(s->scratch_fd, name);
	}
	schedule_restart(sl, now, 0, true);
}

static void
spawn_slot(struct sipc__slot *sl, int64_t now)
{
	struct sipc__spawn_job j;

	spawn_begin(sl, &j);
	spawn_end(&j, now);
}

/* Spawn now, or (with a batch) begin now and collect at the pass's end. */
void
sipc__slot_spawn(struct sipc__slot *sl, int64_t now,
                 struct sipc__spawn_batch *b)
{
	if (b == NULL || b->jobs == NULL)
		spawn_slot(sl, now);
	else
		spawn_begin(sl, &b->jobs[b->n++]);
}

/* Collect the pass's launches in the order begun.  Each is dated when
 * collected: its handshake time starts then, not while earlier ones
 * were being collected. */
void
sipc__slot_spawn_collect(struct sipc__spawn_batch *b)
{
	for (unsigned i = 0; b->jobs != NULL && i < b->n; i++) {
		spawn_end(&b->jobs[i], sipc__now_ms());
		sipc__bounds_note(b->jobs[i].sl->sup, b->jobs[i].sl);
	}
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
		sipc__slot_set_state(sl, SIPC_WS_FAILED);
		pthread_mutex_unlock(&sl->lock);
		sipc__move_queued(sl, false, SIPC_E_SHUTDOWN);
		return;
	}
	if (sl->last_exit.kind == SIPC_EXIT_RECYCLED) {
		/* Planned: started again at once, outside the restart
		 * policy (no backoff, no intensity, no pool budget). */
		atomic_fetch_add(&sl->recycles, 1);
		atomic_fetch_add(&s->n_recycled[sl->last_exit.recycle], 1);
		sl->respawn_at_ms = now;
		pthread_mutex_lock(&sl->lock);
		sipc__slot_set_state(sl, SIPC_WS_IDLE);
		pthread_mutex_unlock(&sl->lock);
		sipc__move_queued(sl, true, SIPC_E_UNAVAILABLE);
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
	sipc__slot_set_state(sl, cool ? SIPC_WS_COOLDOWN : SIPC_WS_IDLE);
	pthread_mutex_unlock(&sl->lock);
	if (cool)
		sipc__log(s, SIPC_LOG_WARN, sl, "restart intensity exceeded: "
		    "cooling down for %lld ms", (long long)delay);
	/* Queued work goes where it can run soon; in a cool-down, what no
	 * other slot takes fails fast instead of waiting. */
	sipc__move_queued(sl, !cool, SIPC_E_UNAVAILABLE);
}

/* Say that spare `to` took `sl`'s place (-1: none did).  Reaper. */
void
sipc__slot_note_hand_over(struct sipc__slot *sl, int to)
{
	if (to >= 0)
		sipc__log(sl->sup, SIPC_LOG_INFO, &sl->sup->slots[to], "spare "
		    "takes the place of worker %u", sl->idx);
}

/* Begin TERM -> grace -> KILL for this slot's worker tree. */
void
sipc__slot_terminate(struct sipc__slot *sl, enum sipc_term_reason why,
                     int64_t now)
{
	struct sipc_supervisor *s = sl->sup;

	if (sl->handle == NULL || sl->term_at_ms != 0)
		return;
	sl->term_reason = why;
	sl->term_at_ms = now;
	pthread_mutex_lock(&sl->lock);
	sipc__slot_set_state(sl, SIPC_WS_STOPPING);
	pthread_mutex_unlock(&sl->lock);
	sipc__log(s, why == SIPC_TERM_POLICY &&
	    atomic_load(&sl->retiring) != SIPC_RECYCLE_NONE ? SIPC_LOG_INFO :
	    SIPC_LOG_WARN, sl, "terminating worker: %s",
	    sipc_term_reason_name(why));
	(void)s->prov->stop(sl->handle, SIPC_STOP_GRACEFUL);
	if (why != SIPC_TERM_SHUTDOWN) {
		sipc__slot_note_hand_over(sl, sipc__slot_hand_over(sl));
		sipc__move_queued(sl, true, SIPC_E_UNAVAILABLE);
	}
}

/* The worker ended (the provider's try_end said so): join its threads,
 * close its descriptors, plan its restart, settle its requests. */
void
sipc__slot_on_end(struct sipc__slot *sl, struct sipc_exit *e, int64_t now)
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
	} else if (sl->term_reason == SIPC_TERM_POLICY &&
	    atomic_load(&sl->retiring) != SIPC_RECYCLE_NONE) {
		/* the planned end of a retired worker: whatever its
		 * status, our TERM (or KILL after the grace) ended it */
		e->kind = SIPC_EXIT_RECYCLED;
		e->reason = SIPC_TERM_POLICY;
		e->recycle = (enum sipc_recycle_reason)atomic_load(
		    &sl->retiring);
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
	if (sl->cg_fd >= 0)
		close(sl->cg_fd);
	sl->cg_fd = -1;
	s->prov->release(sl->handle);
	sl->handle = NULL;
	sl->end_fd = -1;
	if ((unsigned)e->kind < SIPC__EXIT_KINDS)
		atomic_fetch_add(&s->n_exits[e->kind], 1);
	pthread_mutex_lock(&sl->lock);
	sl->last_exit = *e;
	sipc__slot_set_state(sl, SIPC_WS_DRAINING);
	/* CANCELs name ids this generation held; the writer is joined, so
	 * none is sent now, and a replacement never received those ids. */
	sl->ncancels = 0;
	pthread_mutex_unlock(&sl->lock);
	sipc_exit_format(e, buf, sizeof(buf));
	sipc__log(s, e->kind == SIPC_EXIT_CLEAN ||
	    e->kind == SIPC_EXIT_RECYCLED ? SIPC_LOG_INFO : SIPC_LOG_WARN,
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
	if (!atomic_load(&s->closing))
		sipc__slot_note_hand_over(sl, sipc__slot_hand_over(sl));
	schedule_restart(sl, now, now - sl->started_ms, before_ready);
	sipc__slot_diag_tail(sl, &tail);
	sipc__settle(sl, e, tail, now);
	free(tail);
	pthread_mutex_lock(&sl->lock);
	sipc__start_ctr_unmap(sl->start_ctr);
	sl->start_ctr = NULL;
	pthread_mutex_unlock(&sl->lock);
	sipc__journal_note_worker_gone(s, sl);
	if (s->scratch_fd >= 0) {
		/* what this generation left, its requests' directories too */
		sipc__scratch_name(buf, sizeof(buf), sl->idx, sl->generation, 0);
		(void)sipc__scratch_remove(s->scratch_fd, buf);
	}
}

/* Count READY and live slots for sipc_wait_ready() and wake its waiters;
 * a ready worker clears the last start error. */
void
sipc__slot_count_ready(struct sipc_supervisor *s)
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

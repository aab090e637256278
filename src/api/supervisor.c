/*
 * supervisor.c - the public API: create, submit, call, stats, destroy.
 * Which worker's ring a request goes to is dispatch.c's.
 *
 * Threads: every public function may be called from any host thread;
 * sipc_submit, sipc_stats_get also from completion callbacks, where the
 * blocking calls return -EDEADLK (api.c).  Every entry point counts
 * itself in `users` against sipc_destroy().  Dispatch takes a slot
 * lock and, nested inside it, the table lock (the one order).  Blocking
 * submits wait on the slot's cv_space or the table's cv (memory ceiling)
 * in short slices, re-choosing the slot each time, so one stalled worker
 * never holds a request that another worker has room for.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bsd/stdlib.h>

#include "os/os.h"
#include "base/base.h"
#include "request/request.h"
#include "provider/provider.h"
#include "pool/pool.h"
#include "wire/wire.h"


/* Reserve payload bytes under the memory ceiling, leaving the reply
 * reserve free, and none while a reader waits for reply room: replies
 * drain the pool, new requests would only fill it (table.c). */
static int
reserve_memory(struct sipc_supervisor *s, struct sipc__req *q)
{
	size_t reserve = sipc__mem_reply_reserve(s);
	struct timespec ts;
	int rc = 0;

	pthread_mutex_lock(&s->table.lock);
	while (s->table.reply_waiters > 0 ||
	    !sipc__mem_try_take(s, q->len, s->cfg.mem_ceiling - reserve)) {
		if (atomic_load(&s->closing)) {
			rc = SIPC_E_SHUTDOWN;
			break;
		}
		if ((q->flags & SIPC_REQ_NOWAIT) || sipc__lib_thread ||
		    (q->deadline_ms != 0 && sipc__now_ms() >= q->deadline_ms)) {
			rc = SIPC_E_FULL;
			break;
		}
		sipc__abstime(&ts, SIPC__WAIT_SLICE_MS);
		s->table.mem_waiters++;
		pthread_cond_timedwait(&s->table.cv, &s->table.lock, &ts);
		s->table.mem_waiters--;
	}
	if (rc == 0)
		sipc__table_insert(&s->table, q);
	pthread_mutex_unlock(&s->table.lock);
	return rc;
}

/*
 * A blocking submit that waited for the memory ceiling until its deadline
 * gets REJECTED / SIPC_E_FULL through its callback, as one that waited
 * for ring room does (sipc.h).  It never entered the table or the
 * journal: the caller learns the outcome before sipc_submit() returns.
 */
static void
reject_unreserved(struct sipc_supervisor *s, struct sipc__req *q)
{
	struct sipc_result res;
	bool was;

	memset(&res, 0, sizeof(res));
	res.reply_fd = -1;
	res.outcome = SIPC_OUTCOME_REJECTED;
	res.error = SIPC_E_FULL;
	res.request_id = q->id;

	atomic_fetch_add(&s->n_submitted, 1);
	atomic_fetch_add(&s->n_rejected, 1);
	was = sipc__callback_rules_begin();
	q->done(q->done_arg, &res);
	sipc__lib_thread = was;
}

/* sipc_submit(), and sipc_call() with `cr` set: its caller waits for
 * the outcome anyway, so it may write the request itself (writer.c) and
 * read the reply itself (callread.c; cr->sl says whether it may). */
static int
submit(sipc_supervisor *s, const struct sipc_request *req, sipc_done_fn done,
       void *arg, struct sipc__callread *cr, uint64_t *ret_id)
{
	struct sipc_request fdreq;
	uint8_t doclen[SIPC_FRAME_FDLEN_LEN];
	struct sipc__req *q;
	uint64_t id, size;
	int docfd = -1;
	bool was;
	int rc;

	if (s == NULL || req == NULL || done == NULL ||
	    (req->payload == NULL && req->len > 0))
		return -EINVAL;
	if ((req->flags & SIPC_REQ_FD) && (req->payload != NULL ||
	    req->len > 0))
		return -EINVAL;
	if ((req->flags & SIPC_REQ_SCRATCH) && s->scratch_fd < 0)
		return -EINVAL;
	if (req->flags & ~(unsigned)(SIPC_REQ_IDEMPOTENT | SIPC_REQ_NOWAIT |
	    SIPC_REQ_SCRATCH | SIPC_REQ_FD |
	    SIPC_REQ_LEND))
		return -EINVAL;
	if (req->len > s->cfg.max_payload)
		return SIPC_E_TOOBIG;
	if (req->idempotency_key != NULL && strlen(req->idempotency_key) > 255)
		return -EINVAL;
	if ((rc = sipc__api_enter(s)) < 0)
		return rc;
	if (req->flags & SIPC_REQ_FD) {
		/* The frame's payload is the document's length; the
		 * document itself is the duplicate, which goes with it. */
		if ((rc = sipc__docfd_take(req->fd, &docfd, &size)) < 0)
			goto out;
		sipc__le64_put(doclen, size);
		fdreq = *req;
		fdreq.payload = doclen;
		fdreq.len = sizeof(doclen);
		fdreq.flags &= ~(unsigned)SIPC_REQ_LEND;
		req = &fdreq;
	}
	q = sipc__req_new(s, req, atomic_fetch_add(&s->next_id, 1), done, arg,
	    cr != NULL);
	if (q == NULL) {
		if (docfd >= 0)
			(void)close(docfd);
		rc = -ENOMEM;
		goto out;
	}
	q->fd = docfd;
	if ((rc = reserve_memory(s, q)) != 0) {
		if (rc == SIPC_E_FULL && !(q->flags & SIPC_REQ_NOWAIT) &&
		    !sipc__lib_thread) {
			/* A blocking submit's deadline passed under the
			 * ceiling: the same outcome as under a full ring. */
			if (ret_id != NULL)
				*ret_id = q->id;
			reject_unreserved(s, q);
			rc = 0;
		} else if (rc == SIPC_E_FULL) {
			/* Refused at once: counted like a refusal for want
			 * of ring room (one submitted, one rejected); which
			 * bound it met is not the caller's to tell. */
			atomic_fetch_add(&s->n_submitted, 1);
			atomic_fetch_add(&s->n_rejected, 1);
		}
		sipc__req_discard(s, q);
		goto out;
	}
	atomic_fetch_add(&s->n_submitted, 1);
	/* In the table now: a deadline or a queue budget that ends before
	 * the reaper's next wake-up needs a wake-up of its own (X2:
	 * TIMEOUT at the deadline). */
	if ((q->deadline_ms != 0 &&
	    q->deadline_ms < atomic_load(&s->timer_at_ms)) ||
	    (q->queue_deadline_ms != 0 &&
	    q->queue_deadline_ms < atomic_load(&s->timer_at_ms)))
		sipc__reaper_wake(s);
	/* Once dispatched, q may be answered and freed at any moment. */
	id = q->id;
	sipc__req_ref(q);
	/* Not journalled as accepted: never dispatched (REJECTED below). */
	if ((rc = sipc__journal_note_accepted(s, q)) == 0)
		rc = sipc__dispatch_new(s, q, cr);
	if (rc == SIPC_E_FULL && ((q->flags & SIPC_REQ_NOWAIT) ||
	    sipc__lib_thread)) {
		/* Never accepted: no callback, the caller has the error. */
		pthread_mutex_lock(&s->table.lock);
		q->delivered = true;
		q->state = SIPC__R_GONE;
		s->table.pending--;
		sipc__table_remove(&s->table, q);
		pthread_mutex_unlock(&s->table.lock);
		atomic_fetch_add(&s->n_rejected, 1);
		sipc__journal_note_refused(s, q);
		sipc__req_unref(s, q);
		sipc__req_unref(s, q);
		goto out;
	}
	if (ret_id != NULL)
		*ret_id = id;
	if (rc != 0) {
		/* Accepted but never sent: the one outcome is REJECTED. */
		pthread_mutex_lock(&s->table.lock);
		q->state = SIPC__R_GONE;
		sipc__table_remove(&s->table, q);
		pthread_mutex_unlock(&s->table.lock);
		was = sipc__callback_rules_begin();
		sipc__outcome(s, q, SIPC_OUTCOME_REJECTED,
		    rc == SIPC_E_TIMEOUT ? SIPC_E_FULL : rc, false, NULL, 0, 0);
		sipc__lib_thread = was;
		sipc__req_unref(s, q);
		rc = 0;
	}
	sipc__req_unref(s, q);             /* this function's reference */
out:
	sipc__api_leave(s);
	return rc;
}

int
sipc_submit(sipc_supervisor *s, const struct sipc_request *req,
            sipc_done_fn done, void *arg, uint64_t *ret_id)
{
	return submit(s, req, done, arg, NULL, ret_id);
}

/* ------------------------------------------------------------ call */

/* One sipc_call(): the outcome, and the event its delivery sets (the
 * callback runs once, on whichever thread delivers). */
struct call_wait {
	struct sipc__event ev;
	struct sipc_result res;
};

static void
call_done(void *arg, struct sipc_result *res)
{
	struct call_wait *w = arg;

	w->res = *res;                 /* takes over reply and diag_tail */
	sipc__event_set(&w->ev);       /* last touch: w may be gone after */
}

int
sipc_call(sipc_supervisor *s, const struct sipc_request *req,
          struct sipc_result *ret)
{
	struct sipc__callread cr = { .sl = NULL };
	struct call_wait w;
	int rc;

	if (ret == NULL)
		return -EINVAL;
	if ((rc = sipc__api_blocking_ok()) < 0)
		return rc;
	memset(&w, 0, sizeof(w));
	sipc__event_init(&w.ev);
	rc = submit(s, req, call_done, &w, &cr, NULL);
	if (rc == SIPC_E_FULL || rc == SIPC_E_SHUTDOWN) {
		memset(&w.res, 0, sizeof(w.res));
		w.res.reply_fd = -1;
		w.res.outcome = SIPC_OUTCOME_REJECTED;
		w.res.error = rc;
		*ret = w.res;
		return 0;
	}
	if (rc == 0) {
		/* Took the socket: read the reply here rather than be
		 * woken by the reader for it (callread.c, caller reads). */
		if (cr.sl != NULL)
			sipc__callread_run(cr.sl, &w.ev, cr.deadline_ms);
		sipc__event_wait(&w.ev);
		*ret = w.res;
	}
	return rc;
}

int
sipc_cancel(sipc_supervisor *s, uint64_t id)
{
	int rc;
	bool was;

	if (s == NULL)
		return -EINVAL;
	if ((rc = sipc__api_enter(s)) < 0)
		return rc;
	/* An outcome delivered here runs its callback on this thread. */
	was = sipc__callback_rules_begin();
	rc = sipc__cancel(s, id);
	sipc__lib_thread = was;
	sipc__api_leave(s);
	return rc;
}

/* ------------------------------------------------------------ create */

static char *
xstrdup(const char *p)
{
	return p ? strdup(p) : NULL;
}

/* argv: the configured one, or { path, NULL }.  The environment: the
 * allow-listed host variables, the explicit entries, and the channel
 * convention; nothing else of the host's environment. */
static int
build_argv_env(struct sipc_supervisor *s, const struct sipc_config *cfg)
{
	size_t n = 0, na = 0, ns = 0, i, k = 0;
	const char *v;

	if (cfg->argv != NULL)
		while (cfg->argv[n] != NULL)
			n++;
	if ((s->argv = calloc(n + 2, sizeof(char *))) == NULL)
		return -ENOMEM;
	if (n == 0)
		s->argv[0] = xstrdup(cfg->path);
	for (i = 0; i < n; i++)
		if ((s->argv[i] = strdup(cfg->argv[i])) == NULL)
			return -ENOMEM;
	if (cfg->env_allow != NULL)
		while (cfg->env_allow[na] != NULL)
			na++;
	if (cfg->env_set != NULL)
		while (cfg->env_set[ns] != NULL)
			ns++;
	if ((s->envp = calloc(na + ns + 4, sizeof(char *))) == NULL)
		return -ENOMEM;
	for (i = 0; i < na; i++) {
		if ((v = getenv(cfg->env_allow[i])) == NULL)
			continue;
		if (asprintf(&s->envp[k++], "%s=%s", cfg->env_allow[i], v) < 0)
			return -ENOMEM;
	}
	for (i = 0; i < ns; i++)
		if ((s->envp[k++] = strdup(cfg->env_set[i])) == NULL)
			return -ENOMEM;
	/* The worker runtime refuses requests over max_payload too. */
	if ((s->envp[k++] = strdup("SIPC_FD=3")) == NULL ||
	    asprintf(&s->envp[k++], "SIPC_PARENT_PID=%ld", (long)getpid()) < 0 ||
	    asprintf(&s->envp[k++], "SIPC_MAX_PAYLOAD=%u", cfg->max_payload) < 0)
		return -ENOMEM;
	return 0;
}

static int
slots_init(struct sipc_supervisor *s)
{
	unsigned i;
	int rc;

	if ((s->slots = calloc(s->nslots, sizeof(*s->slots))) == NULL)
		return -ENOMEM;
	for (i = 0; i < s->nslots; i++) {
		struct sipc__slot *sl = &s->slots[i];

		sl->sup = s;
		sl->idx = i;
		sl->proto_fd = sl->diag_fd = sl->wake_fd = sl->end_fd = -1;
		sl->cg_fd = -1;
		sl->rd_give_fd = sl->rd_epfd = -1;
		pthread_mutex_init(&sl->lock, NULL);
		sipc__cond_init(&sl->cv_writer);
		sipc__cond_init(&sl->cv_space);
		sipc__cond_init(&sl->cv_read);
		sipc__slot_set_state(sl, SIPC_WS_IDLE);   /* calloc: from IDLE */
		atomic_init(&sl->spare, i >= s->cfg.workers);
		if ((rc = sipc__ring_init(&sl->ring, s->cfg.ring_frames,
		    s->cfg.ring_bytes)) < 0)
			return rc;
		sl->cancels_cap = s->cfg.max_inflight * 2;
		sl->cancels = reallocarray(NULL, sl->cancels_cap, sizeof(uint64_t));
		sl->diag_tail = s->cfg.diag_tail_bytes ?
		    malloc(s->cfg.diag_tail_bytes) : NULL;
		sl->policy = malloc(sizeof(struct sipc__restart));
		if (sl->cancels == NULL || sl->policy == NULL ||
		    (s->cfg.diag_tail_bytes && sl->diag_tail == NULL))
			return -ENOMEM;
		sipc__restart_init(sl->policy, &s->cfg);
	}
	return 0;
}

static void
sup_free(struct sipc_supervisor *s)
{
	unsigned i;

	if (s == NULL)
		return;
	for (i = 0; s->slots != NULL && i < s->nslots; i++) {
		struct sipc__slot *sl = &s->slots[i];

		sipc__ring_fini(&sl->ring);
		free(sl->cancels);
		free(sl->diag_tail);
		free(sl->policy);
		pthread_mutex_destroy(&sl->lock);
		pthread_cond_destroy(&sl->cv_writer);
		pthread_cond_destroy(&sl->cv_space);
		pthread_cond_destroy(&sl->cv_read);
	}
	free(s->slots);
	for (i = 0; s->argv != NULL && s->argv[i] != NULL; i++)
		free(s->argv[i]);
	free(s->argv);
	for (i = 0; s->envp != NULL && s->envp[i] != NULL; i++)
		free(s->envp[i]);
	free(s->envp);
	free((char *)s->cfg.path);
	free((char *)s->cfg.provider);
	free((char *)s->cfg.state_dir);
	free((char *)s->cfg.init_path);
	free((char *)s->cfg.probe_path);
	free((char *)s->cfg.scratch_root);
	/* every worker has ended: what is left of their directories goes */
	if (s->scratch_fd >= 0) {
		close(s->scratch_fd);
		(void)sipc__scratch_remove(AT_FDCWD, s->scratch_path);
	}
	free(s->pool_budget);
	sipc__table_fini(&s->table);
	if (s->owner_held)
		sipc__owner_release();
	/* after the reaper: every handle of this state is released */
	if (s->prov != NULL)
		s->prov->destroy(s->prov_state);
	if (s->sig_fd >= 0)
		close(s->sig_fd);
	if (s->timer_fd >= 0)
		close(s->timer_fd);
	if (s->evt_fd >= 0)
		close(s->evt_fd);
	pthread_mutex_destroy(&s->rlock);
	pthread_mutex_destroy(&s->spare_lock);
	pthread_cond_destroy(&s->rcv);
	free(s);
}

/* The CPUs this process may run on (dispatch.c scales a worker's time
 * per reply by them); 1 when the mask cannot be read. */
static unsigned
usable_cpus(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set) < 0 ||
	    (n = CPU_COUNT(&set)) < 1)
		return 1;
	return (unsigned)n;
}

static int
sup_alloc(const struct sipc_config *cfg, struct sipc_supervisor **ret)
{
	struct sipc_supervisor *s;
	int rc;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return -ENOMEM;
	s->sig_fd = s->timer_fd = s->evt_fd = -1;
	atomic_init(&s->timer_at_ms, INT64_MAX);
	pthread_mutex_init(&s->rlock, NULL);
	pthread_mutex_init(&s->spare_lock, NULL);
	sipc__cond_init(&s->rcv);
	s->cfg = *cfg;
	s->cfg.argv = NULL;
	s->cfg.env_allow = s->cfg.env_set = NULL;
	s->cfg.path = xstrdup(cfg->path);
	s->cfg.provider = xstrdup(cfg->provider ? cfg->provider : "local");
	s->cfg.state_dir = xstrdup(cfg->state_dir);
	s->cfg.init_path = xstrdup(cfg->init_path);
	s->cfg.probe_path = xstrdup(cfg->probe_path);
	s->cfg.scratch_root = xstrdup(cfg->scratch_root);
	s->scratch_fd = -1;
	s->scratch_uid = s->scratch_gid = -1;
	s->nslots = cfg->workers + cfg->spares;
	s->ncpu = usable_cpus();
	atomic_init(&s->next_id, 1);
	*ret = s;
	if (s->cfg.path == NULL || s->cfg.provider == NULL ||
	    (cfg->state_dir != NULL && s->cfg.state_dir == NULL) ||
	    (cfg->init_path != NULL && s->cfg.init_path == NULL) ||
	    (cfg->probe_path != NULL && s->cfg.probe_path == NULL) ||
	    (cfg->scratch_root != NULL && s->cfg.scratch_root == NULL))
		return -ENOMEM;
	if ((rc = sipc__table_init(&s->table, cfg->workers *
	    cfg->ring_frames, cfg->mem_ceiling / 4)) < 0)
		return rc;
	if ((s->pool_budget = malloc(sizeof(struct sipc__pool_budget))) == NULL)
		return -ENOMEM;
	sipc__pool_budget_init(s->pool_budget, cfg);
	if ((rc = build_argv_env(s, cfg)) < 0)
		return rc;
	return slots_init(s);
}

/* The provider's state for this supervisor (local: its cgroup v2),
 * and what it says of its cgroup, said once. */
static int
provider_open(struct sipc_supervisor *s, const struct sipc_provider_ops *p,
              char *errbuf, size_t errlen)
{
	struct sipc_provider_info in;
	int rc;

	if ((rc = p->create(&s->cfg, &s->prov_state, errbuf, errlen)) < 0)
		return rc;
	s->prov = p;
	if (p->info == NULL)
		return 0;
	memset(&in, 0, sizeof(in));     /* a provider may leave text unset */
	p->info(s->prov_state, &in);
	sipc__log(s, in.cgroup || s->cfg.cgroup == SIPC_CGROUP_OFF ?
	    SIPC_LOG_INFO : SIPC_LOG_WARN, NULL, "cgroup: %s (%s)",
	    in.cgroup ? "provided" : "not provided", in.text);
	return 0;
}

/* sipc__provider_end_dead()'s word on one crashed supervisor's cgroup
 * that still held processes.  sipc_create()'s thread. */
static void
say_dead(void *arg, const char *path, unsigned procs, int err)
{
	sipc__log(arg, SIPC_LOG_WARN, NULL, "cgroup %s of a crashed "
	    "supervisor held %u process(es): %s", path, procs, err < 0 ?
	    strerror(-err) : "killed, removed");
}

/* 0, or the errno a launch of `path` would fail with.  access(X_OK)
 * alone passes a directory (search permission), which execve() refuses
 * with EACCES: without this, every start would fail instead of create. */
static int
worker_executable(const char *path)
{
	struct stat sb;

	if (access(path, X_OK) < 0 || stat(path, &sb) < 0)
		return errno;
	return S_ISREG(sb.st_mode) ? 0 : EACCES;
}

/* The start-up probe, with a scratch directory of its own ("probe" in
 * the instance's, made as a worker generation's is, removed after)
 * when workers get one: it runs as they do. */
static int
probe_run(struct sipc_supervisor *s, const struct sipc_provider_ops *prov,
          char *errbuf, size_t errlen)
{
	unsigned required = sipc__provider_required(&s->cfg);
	char dir[sizeof(s->scratch_path) + 8];
	int rc;

	if (required == 0 || s->scratch_fd < 0)
		return sipc__startprobe_run(prov, s->prov_state, &s->cfg,
		    required, NULL, errbuf, errlen);
	snprintf(dir, sizeof(dir), "%s/probe", s->scratch_path);
	if ((rc = sipc__scratch_mkdir(s->scratch_fd, "probe", s->scratch_uid,
	    s->scratch_gid)) < 0) {
		snprintf(errbuf, errlen, "scratch directory %s: %s", dir,
		    strerror(-rc));
		return rc;
	}
	rc = sipc__startprobe_run(prov, s->prov_state, &s->cfg, required, dir,
	    errbuf, errlen);
	(void)sipc__scratch_remove(s->scratch_fd, "probe");
	return rc;
}

/* The instance's scratch directory; a root supervisor's sandbox workers
 * (not root: sipc__sandbox_worker_ids) get theirs as their own. */
static int
scratch_open(struct sipc_supervisor *s, const struct sipc_config *cfg,
             const struct sipc_provider_ops *prov)
{
	uid_t u;
	gid_t g;
	int rc;

	if ((rc = sipc__scratch_make(cfg->scratch_root, s->scratch_path,
	    sizeof(s->scratch_path), &s->scratch_fd)) < 0)
		return rc;
	if (prov != &sipc__provider_sandbox ||
	    !sipc__sandbox_worker_ids(cfg, &u, &g))
		return 0;
	s->scratch_uid = (int)u;
	s->scratch_gid = (int)g;
	return sipc__scratch_share(s->scratch_fd, s->scratch_gid);
}

int
sipc_create(const struct sipc_config *cfg, char *errbuf, size_t errlen,
            sipc_supervisor **ret)
{
	const struct sipc_provider_ops *prov = NULL;
	struct sipc_supervisor *s = NULL;
	char dummy[1];
	int rc;

	if (errbuf == NULL || errlen == 0) {
		errbuf = dummy;
		errlen = sizeof(dummy);
	}
	errbuf[0] = '\0';
	if (cfg == NULL || ret == NULL)
		return -EINVAL;
	if ((rc = sipc__config_validate(cfg, errbuf, errlen)) < 0)
		return rc;
	/* Fail closed before anything is allocated or spawned. */
	if ((rc = sipc__provider_select(cfg, errbuf, errlen, &prov)) < 0)
		return rc;
	if ((rc = worker_executable(cfg->path)) != 0) {
		snprintf(errbuf, errlen, "cannot execute worker %s: %s",
		    cfg->path, strerror(rc));
		return SIPC_E_EXEC;
	}
	if ((rc = sup_alloc(cfg, &s)) < 0)
		goto fail;
	if (cfg->owner && (rc = sipc__owner_hold(s)) < 0) {
		if (rc == -EBUSY)
			snprintf(errbuf, errlen, "owner mode: another owner-mode "
			    "supervisor exists in this process");
		goto fail;
	}
	if (cfg->scratch_root != NULL &&
	    (rc = scratch_open(s, cfg, prov)) < 0) {
		snprintf(errbuf, errlen, "scratch_root: %s: %s",
		    cfg->scratch_root, strerror(-rc));
		rc = SIPC_E_CONFIG;
		goto fail;
	}
	if ((rc = provider_open(s, prov, errbuf, errlen)) < 0)
		goto fail;
	if (cfg->state_dir != NULL &&
	    (rc = sipc__durable_open(s, errbuf, errlen)) < 0)
		goto fail;
	/* Only after the leftover verdicts (TERM first to a proven worker):
	 * what crashed supervisors left in their cgroups is killed. */
	(void)sipc__provider_end_dead(prov, s->prov_state,
	    !sipc__durable_leftovers_kept(s), say_dead, s);
	/* Declared is not proven: each required guarantee is probed. */
	if ((rc = probe_run(s, prov, errbuf, errlen)) < 0)
		goto fail;
	/* Outside owner mode no process-wide signal state is touched:
	 * the reaper watches the workers' pidfds. */
	if ((rc = sipc__reaper_start(s)) < 0)
		goto fail;
	pthread_mutex_lock(&s->rlock);
	while (!s->initial_round)
		pthread_cond_wait(&s->rcv, &s->rlock);
	pthread_mutex_unlock(&s->rlock);
	*ret = s;
	return 0;
fail:
	if (errbuf[0] == '\0')
		snprintf(errbuf, errlen, "%s", sipc_strerror(rc));
	if (s != NULL) {
		if (s->owner_held)
			sipc__owner_unblock();
		sipc__durable_close(s);
		sup_free(s);
	}
	return rc;
}

int
sipc_wait_ready(sipc_supervisor *s, unsigned n, unsigned timeout_ms)
{
	struct timespec ts;
	int rc;

	if (s == NULL || n > s->nslots)
		return -EINVAL;
	if ((rc = sipc__api_blocking_ok()) < 0 || (rc = sipc__api_enter(s)) < 0)
		return rc;
	sipc__abstime(&ts, timeout_ms);
	pthread_mutex_lock(&s->rlock);
	while (s->ready_count < n) {
		/* sipc_destroy() broadcasts rcv after setting closing. */
		if (atomic_load(&s->closing)) {
			rc = SIPC_E_SHUTDOWN;
			break;
		}
		/* Nothing running and the last start failed: say why now. */
		if (s->live_count == 0 && s->start_err != 0) {
			rc = s->start_err;
			break;
		}
		if (pthread_cond_timedwait(&s->rcv, &s->rlock, &ts) ==
		    ETIMEDOUT) {
			rc = s->ready_count >= n ? 0 :
			    s->start_err != 0 ? s->start_err : -ETIMEDOUT;
			break;
		}
	}
	pthread_mutex_unlock(&s->rlock);
	sipc__api_leave(s);
	return rc;
}

/* ------------------------------------------------------------ stats */

int
sipc_stats_get(sipc_supervisor *s, struct sipc_stats *ret)
{
	struct sipc_worker_stats *w;
	struct sipc_provider_info in;
	unsigned i;
	int rc;

	if (s == NULL || ret == NULL)
		return -EINVAL;
	if ((rc = sipc__api_enter(s)) < 0)
		return rc;
	if ((w = calloc(s->nslots, sizeof(*w))) == NULL) {
		sipc__api_leave(s);
		return -ENOMEM;
	}
	for (i = 0; i < s->nslots; i++) {
		struct sipc__slot *sl = &s->slots[i];

		pthread_mutex_lock(&sl->lock);
		w[i].worker_id = sl->idx;
		w[i].generation = sl->generation;
		w[i].pid = sl->pid;
		w[i].state = sl->state;
		w[i].queued = sl->ring.count;
		w[i].last_exit = sl->last_exit;
		w[i].containment = sl->containment;
		w[i].cgroup = sl->cgroup;
		w[i].limits = sl->cg_limits;
		w[i].cgroup_error = sl->cg_err;
		pthread_mutex_unlock(&sl->lock);
		w[i].inflight = atomic_load(&sl->inflight);
		w[i].bytes_in = atomic_load(&sl->bytes_in);
		w[i].bytes_out = atomic_load(&sl->bytes_out);
		w[i].frames_in = atomic_load(&sl->frames_in);
		w[i].frames_out = atomic_load(&sl->frames_out);
		w[i].completed = atomic_load(&sl->completed);
		w[i].protocol_violations = atomic_load(&sl->violations);
		w[i].restarts = atomic_load(&sl->restarts);
		w[i].recycles = atomic_load(&sl->recycles);
		w[i].spare = atomic_load(&sl->spare);
		w[i].retiring = atomic_load(&sl->retiring) != SIPC_RECYCLE_NONE;
	}
	memset(ret, 0, sizeof(*ret));
	ret->nworkers = s->nslots;
	ret->workers = w;
	ret->submitted = atomic_load(&s->n_submitted);
	ret->completed_ok = atomic_load(&s->n_ok);
	ret->worker_errors = atomic_load(&s->n_werr);
	ret->rejected = atomic_load(&s->n_rejected);
	ret->timeouts = atomic_load(&s->n_timeout);
	ret->unknown = atomic_load(&s->n_unknown);
	ret->requeued = atomic_load(&s->n_requeued);
	ret->retried = atomic_load(&s->n_retried);
	ret->protocol_violations = atomic_load(&s->n_violations);
	ret->restarts = atomic_load(&s->n_restarts);
	ret->bounds_expired = atomic_load(&s->n_bounds_expired);
	ret->queue_us_sum = atomic_load(&s->queue_us_sum);
	ret->run_us_sum = atomic_load(&s->run_us_sum);
	ret->cpu_us_sum = atomic_load(&s->cpu_us_sum);
	ret->peak_rss_kb_sum = atomic_load(&s->peak_kb_sum);
	ret->cpu_known = atomic_load(&s->n_cpu_known);
	ret->peak_rss_known = atomic_load(&s->n_peak_known);
	ret->recycled_requests = atomic_load(
	    &s->n_recycled[SIPC_RECYCLE_REQUESTS]);
	ret->recycled_age = atomic_load(&s->n_recycled[SIPC_RECYCLE_AGE]);
	ret->recycled_rss = atomic_load(&s->n_recycled[SIPC_RECYCLE_RSS]);
	ret->spare_takeovers = atomic_load(&s->n_takeovers);
	pthread_mutex_lock(&s->table.lock);
	ret->mem_held = s->table.mem_held;
	ret->pending = s->table.pending;
	pthread_mutex_unlock(&s->table.lock);
	sipc__journal_note_stats(s, ret);
	ret->mem_ceiling = s->cfg.mem_ceiling;
	/* sipc_stats_get(3): an empty cgroup_path comes with a reason,
	 * also from a provider that has no info op (it is optional). */
	memset(&in, 0, sizeof(in));
	if (s->prov->info != NULL)
		s->prov->info(s->prov_state, &in);
	else
		snprintf(in.text, sizeof(in.text), "provider \"%s\" reports "
		    "no cgroup", s->prov->name);
	if (in.cgroup)
		snprintf(ret->cgroup_path, sizeof(ret->cgroup_path), "%s",
		    in.text);
	else
		snprintf(ret->cgroup_why, sizeof(ret->cgroup_why), "%s",
		    in.text[0] != '\0' ? in.text : "not reported");
	sipc__api_leave(s);
	return 0;
}

void
sipc_stats_release(struct sipc_stats *st)
{
	if (st == NULL)
		return;
	free(st->workers);
	st->workers = NULL;
	st->nworkers = 0;
}

/* ------------------------------------------------------------ destroy */

/* No new submit, none blocked in the library: what destroy begins with. */
static void
destroy_close(sipc_supervisor *s)
{
	atomic_store(&s->closing, true);
	/* Waiters in sipc_wait_ready() see `closing` and leave; submitters
	 * blocked on room wake within a slice and leave. */
	pthread_mutex_lock(&s->rlock);
	pthread_cond_broadcast(&s->rcv);
	pthread_mutex_unlock(&s->rlock);
	while (atomic_load(&s->users) > 0)
		usleep(1000);
}

/* Wait up to `ms` for every pending request's outcome. */
static void
destroy_wait_pending(sipc_supervisor *s, unsigned ms)
{
	struct timespec ts;

	sipc__abstime(&ts, ms);
	pthread_mutex_lock(&s->table.lock);
	while (s->table.pending > 0)
		if (pthread_cond_timedwait(&s->table.cv, &s->table.lock,
		    &ts) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&s->table.lock);
}

static void
destroy_end(sipc_supervisor *s)
{
	sipc__reaper_shutdown(s);
	sipc__durable_close(s);
	sup_free(s);
}

int
sipc_destroy(sipc_supervisor *s)
{
	int rc;

	if (s == NULL)
		return 0;
	if ((rc = sipc__api_blocking_ok()) < 0)
		return rc;
	destroy_close(s);
	destroy_wait_pending(s, s->cfg.drain_ms);
	destroy_end(s);
	return 0;
}

/*
 * End the pool now.  Unwritten requests are REJECTED here, on this
 * thread under a callback's rules (their callbacks may not block in the
 * library); every written one gets a CANCEL, and the workers have up to
 * cancel_grace_ms to answer (a worker on the runtime sees it through
 * sipc_worker_cancel_fd()); then every worker is sent TERM at once,
 * KILL after grace_ms, and what is still unanswered ends UNKNOWN (or
 * REJECTED if provably never started).
 */
int
sipc_destroy_now(sipc_supervisor *s)
{
	unsigned i, asked = 0;
	bool was;
	int rc;

	if (s == NULL)
		return 0;
	if ((rc = sipc__api_blocking_ok()) < 0)
		return rc;
	destroy_close(s);
	atomic_store(&s->end_now, true);
	was = sipc__callback_rules_begin();
	for (i = 0; i < s->nslots; i++)
		sipc__reject_queued(&s->slots[i], SIPC_E_SHUTDOWN);
	sipc__lib_thread = was;
	for (i = 0; i < s->nslots; i++)
		asked += sipc__cancel_written(&s->slots[i]);
	if (asked > 0)
		destroy_wait_pending(s, s->cfg.cancel_grace_ms);
	destroy_end(s);
	return 0;
}

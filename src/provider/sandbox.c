/*
 * sandbox.c - the sandbox provider: each worker runs under bubblewrap
 * (bwrap) in namespaces of its own, with sipc-init as PID 1.
 *
 *   supervisor --clone--> bwrap (outer, our child: the end descriptor)
 *                            `--> sipc-init (PID 1 of the sandbox's PID
 *                                 namespace; its host pid is proven)
 *                                   `--> worker and its descendants
 *
 * What each worker gets (bwrap --unshare-all --unshare-user
 * --disable-userns): PID, mount, network, IPC, UTS and cgroup
 * namespaces and a user namespace it cannot nest another in; as root,
 * bwrap is started as sandbox_uid/sandbox_gid (never 0), so nothing of
 * the sandbox is root on the host; Landlock rules where the kernel has
 * them (sipc-init); a read-only view of only the files the worker's
 * program and sipc-init need to start (provider/sandbox_argv.c: made once at create;
 * all of /usr and the two programs' directories when those cannot be
 * told, said in the launch's note); a fresh /proc of its own PID namespace, a minimal /dev
 * and an empty /tmp; only loopback networking; a new session; and
 * exactly the launch environment (the core's allow-list), passed as
 * bwrap's own environment rather than as --setenv arguments, whose
 * values any user could read in /proc/<pid>/cmdline.  Descriptors 0-4 are
 * the worker's (as for the local provider), bwrap passes 3 and 4 through.
 *
 * How it ends, and why nothing is lost:
 *   - sipc-init reports the worker's exact wait status on the report
 *     socket and exits; the kernel then kills what is left in the PID
 *     namespace; bwrap, which waits for its PID 1, exits last.  So the
 *     outer bwrap's pidfd polling readable means "tree gone", and the
 *     status comes from sipc-init (bwrap itself folds a signal into
 *     128+n, which cannot be told from an exit code).
 *   - GRACEFUL (TERM): to sipc-init through its pidfd; it passes TERM to
 *     every process of the namespace.  FORCED (KILL): cgroup.kill when
 *     the worker has a cgroup, and SIGKILL to sipc-init, which empties the
 *     namespace.  The outer bwrap is never signalled first: killed, it
 *     would take the status with it (its child dies of --die-with-parent).
 *   - sipc-init's host pid comes from the credentials of its first report
 *     (SO_PASSCRED: the kernel, not the sender, writes them).  It is
 *     proven before use: a pidfd is opened on it, then its parent must
 *     be the outer bwrap, our unreaped child, which cannot have forked
 *     again (a zombie, or a live bwrap that forked only its PID 1), and
 *     its PID namespace must not be ours.  Every signal then goes by
 *     that pidfd: nothing not proven to be this sandbox's is reached.
 *   - The outer bwrap is cloned into the worker's cgroup (when the
 *     supervisor has one, made by create as for the local adapter), so
 *     every process of the sandbox is in it: limits hold inside, and
 *     cgroup.kill ends it all.
 *   - try_end only observes (WNOWAIT): bwrap stays our zombie, its pid
 *     pinned, until sweep kills what may be left (the init, by pidfd),
 *     reaps it and removes the cgroup.
 *   - The journalled identity (outer bwrap and init, each pid + start
 *     time; the init's PID namespace; the boot id) lets a later instance
 *     prove a leftover sandbox before ending it (leftover).
 *
 * What it does not give is in PRODUCTION_BOUNDARY.md: one kernel shared
 * with the host (not a VM boundary), a system-call filter that is not
 * proven by the start-up probe, and one sandbox_uid for every sandbox
 * of a root host.
 *
 * Threads (sipc_provider.h): create, destroy and leftover on the thread
 * of sipc_create() / sipc_destroy(), info on any (the state is read-only
 * between create and destroy); every per-worker op on the reaper
 * thread, so a handle needs no lock.  The bwrap path is resolved once
 * per process (provider/sandbox_argv.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <linux/landlock.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "os/os.h"
#include "wire/wire.h"
#include "provider/provider.h"

#ifndef SIPC_LIBEXECDIR
#define SIPC_LIBEXECDIR "/usr/local/libexec/sipc"
#endif
/* Bound on sipc-init's first report (bwrap set up, worker exec'd). */
#define INIT_START_MS 10000

/* One supervisor's state: its cgroup (os/os.h), or why it has none,
 * and the view of its worker program, made once (its path is fixed). */
struct sbx_state {
	struct sipc__cg_state cgs;
	struct sipc__sbx_view view;
	uid_t uid;                    /* the sandbox's identity (a root */
	gid_t gid;                    /* supervisor's: sandbox_uid/gid) */
	char *ro_paths;               /* sandbox_ro_paths, for every view */
	struct sipc__sbx_policy pol;  /* its lists are refuse and allow */
	char *refuse, *allow;
};

/* The highest Landlock ABI of this kernel, 0 when it has none. */
static int
landlock_abi(void)
{
	long v = syscall(SYS_landlock_create_ruleset, NULL, 0,
	    LANDLOCK_CREATE_RULESET_VERSION);

	return v > 0 ? (int)v : 0;
}

bool
sipc__sandbox_worker_ids(const struct sipc_config *cfg, uid_t *ret_uid,
                         gid_t *ret_gid)
{
	if (geteuid() != 0)
		return false;
	*ret_uid = cfg != NULL ? (uid_t)cfg->sandbox_uid : 65534;
	*ret_gid = cfg != NULL ? (gid_t)cfg->sandbox_gid : 65534;
	return true;
}

/* The end (os/os.h): pidfd is the outer bwrap's, the end descriptor
 * until release; sig_fd sipc-init's pidfd once proven (every signal
 * goes there), -1 before or when it was gone already; report_fd its
 * reports; fold128 since bwrap folds its PID 1's signal n into 128+n. */
struct sbx_proc {
	struct sipc__wend w;          /* first: the end ops take the handle */
	pid_t bwrap_pid;              /* outer bwrap: our child */
	pid_t init_pid;               /* sipc-init, host pid (proven) */
	struct sipc__sbx_id id;
};
_Static_assert(offsetof(struct sbx_proc, w) == 0, "handle is its end");

/* ---------------------------------------------------------------- launch */

/* A launch between its start (bwrap cloned) and its finish (sipc-init
 * reported the worker started, or not).  Reaper thread, like a handle. */
struct sbx_pending {
	const struct sipc_provider_launch *l;
	const struct sbx_state *st;   /* NULL: no cgroup (tests) */
	struct sbx_proc *p;
	struct sipc__launch_fds f;
	struct sipc__spawned sd;
	int cg_err;
	int start_err;                /* errno of a launch that could not
	                               * even start (no bwrap): finish says */
	char view_note[96];           /* the view's, for the channel */
};

static void
pending_drop(struct sbx_pending *q)
{
	sipc__launch_fds_close(&q->f);
	if (q->p != NULL)
		sipc__wend_drop(&q->p->w); /* its child is reaped */
	free(q->p);
	free(q);
}

static const char *
sbx_init(const struct sipc_provider_launch *l)
{
	return l->init_path ? l->init_path : SIPC_LIBEXECDIR "/sipc-init";
}

static int
sbx_clone(struct sbx_pending *q, const char *bwrap)
{
	const struct sipc_provider_launch *l = q->l;
	const char *init = sbx_init(l);
	struct sipc__launch_fds *f = &q->f;
	struct sipc__spawn sp = { .path = bwrap,
	    .flags = SIPC__SPAWN_SETPGRP, .nproc_limit = l->nproc_limit,
	    .fds = { f->devnull, f->dp[1], f->dp[1], f->sv[1], f->rp[1] } };
	const struct sipc__sbx_view *view;
	struct sipc__sbx_view *own = NULL;
	struct sipc__sbx_argv *a;
	char **env = NULL;
	int rc;

	if ((a = calloc(1, sizeof(*a))) == NULL)
		return -ENOMEM;
	/* The supervisor's view, or one for this launch alone (tests
	 * without a state, a worker whose arguments run another program:
	 * sipc__sbx_view_widen()); another program (the start-up probe)
	 * gets the workers' view and its own files, so it is judged in
	 * what the workers see. */
	view = q->st != NULL ? &q->st->view : NULL;
	if (view == NULL || strcmp(view->path, l->path) != 0 ||
	    strcmp(view->init, init) != 0 ||
	    sipc__sbx_view_widens(view, l->argv) != NULL) {
		if ((own = malloc(sizeof(*own))) == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		if ((rc = sipc__sbx_view_make(own, init, l->path,
		    q->st != NULL ? q->st->ro_paths : NULL)) < 0) {
			free(own);
			own = NULL;
			goto out;
		}
		sipc__sbx_view_widen(own, l->argv);
		own->landlock = landlock_abi() > 0;
		view = own;
		if (q->st != NULL && q->st->view.path[0] != '\0' &&
		    strcmp(q->st->view.path, l->path) != 0 &&
		    (rc = sipc__sbx_view_join(own, &q->st->view)) < 0)
			goto out;
	}
	snprintf(q->view_note, sizeof(q->view_note), "%s", view->note);
	if (q->st != NULL)
		a->pol = q->st->pol;
	if ((rc = sipc__sbx_argv_build(a, bwrap, view, l->scratch_dir,
	    l->argv)) < 0)
		goto out;
	/* Never root: as root, bwrap starts as the sandbox's uid and gid. */
	if (geteuid() == 0 &&
	    !(sipc__sbx_test_skip & SIPC__SBX_SKIP_SETID)) {
		sp.flags |= SIPC__SPAWN_SETID;
		sp.uid = q->st != NULL ? q->st->uid : 65534;
		sp.gid = q->st != NULL ? q->st->gid : 65534;
	}
	if ((env = sipc__ns_env(l->envp)) == NULL) {
		rc = -ENOMEM;
		goto out;
	}
	sp.argv = (char *const *)a->v;
	sp.envp = env;
	if (q->p->w.cg != NULL) {
		sp.flags |= SIPC__SPAWN_CGROUP;
		sp.cgroup_fd = sipc__cgw_fd(q->p->w.cg);
	}
	if ((rc = sipc__spawn_start(&sp, &q->sd)) == 0)
		sipc__launch_fds_close_child(f);
out:
	/* the child has its own copies */
	free(env);
	sipc__sbx_argv_free(a);
	free(a);
	if (own != NULL)
		sipc__sbx_view_free(own);
	free(own);
	return rc;
}

static int
sbx_launch_start(void *state, const struct sipc_provider_launch *l,
                 void **ret_pending)
{
	const struct sbx_state *st = state;
	struct sbx_pending *q;
	const char *bwrap;
	int rc;

	if ((q = calloc(1, sizeof(*q))) == NULL)
		return -ENOMEM;
	q->l = l;
	q->st = st;
	if ((rc = sipc__launch_fds_open(&q->f, true)) < 0)
		goto fail;
	if ((q->p = calloc(1, sizeof(*q->p))) == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	sipc__wend_init(&q->p->w);
	q->p->w.fold128 = true;
	/* Without bwrap, the worker or sipc-init the launch fails as an
	 * exec failure would: the finish reports it with its errno. */
	if ((rc = sipc__sandbox_bwrap(&bwrap)) < 0 ||
	    (rc = access(l->path, X_OK) < 0 ? -errno : 0) < 0 ||
	    (rc = access(sbx_init(l), X_OK) < 0 ? -errno : 0) < 0) {
		q->start_err = -rc;
		sipc__launch_fds_close_child(&q->f);  /* the fork window */
		*ret_pending = q;
		return 0;
	}
	/* A configured limit is enforced or the worker does not start. */
	if (st != NULL && st->cgs.cg != NULL && (rc = sipc__cgw_create(st->cgs.cg,
	    l->worker_id, l->generation, &q->p->w.cg)) < 0) {
		if (sipc__cg_limits(st->cgs.cg) != 0)
			goto fail;
		q->cg_err = rc;
	}
	if ((rc = sipc__wend_prepare(&q->p->w)) < 0)
		goto fail;
	if ((rc = sbx_clone(q, bwrap)) < 0)
		goto fail;
	*ret_pending = q;
	return 0;
fail:
	pending_drop(q);
	return rc;
}

/* Its PID namespace's inode, from /proc/<pid>/ns/pid.  0 or -errno. */
static int
pidns_ino(pid_t pid, uint64_t *ret)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
	if (stat(path, &st) < 0)
		return -errno;
	*ret = (uint64_t)st.st_ino;
	return 0;
}

/*
 * Prove that `pid` (from the credentials of sipc-init's report) is this
 * sandbox's init and pin it: a pidfd first, then its parent must be our
 * outer bwrap (our unreaped child, so its pid names nobody else) and its
 * PID namespace not ours.  0 with p->init_* and p->id set, or -errno.
 */
static int
init_prove(struct sbx_proc *p, pid_t pid)
{
	struct sipc__proc_stat st;
	uint64_t self_ns = 0;
	int fd, rc;

	if (pid <= 0)
		return -EPROTO;
	if ((fd = pidfd_open(pid, 0)) < 0)
		return -errno;
	if ((rc = sipc__proc_stat(pid, &st)) < 0 ||
	    (rc = pidns_ino(pid, &p->id.pidns)) < 0 ||
	    (rc = pidns_ino(getpid(), &self_ns)) < 0)
		goto fail;
	if (st.ppid != p->bwrap_pid || p->id.pidns == self_ns) {
		rc = -EPERM;
		goto fail;
	}
	p->init_pid = pid;
	p->w.sig_fd = fd;
	p->id.init_pid = pid;
	p->id.init_start = st.starttime;
	p->id.bwrap_pid = p->bwrap_pid;
	if ((rc = sipc__proc_starttime(p->bwrap_pid, &p->id.bwrap_start)) < 0 ||
	    (rc = sipc__boot_id(p->id.boot_id)) < 0)
		goto fail_pinned;
	return 0;
fail_pinned:
	p->w.sig_fd = -1;
fail:
	close(fd);
	return rc;
}

/* Kill the sandbox that did not start and reap its bwrap. */
static void
start_abort(struct sbx_proc *p)
{
	if (p->w.sig_fd >= 0)
		(void)pidfd_send_signal(p->w.sig_fd, SIGKILL, NULL, 0);
	(void)pidfd_send_signal(p->w.pidfd, SIGKILL, NULL, 0);
	(void)sipc__pidfd_reap_within(p->w.pidfd, SIPC__REAP_MS);
	close(p->w.pidfd);
	p->w.pidfd = -1;
	if (p->w.sig_fd >= 0)
		close(p->w.sig_fd);
	p->w.sig_fd = -1;
}

/* bwrap exec'd; wait for sipc-init to say the worker did (or not). */
static int
sbx_started(struct sbx_pending *q, int *ret_errno)
{
	struct sbx_proc *p = q->p;
	struct sipc__init_msg m;
	pid_t from = 0;
	int rc;

	if ((rc = sipc__spawn_finish(&q->sd, ret_errno)) < 0)
		return rc;
	p->bwrap_pid = q->sd.pid;
	p->w.pidfd = q->sd.pidfd;
	rc = sipc__init_report_wait(q->f.rp[0], p->w.pidfd, INIT_START_MS, &m,
	    &from);
	if (rc == 1 && m.kind == SIPC__INIT_STARTED) {
		/* An init already gone (its worker ended at once) took the
		 * namespace with it: nothing is left to signal, and bwrap's
		 * end and the init's report tell the rest. */
		if ((rc = init_prove(p, from)) == 0 || rc == -ESRCH ||
		    rc == -ENOENT)
			return 0;
		start_abort(p);
		return rc;
	}
	if (rc == 1 && m.kind == SIPC__INIT_EXEC_FAILED) {
		*ret_errno = m.value;
		rc = SIPC_E_EXEC;
	} else {
		/* bwrap could not set the sandbox up (its reason is on the
		 * diagnostics pipe), or sipc-init did not run. */
		rc = rc < 0 ? rc : -EPROTO;
	}
	start_abort(p);
	return rc;
}

static int
sbx_launch_finish(void *pending, struct sipc_provider_chan *ret_chan,
                  void **ret_handle, int *ret_errno)
{
	struct sbx_pending *q = pending;
	struct sbx_proc *p = q->p;
	int rc;

	if (q->start_err != 0) {
		*ret_errno = q->start_err;
		rc = SIPC_E_EXEC;
		goto fail;
	}
	if ((rc = sbx_started(q, ret_errno)) < 0)
		goto fail;
	p->w.report_fd = q->f.rp[0];
	q->f.rp[0] = -1;
	sipc__wend_chan(&p->w, &q->f, q->st != NULL ? q->st->cgs.cg : NULL,
	    q->cg_err, ret_chan);
	ret_chan->display_pid = p->init_pid;
	ret_chan->child_pid = p->bwrap_pid;
	ret_chan->contain = SIPC_CONTAIN_PID_NAMESPACE;
	snprintf(ret_chan->note, sizeof(ret_chan->note), "%s", q->view_note);
	sipc__sbx_id_encode(&p->id, &ret_chan->id);
	*ret_handle = p;
	q->p = NULL;
	pending_drop(q);
	return 0;
fail:
	pending_drop(q);
	return rc;
}

static int
sbx_launch(void *state, const struct sipc_provider_launch *l,
           struct sipc_provider_chan *ret_chan, void **ret_handle,
           int *ret_errno)
{
	void *q;
	int rc;

	if ((rc = sbx_launch_start(state, l, &q)) < 0)
		return rc;
	return sbx_launch_finish(q, ret_chan, ret_handle, ret_errno);
}

/* ------------------------------------------------- end (os/worker_end.c), leftover */

/*
 * A sandbox of a dead supervisor instance, proven by its init: same
 * boot, a process now at init_pid pinned by a pidfd before the proof,
 * with the recorded start time and PID namespace.  Its init gets TERM
 * (passed on to the whole sandbox), then KILL after grace_ms, which
 * empties the namespace.  The outer bwrap is not signalled: it is not
 * ours to wait for, and it ends with its PID 1.
 */
int
sipc__sandbox_leftover(const struct sipc__sbx_id *id, unsigned grace_ms)
{
	char boot[SIPC__BOOT_ID_LEN + 1];
	uint64_t start = 0, ns = 0;
	int fd, rc = 0;

	if (id->init_pid <= 0 || sipc__boot_id(boot) < 0 ||
	    strcmp(boot, id->boot_id) != 0)
		return 0;               /* another boot: long gone */
	if ((fd = pidfd_open(id->init_pid, 0)) < 0)
		return errno == ESRCH ? 0 : -errno;
	if (sipc__proc_starttime(id->init_pid, &start) < 0 ||
	    start != id->init_start || pidns_ino(id->init_pid, &ns) < 0 ||
	    ns != id->pidns)
		goto out;               /* not proven: left alone */
	/* ESRCH from here on: it ended meanwhile, which is the goal. */
	rc = 1;
	if (pidfd_send_signal(fd, SIGTERM, NULL, 0) < 0 && errno != ESRCH)
		rc = -errno;
	else if (sipc__pidfd_gone_within(fd, (int)grace_ms))
		goto out;
	else if (pidfd_send_signal(fd, SIGKILL, NULL, 0) < 0 &&
	    errno != ESRCH)
		rc = -errno;
	else if (!sipc__pidfd_gone_within(fd, SIPC__INIT_END_MS))
		rc = -ETIMEDOUT;
out:
	close(fd);
	return rc;
}

const struct sipc__sbx_id *
sipc__sandbox_id(const void *handle)
{
	const struct sbx_proc *p = handle;

	return &p->id;
}

/* ------------------------------------------------------------ identity */

/* Layout (little-endian): version 1, bwrap pid, bwrap start time, init
 * pid, init start time, PID namespace inode, boot id (36 bytes). */
#define SBX_ID_V1 1
#define SBX_ID_LEN (1 + 4 + 8 + 4 + 8 + 8 + SIPC__BOOT_ID_LEN)
_Static_assert(SBX_ID_LEN <= SIPC_PROVIDER_ID_MAX, "identity fits");

void
sipc__sbx_id_encode(const struct sipc__sbx_id *k, struct sipc_provider_id *ret)
{
	uint8_t *b = ret->bytes;

	memset(ret, 0, sizeof(*ret));
	b[0] = SBX_ID_V1;
	sipc__le32_put(b + 1, (uint32_t)k->bwrap_pid);
	sipc__le64_put(b + 5, k->bwrap_start);
	sipc__le32_put(b + 13, (uint32_t)k->init_pid);
	sipc__le64_put(b + 17, k->init_start);
	sipc__le64_put(b + 25, k->pidns);
	memcpy(b + 33, k->boot_id, SIPC__BOOT_ID_LEN);
	ret->len = SBX_ID_LEN;
}

int
sipc__sbx_id_decode(const struct sipc_provider_id *id, struct sipc__sbx_id *ret)
{
	const uint8_t *b = id->bytes;

	if (id->len != SBX_ID_LEN || b[0] != SBX_ID_V1)
		return -EINVAL;
	memset(ret, 0, sizeof(*ret));
	ret->bwrap_pid = (pid_t)sipc__le32_get(b + 1);
	ret->bwrap_start = sipc__le64_get(b + 5);
	ret->init_pid = (pid_t)sipc__le32_get(b + 13);
	ret->init_start = sipc__le64_get(b + 17);
	ret->pidns = sipc__le64_get(b + 25);
	memcpy(ret->boot_id, b + 33, SIPC__BOOT_ID_LEN);
	return 0;
}

static int
sbx_leftover(void *state, const struct sipc_provider_id *id,
             unsigned grace_ms)
{
	struct sipc__sbx_id k;
	int rc;

	(void)state;
	if ((rc = sipc__sbx_id_decode(id, &k)) < 0)
		return rc;
	return sipc__sandbox_leftover(&k, grace_ms);
}

/* ------------------------------------------------------------ state */

/* The worker and sipc-init reachable by the sandbox's ids: 0, or
 * SIPC_E_EXEC with errbuf naming what is not. */
static int
ids_reach(const struct sipc_config *cfg, uid_t uid, gid_t gid, char *errbuf,
          size_t errlen)
{
	const char *prog[2] = { cfg->path, cfg->init_path ? cfg->init_path :
	    SIPC_LIBEXECDIR "/sipc-init" };
	char why[512];

	for (size_t i = 0; i < 2; i++) {
		if (prog[i] == NULL ||
		    sipc__sbx_reachable(prog[i], uid, gid, why, sizeof(why)) !=
		    -EACCES)
			continue;
		snprintf(errbuf, errlen, "provider sandbox: %s, the ids the "
		    "workers run as (sandbox_uid, sandbox_gid)", why);
		return SIPC_E_EXEC;
	}
	return 0;
}

static void
policy_free(struct sbx_state *st)
{
	free(st->refuse);
	free(st->allow);
	st->refuse = st->allow = NULL;
}

/* The limits and the system-call lists of the configuration (validated
 * by the configuration module), each refused name checked with the
 * libseccomp that sipc-init installs them with. */
static int
policy_make(const struct sipc_config *cfg, struct sbx_state *st,
            char *errbuf, size_t errlen)
{
	const char *init = cfg->init_path ? cfg->init_path :
	    SIPC_LIBEXECDIR "/sipc-init";
	int rc;

	sipc__sbx_policy_from_config(cfg, &st->pol);
	if ((cfg->syscalls_refuse != NULL &&
	    (st->refuse = strdup(cfg->syscalls_refuse)) == NULL) ||
	    (cfg->syscalls_allow != NULL &&
	    (st->allow = strdup(cfg->syscalls_allow)) == NULL)) {
		policy_free(st);
		return -ENOMEM;
	}
	st->pol.refuse = st->refuse;
	st->pol.allow = st->allow;
	st->pol.audit = cfg->syscalls_audit;
	if (st->refuse != NULL && st->refuse[0] != '\0' &&
	    (rc = sipc__sbx_syscalls_check(init, st->refuse, errbuf,
	    errlen)) < 0) {
		policy_free(st);
		return rc;
	}
	return 0;
}

/* bwrap found (once), then the supervisor's cgroup v2 as for the local
 * adapter (os/os.h): made, or why not. */
static int
sbx_create(const struct sipc_config *cfg, void **ret_state, char *errbuf,
           size_t errlen)
{
	struct sbx_state *st;
	const char *bwrap;
	int rc;

	if ((rc = sipc__sandbox_bwrap(&bwrap)) < 0) {
		snprintf(errbuf, errlen, "provider sandbox: %s: %s (install "
		    "bubblewrap there, owned by root, not writable by group "
		    "or others along its directories)", SIPC__BWRAP_DEFAULT,
		    rc == -EPERM ? "is not to be trusted" : strerror(-rc));
		return SIPC_E_EXEC;
	}
	if ((st = calloc(1, sizeof(*st))) == NULL)
		return -ENOMEM;
	if ((rc = policy_make(cfg, st, errbuf, errlen)) < 0) {
		free(st);
		return rc;
	}
	/* as root the workers run as sandbox_uid: their programs must be
	 * theirs to run, or nothing would start */
	if (sipc__sandbox_worker_ids(cfg, &st->uid, &st->gid) &&
	    (rc = ids_reach(cfg, st->uid, st->gid, errbuf, errlen)) < 0) {
		policy_free(st);
		free(st);
		return rc;
	}
	if (cfg->sandbox_ro_paths != NULL && cfg->sandbox_ro_paths[0] != '\0' &&
	    (st->ro_paths = strdup(cfg->sandbox_ro_paths)) == NULL) {
		policy_free(st);
		free(st);
		return -ENOMEM;
	}
	/* Without a program (a host's own provider tests) each launch makes
	 * its view. */
	if (cfg->path != NULL && (rc = sipc__sbx_view_make(&st->view,
	    cfg->init_path ? cfg->init_path : SIPC_LIBEXECDIR "/sipc-init",
	    cfg->path, st->ro_paths)) < 0) {
		free(st->ro_paths);
		policy_free(st);
		free(st);
		return rc;
	}
	/* as each worker's launch would: the probe then gets that view */
	if (cfg->path != NULL)
		sipc__sbx_view_widen(&st->view, cfg->argv);
	st->view.landlock = landlock_abi() > 0;
	if ((rc = sipc__cg_state_init(cfg, &st->cgs, errbuf, errlen)) < 0) {
		sipc__sbx_view_free(&st->view);
		free(st->ro_paths);
		policy_free(st);
		free(st);
		return rc;
	}
	*ret_state = st;
	return 0;
}

static void
sbx_destroy(void *state)
{
	struct sbx_state *st = state;

	if (st == NULL)
		return;
	sipc__cg_state_fini(&st->cgs);
	sipc__sbx_view_free(&st->view);
	free(st->ro_paths);
	policy_free(st);
	free(st);
}

static void
sbx_info(void *state, struct sipc_provider_info *ret)
{
	struct sbx_state *st = state;

	sipc__cg_state_info(&st->cgs, ret);
}

const struct sipc__cg_state *
sipc__sandbox_cg_state(const void *state)
{
	const struct sbx_state *st = state;

	return st != NULL ? &st->cgs : NULL;
}

unsigned
sipc__sbx_host_filters(void)
{
	char line[128];
	unsigned n = 0;
	FILE *f = fopen("/proc/self/status", "re");

	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "Seccomp_filters: %u", &n) == 1)
			break;
	if (f != NULL)
		fclose(f);
	return n;
}

/* What this provider applies for cfg on this machine, each proven by
 * the start-up probe before sipc_create() returns (provider/probe.c):
 * namespaces, secrets and tree containment wherever bwrap runs; no
 * privilege always (never root, no capability, no_new_privs, no nested
 * user namespace); a separate user where the supervisor is root (the
 * worker runs as sandbox_uid); filesystem rules where the kernel has
 * Landlock; the system-call filter and the hard limits always (sipc-init
 * sets them).  The cgroup limits (resource_limits) hold where the
 * supervisor's cgroup has the controllers, the host's arrangement, so
 * they are not declared. */
static unsigned
sbx_declared(const struct sipc_config *cfg)
{
	unsigned g = SIPC_G_PID_NAMESPACE | SIPC_G_MOUNT_NAMESPACE |
	    SIPC_G_NETWORK_ISOLATION | SIPC_G_NO_INHERITED_SECRETS |
	    SIPC_G_TREE_CONTAINMENT | SIPC_G_NO_PRIVILEGE |
	    SIPC_G_SYSCALL_FILTER | SIPC_G_LIMITS;
	uid_t u;
	gid_t g2;

	if (sipc__sandbox_worker_ids(cfg, &u, &g2))
		g |= SIPC_G_SEPARATE_USER;
	if (landlock_abi() > 0)
		g |= SIPC_G_FILESYSTEM_RULES;
	return g;
}

const struct sipc_provider_ops sipc__provider_sandbox = {
	.abi = SIPC_PROVIDER_ABI,
	.name = "sandbox",
	.declared = sbx_declared,
	.create = sbx_create,
	.destroy = sbx_destroy,
	.info = sbx_info,
	.launch = sbx_launch,
	.launch_start = sbx_launch_start,
	.launch_finish = sbx_launch_finish,
	.try_end = sipc__wend_try_end,
	.stop = sipc__wend_stop,
	.sweep = sipc__wend_sweep,
	.release = sipc__wend_release,
	.leftover = sbx_leftover,
};

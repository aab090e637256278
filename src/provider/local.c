/*
 * local.c - the local adapter: workers are children of the process that
 * links sipc, cloned with a pidfd (clone.c: clone() with CLONE_VM and
 * CLONE_VFORK by default, clone3() where a cgroup needs it), and watched
 * only through that pidfd: the library never reads SIGCHLD.
 *
 * What the host can still do: execve() makes every process report to its
 * parent with SIGCHLD again (the kernel resets exit_signal at exec), so
 * the host's SIGCHLD handler also hears about our children, and a host
 * wait(-1), or SIGCHLD set to SIG_IGN, can reap our direct child.  In the
 * namespace modes that child is sipc-init, which reports the worker's
 * exact wait status over a socket before it exits: nothing is lost.  In
 * process-group mode the worker itself is taken; its end is then LOST
 * (status unknown, and its group is not signalled since its id is no
 * longer pinned).
 *
 * Containment, strongest first (sipc.h, enum sipc_containment):
 *   PID_NAMESPACE / USER_NAMESPACE: the child is sipc-init, PID 1 of a new
 *     PID namespace; it starts the worker, reaps orphans, passes TERM on,
 *     reports the worker's wait status over a socket, and exits when the
 *     worker does.  When it exits the kernel kills the whole namespace
 *     before its pidfd even becomes readable, so "observed ended" means
 *     "tree gone".  KILL is one SIGKILL to the init.
 *   PROCESS_GROUP: the worker leads a group; TERM/KILL go to the leader
 *     by pidfd and to the group while the leader, unreaped, pins its id.
 *
 * Cgroup (any mode, when the supervisor has one: os/os.h): the child is
 * cloned into a cgroup of its own for this generation.  KILL also writes
 * cgroup.kill, and every end, once the leader is observed, kills what is
 * left in it (setsid() escapees of process-group mode included), reads
 * its OOM-kill count (an OOM-killed worker ends SIPC_EXIT_OOM) and
 * removes it.  A cgroup names no stranger, so unlike a group id it stays
 * safe to kill after the leader was reaped behind our back.
 *
 * It gives NO mount, network, user-credential or secret isolation and
 * declares no guarantee (PRODUCTION_BOUNDARY.md); provider selection
 * refuses it outside development and test configurations.
 *
 * Ownership rules (never a stranger):
 *   - a pid is signalled only through its pidfd; a group only after
 *     proof that the leader is still our unreaped child (running, or a
 *     zombie answering waitid(WNOWAIT)).  A leader reaped by someone else
 *     (ECHILD) is "lost": its group id is free and may name a stranger,
 *     so nothing more is signalled and the end is classified LOST;
 *   - a handle released before its end kills and reaps first.
 *
 * Identity (journalled, sipc_provider.h): pid, group, start time and
 * boot id (os/os.h); a leftover is proven against all four while pinned
 * by a pidfd, and terminated with its group (sipc__ident_terminate).
 *
 * Threads: create/destroy/info as sipc_provider.h says; the reaper
 * thread calls every per-worker op; no state is shared between handles,
 * and the per-supervisor state (its cgroup) is read-only between create
 * and destroy.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <unistd.h>

#include "os/os.h"
#include "init/init_proto.h"
#include "provider/provider.h"

#ifndef SIPC_LIBEXECDIR
#define SIPC_LIBEXECDIR "/usr/local/libexec/sipc"
#endif
/* The protocol descriptor number every worker finds its channel on. */
#define SIPC_PROTO_FD 3
/* Bound on sipc-init's first report (worker exec'd or not). */
#define INIT_START_MS 10000


/* The end (os/os.h): pidfd and sig_fd are the leader's (or the
 * init's) pidfd, the end descriptor until release; report_fd the init's
 * reports (namespace modes); pgid the leader's group in process-group
 * mode only. */
struct local_proc {
	struct sipc__wend w;          /* first: the end ops take the handle */
	pid_t pid;                    /* leader (or init), host pid */
	enum sipc_containment mode;
};
_Static_assert(offsetof(struct local_proc, w) == 0, "handle is its end");

/* argv for sipc-init: init, worker path, the worker's argv. */
static char **
ns_argv(const char *init, const struct sipc_provider_launch *l)
{
	size_t n = 0, i;
	char **a;

	while (l->argv[n] != NULL)
		n++;
	if ((a = calloc(n + 3, sizeof(*a))) == NULL)
		return NULL;
	a[0] = (char *)init;
	a[1] = (char *)l->path;
	for (i = 0; i < n; i++)
		a[2 + i] = l->argv[i];
	return a;
}

/* A launch between its start (child cloned) and its finish (the worker
 * known started, or not).  Reaper thread, like a handle. */
struct local_pending {
	const struct sipc_provider_launch *l;
	const struct sipc__cg_state *st;
	const char *init;
	struct local_proc *p;
	struct sipc__launch_fds f;
	struct sipc__spawned sd;      /* the child of the current mode */
	size_t mode;                  /* index in mode_order */
	char why[96];                 /* why a stronger mode was refused */
	int cg_err;
};

static const enum sipc_containment mode_order[] = {
	SIPC_CONTAIN_PID_NAMESPACE, SIPC_CONTAIN_USER_NAMESPACE,
	SIPC_CONTAIN_PROCESS_GROUP };
#define NMODES (sizeof(mode_order) / sizeof(mode_order[0]))

/* Clone the child for this mode; it execs while the caller goes on. */
static int
mode_start(struct local_pending *q, enum sipc_containment mode)
{
	const struct sipc_provider_launch *l = q->l;
	struct sipc__launch_fds *f = &q->f;
	struct sipc__spawn sp = { .path = l->path, .argv = l->argv,
	    .envp = l->envp, .flags = SIPC__SPAWN_SETPGRP,
	    .nproc_limit = l->nproc_limit,
	    .fds = { f->devnull, f->dp[1], f->dp[1], f->sv[1], -1 } };
	char **argv = NULL, **env = NULL;
	int rc;

	if (mode != SIPC_CONTAIN_PROCESS_GROUP) {
		sp.flags |= SIPC__SPAWN_NEWPID;
		if (mode == SIPC_CONTAIN_USER_NAMESPACE)
			sp.flags |= SIPC__SPAWN_NEWUSER;
		sp.fds[4] = f->rp[1];
		if ((argv = ns_argv(q->init, l)) == NULL ||
		    (env = sipc__ns_env(l->envp)) == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		sp.path = q->init;
		sp.argv = argv;
		sp.envp = env;
	}
	if (q->p->w.cg != NULL) {
		sp.flags |= SIPC__SPAWN_CGROUP;
		sp.cgroup_fd = sipc__cgw_fd(q->p->w.cg);
	}
	if ((rc = sipc__spawn_start(&sp, &q->sd)) == 0)
		sipc__launch_fds_close_child(f);
out:
	/* the child has its own copy of both */
	free(argv);
	free(env);
	return rc;
}

/* Wait for mode_start's child to exec and, in the namespace modes, for
 * sipc-init to say whether the worker itself could be exec'd. */
static int
mode_finish(struct local_pending *q, enum sipc_containment mode,
            int *ret_errno)
{
	struct local_proc *p = q->p;
	struct sipc__init_msg m;
	int rc;

	if ((rc = sipc__spawn_finish(&q->sd, ret_errno)) < 0)
		return rc;
	p->pid = q->sd.pid;
	p->w.pidfd = p->w.sig_fd = q->sd.pidfd;
	p->mode = mode;
	if (mode == SIPC_CONTAIN_PROCESS_GROUP) {
		p->w.pgid = p->pid;
		return 0;
	}
	rc = sipc__init_report_wait(q->f.rp[0], p->w.pidfd, INIT_START_MS, &m,
	    NULL);
	if (rc == 1 && m.kind == SIPC__INIT_STARTED)
		return 0;
	if (rc == 1 && m.kind == SIPC__INIT_EXEC_FAILED) {
		*ret_errno = m.value;
		rc = SIPC_E_EXEC;
	} else {
		rc = rc < 0 ? rc : -EPROTO;
	}
	(void)pidfd_send_signal(p->w.pidfd, SIGKILL, NULL, 0);
	(void)sipc__pidfd_reap_within(p->w.pidfd, SIPC__REAP_MS);
	close(p->w.pidfd);
	p->w.pidfd = p->w.sig_fd = -1;
	return rc;
}

/* May AUTO try the next, weaker mode after this error? */
static bool
mode_refused(int rc)
{
	return rc == -EPERM || rc == -EINVAL || rc == -ENOSPC ||
	    rc == -EUSERS || rc == -EACCES || rc == -ENOSYS;
}

/* Remember the first mode's refusal (for the log); true if AUTO may go
 * on to the next mode. */
static bool
mode_failed(struct local_pending *q, int rc)
{
	if (q->why[0] == '\0')
		snprintf(q->why, sizeof(q->why), "%s: %s",
		    sipc_containment_name(mode_order[q->mode]),
		    sipc_strerror(rc));
	return q->l->contain == SIPC_CONTAIN_AUTO && mode_refused(rc);
}

/* Start the child in the first mode from q->mode on that the launch asks
 * for and this machine allows (AUTO: the strongest that clones). */
static int
start_from(struct local_pending *q)
{
	const struct sipc_provider_launch *l = q->l;
	enum sipc_containment m;
	int rc = -EINVAL;

	for (; q->mode < NMODES; q->mode++) {
		m = mode_order[q->mode];
		if (l->contain != SIPC_CONTAIN_AUTO && l->contain != m)
			continue;
		if (m != SIPC_CONTAIN_PROCESS_GROUP &&
		    access(q->init, X_OK) < 0) {
			rc = -errno;
			snprintf(q->why, sizeof(q->why), "%s: %s", q->init,
			    strerror(errno));
			if (l->contain == SIPC_CONTAIN_AUTO)
				continue;
			return rc;
		}
		if ((rc = mode_start(q, m)) == 0 || !mode_failed(q, rc))
			return rc;
	}
	return rc;
}

/* The identity journalled for a started worker (os/os.h layout).  A
 * start time or boot id that cannot be read stays 0 / empty: the
 * identity then never proves, and a leftover is left alone. */
static void
local_id(const struct local_proc *p, struct sipc_provider_id *ret)
{
	struct sipc__ident k;

	memset(&k, 0, sizeof(k));
	k.pid = p->pid;
	k.pgid = p->pid;              /* it leads its group in every mode */
	if (sipc__proc_starttime(p->pid, &k.starttime) < 0)
		k.starttime = 0;
	if (sipc__boot_id(k.boot_id) < 0)
		k.boot_id[0] = '\0';
	sipc__ident_to_id(&k, ret);
}

static void
pending_drop(struct local_pending *q)
{
	sipc__launch_fds_close(&q->f);
	if (q->p != NULL)
		sipc__wend_drop(&q->p->w); /* its child is reaped */
	free(q->p);
	free(q);
}

static int
local_launch_start(void *state, const struct sipc_provider_launch *l,
                   void **ret_pending)
{
	const struct sipc__cg_state *st = state;
	struct local_pending *q;
	int rc;

	if ((unsigned)l->contain > SIPC_CONTAIN_PROCESS_GROUP)
		return -EINVAL;
	if ((q = calloc(1, sizeof(*q))) == NULL)
		return -ENOMEM;
	q->l = l;
	q->st = st;
	q->init = l->init_path ? l->init_path : SIPC_LIBEXECDIR "/sipc-init";
	if ((rc = sipc__launch_fds_open(&q->f, false)) < 0)
		goto fail;
	if ((q->p = calloc(1, sizeof(*q->p))) == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	sipc__wend_init(&q->p->w);
	/* A configured limit is enforced or the worker does not start;
	 * without one, a worker that gets no cgroup runs, reported. */
	/* no state (a test driving the ops by hand): no cgroup */
	if (st != NULL && st->cg != NULL &&
	    (rc = sipc__cgw_create(st->cg, l->worker_id,
	    l->generation, &q->p->w.cg)) < 0) {
		if (sipc__cg_limits(st->cg) != 0)
			goto fail;
		q->cg_err = rc;
	}
	if ((rc = sipc__wend_prepare(&q->p->w)) < 0)
		goto fail;
	if ((rc = start_from(q)) < 0)
		goto fail;
	*ret_pending = q;
	return 0;
fail:
	pending_drop(q);
	return rc;
}

static int
local_launch_finish(void *pending, struct sipc_provider_chan *ret_chan,
                    void **ret_handle, int *ret_errno)
{
	struct local_pending *q = pending;
	struct local_proc *p = q->p;
	int rc;

	/* A mode refused only at exec (say, a non-executable init) falls
	 * back like one refused at clone, but synchronously. */
	while ((rc = mode_finish(q, mode_order[q->mode], ret_errno)) < 0) {
		if (!mode_failed(q, rc))
			goto fail;
		/* fresh descriptors: the child's ends went at its start */
		sipc__launch_fds_close(&q->f);
		q->mode++;
		if ((rc = sipc__launch_fds_open(&q->f, false)) < 0 || (rc = start_from(q)) < 0)
			goto fail;
	}
	if (p->mode != SIPC_CONTAIN_PROCESS_GROUP) {
		p->w.report_fd = q->f.rp[0];
		q->f.rp[0] = -1;
	}
	sipc__wend_chan(&p->w, &q->f, q->st != NULL ? q->st->cg : NULL,
	    q->cg_err, ret_chan);
	ret_chan->display_pid = p->pid;
	ret_chan->child_pid = p->pid;
	ret_chan->contain = p->mode;
	if (p->mode != SIPC_CONTAIN_PID_NAMESPACE && q->why[0] != '\0')
		snprintf(ret_chan->note, sizeof(ret_chan->note),
		    "stronger mode refused: %.72s", q->why);
	local_id(p, &ret_chan->id);
	*ret_handle = p;
	q->p = NULL;
	pending_drop(q);
	return 0;
fail:
	pending_drop(q);
	return rc;
}

static int
local_launch(void *state, const struct sipc_provider_launch *l,
             struct sipc_provider_chan *ret_chan, void **ret_handle,
             int *ret_errno)
{
	void *q;
	int rc;

	if ((rc = local_launch_start(state, l, &q)) < 0)
		return rc;
	return local_launch_finish(q, ret_chan, ret_handle, ret_errno);
}

/* A journalled local identity of a previous instance: proven (pinned by
 * a pidfd, then pid + start time + boot id + group checked) and then
 * terminated with its group, or left alone (os/os.h). */
static int
local_leftover(void *state, const struct sipc_provider_id *id,
               unsigned grace_ms)
{
	struct sipc__ident k;
	int rc;

	(void)state;
	if ((rc = sipc__ident_from_id(id, &k)) < 0)
		return rc;
	return sipc__ident_terminate(&k, grace_ms);
}

/* It declares no guarantee (no `declared` op): see the top of the file. */
const struct sipc_provider_ops sipc__provider_local = {
	.abi = SIPC_PROVIDER_ABI,
	.name = "local",
	.create = sipc__cg_state_create,
	.destroy = sipc__cg_state_destroy,
	.info = sipc__cg_state_info,
	.launch = local_launch,
	.launch_start = local_launch_start,
	.launch_finish = local_launch_finish,
	.try_end = sipc__wend_try_end,
	.stop = sipc__wend_stop,
	.sweep = sipc__wend_sweep,
	.release = sipc__wend_release,
	.leftover = local_leftover,
};

/*
 * local.c - the local adapter: workers are ordinary child processes of
 * the process that links sipc.
 *
 * It gives descriptor hygiene, a process group per worker, pidfd
 * identity and owned-only reaping.  It gives NO namespace, secret,
 * network, user or host isolation and declares no guarantee
 * (PRODUCTION_BOUNDARY.md); provider selection refuses it outside
 * development and test configurations.
 *
 * Threads: the reaper thread calls every op (provider.h).
 *
 * Why posix_spawn: the host is multi-threaded, so between fork and exec
 * only async-signal-safe work is allowed.  glibc's posix_spawn runs the
 * child on a CLONE_VM|CLONE_VFORK stack, applies the file actions (among
 * them close-from, glibc 2.34+) and reports an exec failure as its
 * return value, so there is no hand-written child code at all.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ident.h"
#include "provider.h"

/* The protocol descriptor number every worker finds its channel on. */
#define SIPC_PROTO_FD 3
/* Child-side descriptors are moved at least this high before the file
 * actions run, so no dup2() target can clobber another source. */
#define LOCAL_FD_FLOOR 10

struct local_proc {
	pid_t pid;
	pid_t pgid;
	int pidfd;
	bool ended;
};

static int
move_high(int fd)
{
	int nfd;

	if (fd >= LOCAL_FD_FLOOR)
		return fd;
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, LOCAL_FD_FLOOR);
	close(fd);
	return nfd;
}

static int
spawn_setup(posix_spawn_file_actions_t *fa, posix_spawnattr_t *attr,
            int child_sock, int diag_w)
{
	sigset_t none, all;
	int rc;

	sigemptyset(&none);
	sigfillset(&all);
	sigdelset(&all, SIGKILL);
	sigdelset(&all, SIGSTOP);
	if ((rc = posix_spawn_file_actions_addopen(fa, 0, "/dev/null",
	    O_RDONLY, 0)) != 0 ||
	    (rc = posix_spawn_file_actions_adddup2(fa, diag_w, 1)) != 0 ||
	    (rc = posix_spawn_file_actions_adddup2(fa, diag_w, 2)) != 0 ||
	    (rc = posix_spawn_file_actions_adddup2(fa, child_sock,
	    SIPC_PROTO_FD)) != 0 ||
	    /* Everything above the protocol descriptor goes, including
	     * descriptors the host forgot to mark close-on-exec. */
	    (rc = posix_spawn_file_actions_addclosefrom_np(fa,
	    SIPC_PROTO_FD + 1)) != 0)
		return -rc;
	if ((rc = posix_spawnattr_setflags(attr, POSIX_SPAWN_SETPGROUP |
	    POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)) != 0 ||
	    (rc = posix_spawnattr_setpgroup(attr, 0)) != 0 ||
	    (rc = posix_spawnattr_setsigmask(attr, &none)) != 0 ||
	    (rc = posix_spawnattr_setsigdefault(attr, &all)) != 0)
		return -rc;
	return 0;
}

static int
local_launch(void *prov, const struct sipc__launch *l,
             struct sipc__chan *ret_chan, void **ret_handle, int *ret_errno)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	struct local_proc *p = NULL;
	int sv[2] = { -1, -1 }, dp[2] = { -1, -1 }, pidfd = -1, rc;
	bool fa_init = false, attr_init = false;
	pid_t pid;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return -ENOMEM;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 ||
	    pipe2(dp, O_CLOEXEC) < 0) {
		rc = -errno;
		goto fail;
	}
	if ((sv[1] = move_high(sv[1])) < 0 || (dp[1] = move_high(dp[1])) < 0) {
		rc = -errno;
		goto fail;
	}
	if ((rc = -posix_spawn_file_actions_init(&fa)) != 0)
		goto fail;
	fa_init = true;
	if ((rc = -posix_spawnattr_init(&attr)) != 0)
		goto fail;
	attr_init = true;
	if ((rc = spawn_setup(&fa, &attr, sv[1], dp[1])) != 0)
		goto fail;
	rc = posix_spawn(&pid, l->path, &fa, &attr, l->argv, l->envp);
	if (rc != 0) {
		*ret_errno = rc;
		rc = SIPC_E_EXEC;
		goto fail;
	}
	/* The child is ours and unreaped (only this thread reaps it), so
	 * the pid cannot have been reused yet: the pidfd names it. */
	if ((pidfd = pidfd_open(pid, 0)) < 0) {
		rc = -errno;
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		goto fail;
	}
	if (l->nproc_limit > 0) {
		/* posix_spawn cannot run setrlimit in the child, so the limit
		 * is applied right after exec: a worker that forks in its
		 * first instructions may beat it, and the kernel does not
		 * enforce RLIMIT_NPROC for root (PRODUCTION_BOUNDARY.md). */
		struct rlimit rl = { l->nproc_limit, l->nproc_limit };

		(void)prlimit(pid, RLIMIT_NPROC, &rl, NULL);
	}
	close(sv[1]);
	close(dp[1]);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	p->pid = pid;
	p->pgid = pid;
	p->pidfd = pidfd;
	ret_chan->proto_fd = sv[0];
	ret_chan->diag_fd = dp[0];
	ret_chan->pid = pid;
	ret_chan->pgid = pid;
	if (sipc__proc_starttime(pid, &ret_chan->starttime) < 0)
		ret_chan->starttime = 0;
	*ret_handle = p;
	return 0;
fail:
	if (fa_init)
		posix_spawn_file_actions_destroy(&fa);
	if (attr_init)
		posix_spawnattr_destroy(&attr);
	for (int i = 0; i < 2; i++) {
		if (sv[i] >= 0)
			close(sv[i]);
		if (dp[i] >= 0)
			close(dp[i]);
	}
	free(p);
	return rc;
}

static void
classify(const siginfo_t *si, struct sipc_exit *e)
{
	memset(e, 0, sizeof(*e));
	if (si->si_pid == 0) {          /* status lost (reaped elsewhere) */
		e->kind = SIPC_EXIT_CODE;
		e->code = -1;
		return;
	}
	switch (si->si_code) {
	case CLD_EXITED:
		e->kind = si->si_status == 0 ? SIPC_EXIT_CLEAN : SIPC_EXIT_CODE;
		e->code = si->si_status;
		break;
	case CLD_DUMPED:
		e->core_dumped = true;
		/* FALLTHROUGH */
	default:
		e->kind = SIPC_EXIT_SIGNAL;
		e->signo = si->si_status;
		break;
	}
}

/*
 * Terminal observation before the final reap: WNOWAIT leaves the zombie
 * in place, and the zombie keeps its pid and process group id from being
 * reused, so the group sweep below can only reach this worker's tree.
 * Only after the sweep is the leader reaped.
 */
static int
local_try_end(void *h, struct sipc_exit *ret)
{
	struct local_proc *p = h;
	siginfo_t si;

	if (p->ended)
		return 1;
	memset(&si, 0, sizeof(si));
	if (waitid(P_PIDFD, (id_t)p->pidfd, &si,
	    WEXITED | WNOHANG | WNOWAIT) < 0) {
		if (errno == EINTR)
			return 0;
		if (errno != ECHILD)
			return -errno;
		/* Someone else reaped our child (a host calling wait(-1),
		 * against the contract): it is gone, status unknown, and
		 * its group can no longer be swept safely. */
		goto gone;
	}
	if (si.si_pid == 0)
		return 0;
	(void)kill(-p->pgid, SIGKILL);
	{
		siginfo_t si2;

		while (waitid(P_PIDFD, (id_t)p->pidfd, &si2, WEXITED) < 0 &&
		    errno == EINTR)
			;
	}
gone:
	p->ended = true;
	close(p->pidfd);
	p->pidfd = -1;
	classify(&si, ret);
	return 1;
}

static int
local_signal_tree(void *h, enum sipc__tree_sig which)
{
	struct local_proc *p = h;
	int sig = which == SIPC__SIG_KILL ? SIGKILL : SIGTERM;

	if (p->ended)
		return 0;
	/* Leader by pidfd (cannot hit a reused pid), then the group: its
	 * id is the leader's pid, pinned while the leader is unreaped. */
	if (pidfd_send_signal(p->pidfd, sig, NULL, 0) < 0 && errno != ESRCH)
		return -errno;
	(void)kill(-p->pgid, sig);
	return 0;
}

static void
local_release(void *h)
{
	struct local_proc *p = h;

	if (p == NULL)
		return;
	if (p->pidfd >= 0)
		close(p->pidfd);
	free(p);
}

const struct sipc__provider sipc__provider_local = {
	.name = "local",
	.guarantees = 0,
	.launch = local_launch,
	.try_end = local_try_end,
	.signal_tree = local_signal_tree,
	.release = local_release,
};

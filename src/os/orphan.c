/*
 * orphan.c - owner mode: take it, and reap the orphans this process
 * adopted.
 *
 * In owner mode the process is a child subreaper (or PID 1), so every
 * orphaned descendant becomes its child, and the reaper thread reads
 * SIGCHLD from a signalfd.  On each SIGCHLD it walks this process's
 * children (/proc/self/task/<tid>/children lists the children of every
 * thread) and reaps, by pid and WNOHANG, each one that:
 *   - is not a worker (the direct child a provider launched, as its
 *     chan.child_pid says): workers are observed through their pidfd
 *     (waitid WNOWAIT first) and reaped there, so they must not be
 *     taken here;
 *   - is not in the host's process group: the host's own children stay
 *     there unless they leave it, and the host waits for them itself.
 * Never waitpid(-1): it could take a worker or a host child.
 *
 * At destroy the reaper waits (bounded, reaper.c) until a scan of all of
 * /proc finds no process left in the last workers' groups, reaping each
 * member as it becomes our child and ends (sipc__orphans_left()).
 *
 * Threads: taking and giving back owner mode, sipc_create() and destroy
 * (owner_lock); the walk and the scan, the reaper only (they read the
 * slots' pid and handle, which are [reaper] fields).
 */
#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "os/os.h"
#include "pool/pool.h"

/*
 * Owner mode is a property of the whole process (SIGCHLD, the subreaper
 * flag), so one owner-mode supervisor at a time holds it.  The flag is
 * cleared again at release unless the host had set it (or the process is
 * PID 1, where it is not needed).  owner_lock guards the three below.
 */
static pthread_mutex_t owner_lock = PTHREAD_MUTEX_INITIALIZER;
static bool owner_taken;
static bool owner_set_flag;
static bool owner_chld_was_blocked;   /* in sipc_create()'s thread */

/* Calling thread (sipc_create()): SIGCHLD is blocked here (library
 * threads block every signal already) and read from s->sig_fd by the
 * reaper thread.  On failure the caller's mask is as it was. */
int
sipc__owner_hold(struct sipc_supervisor *s)
{
	sigset_t chld, old;
	int prev = 0, rc = 0;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	pthread_mutex_lock(&owner_lock);
	if (owner_taken) {
		rc = -EBUSY;
		goto out;
	}
	if ((rc = -pthread_sigmask(SIG_BLOCK, &chld, &old)) < 0)
		goto out;
	owner_chld_was_blocked = sigismember(&old, SIGCHLD) == 1;
	if ((s->sig_fd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK)) < 0) {
		rc = -errno;
		goto fail_mask;
	}
	if (prctl(PR_GET_CHILD_SUBREAPER, &prev) < 0)
		prev = 0;
	owner_set_flag = getpid() != 1 && prev == 0;
	if (owner_set_flag && prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
		rc = -errno;
		goto fail_fd;
	}
	owner_taken = true;
	s->owner_held = true;
	goto out;
fail_fd:
	close(s->sig_fd);
	s->sig_fd = -1;
fail_mask:
	(void)pthread_sigmask(SIG_SETMASK, &old, NULL);
out:
	pthread_mutex_unlock(&owner_lock);
	return rc;
}

/* sipc_create() failed after owner_hold(): the calling thread's mask
 * back as it was (only SIGCHLD was changed). */
void
sipc__owner_unblock(void)
{
	sigset_t chld;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	pthread_mutex_lock(&owner_lock);
	if (!owner_chld_was_blocked)
		(void)pthread_sigmask(SIG_UNBLOCK, &chld, NULL);
	pthread_mutex_unlock(&owner_lock);
}

void
sipc__owner_release(void)
{
	pthread_mutex_lock(&owner_lock);
	if (owner_set_flag)
		(void)prctl(PR_SET_CHILD_SUBREAPER, 0);
	owner_set_flag = false;
	owner_taken = false;
	pthread_mutex_unlock(&owner_lock);
}

/* Is pid the provider's own child behind a live handle?  That child is
 * the provider's to observe (WNOWAIT) and reap: reaped here, its end
 * would be lost.  Its identity is what the provider launched
 * (chan.child_pid), never the pid it shows in logs (display_pid: for
 * the sandbox, sipc-init's, while our child is the outer bwrap). */
static bool
live_worker(const struct sipc_supervisor *s, pid_t pid)
{
	for (unsigned i = 0; i < s->nslots; i++)
		if (s->slots[i].handle != NULL && s->slots[i].child_pid == pid)
			return true;
	return false;
}

/* A slot that never started a worker has pid 0, and 0 is the process
 * group /proc shows for kernel threads: never a worker's group.  Every
 * built-in launch makes its child a group leader. */
static bool
last_worker_group(const struct sipc_supervisor *s, pid_t pgid)
{
	for (unsigned i = 0; i < s->nslots; i++)
		if (s->slots[i].child_pid > 0 && s->slots[i].child_pid == pgid)
			return true;
	return false;
}

/*
 * `pid` is our child, shown as a zombie: reap it.  False when it cannot
 * be reaped yet: /proc shows the state of the main thread, which may
 * have exited while other threads still run (or are still exiting, as
 * after a group SIGKILL); the kernel holds such a process back from
 * waitpid() until its last thread is gone, then sends SIGCHLD again.
 */
static bool
reap_zombie(pid_t pid)
{
	pid_t r;

	while ((r = waitpid(pid, NULL, WNOHANG | __WALL)) < 0 && errno == EINTR)
		;
	return r != 0;
}

/* One child: reap it if it is an ended orphan.  Returns true when it is
 * an orphan shown ended that cannot be reaped yet. */
static bool
visit(struct sipc_supervisor *s, pid_t pid, pid_t host_pgrp)
{
	struct sipc__proc_stat st;

	if (live_worker(s, pid) || sipc__proc_stat(pid, &st) < 0 ||
	    st.pgid == host_pgrp || st.state != 'Z')
		return false;
	return !reap_zombie(pid);
}

static unsigned
visit_task(struct sipc_supervisor *s, const char *tid, pid_t host_pgrp)
{
	char path[sizeof("/proc/self/task//children") + NAME_MAX];
	unsigned pending = 0;
	FILE *f;
	int pid, n;

	n = snprintf(path, sizeof(path), "/proc/self/task/%s/children", tid);
	if (n < 0 || (size_t)n >= sizeof(path) ||
	    (f = fopen(path, "re")) == NULL)
		return 0;
	while (fscanf(f, "%d", &pid) == 1)
		pending += visit(s, (pid_t)pid, host_pgrp);
	fclose(f);
	return pending;
}

unsigned
sipc__orphans_reap(struct sipc_supervisor *s)
{
	struct dirent *d;
	unsigned pending = 0;
	pid_t host_pgrp = getpgrp();
	DIR *dir;

	if ((dir = opendir("/proc/self/task")) == NULL)
		return 0;
	while ((d = readdir(dir)) != NULL)
		if (d->d_name[0] >= '0' && d->d_name[0] <= '9')
			pending += visit_task(s, d->d_name, host_pgrp);
	closedir(dir);
	return pending;
}

/*
 * Must destroy wait for this member of a last worker's group?  The group
 * sweep sent it SIGKILL, so it is on its way out:
 *   - our child: reap it once it is a zombie; until then, wait;
 *   - not (yet) our child and still running: wait; it is ours the moment
 *     its parent (a member dying too) has exited;
 *   - a zombie of another parent: wait while that parent is a member
 *     too (it is exiting and hands the zombie to us); a parent outside
 *     the groups (it left them: setsid, setpgid) keeps it, not ours.
 */
static bool
member_pending(struct sipc_supervisor *s, pid_t pid,
               const struct sipc__proc_stat *st)
{
	struct sipc__proc_stat parent;

	if (st->ppid == getpid())
		return st->state != 'Z' || !reap_zombie(pid);
	if (st->state != 'Z')
		return true;
	return sipc__proc_stat(st->ppid, &parent) == 0 &&
	    last_worker_group(s, parent.pgid);
}

/*
 * Every process in /proc, not only our children: a member whose parent
 * is exiting is not our child yet, and the per-thread children lists
 * are not reliable while children are being reparented.  A process that
 * exists for the whole scan is listed by /proc, and none can join a
 * swept group (its members were killed; fork fails with a fatal signal
 * pending), so a scan that finds none means none is left.
 */
unsigned
sipc__orphans_left(struct sipc_supervisor *s)
{
	struct sipc__proc_stat st;
	pid_t host_pgrp = getpgrp();
	unsigned pending = 0;
	struct dirent *d;
	char *end;
	long v;
	DIR *dir;

	if ((dir = opendir("/proc")) == NULL)
		return 0;
	while ((d = readdir(dir)) != NULL) {
		if (d->d_name[0] < '1' || d->d_name[0] > '9')
			continue;
		v = strtol(d->d_name, &end, 10);
		if (*end != '\0' || v <= 0 || v > INT_MAX ||
		    sipc__proc_stat((pid_t)v, &st) < 0 ||
		    st.pgid == host_pgrp || !last_worker_group(s, st.pgid) ||
		    live_worker(s, (pid_t)v))
			continue;
		pending += member_pending(s, (pid_t)v, &st);
	}
	closedir(dir);
	return pending;
}

/* Empty the signalfd; true if a SIGCHLD came.  SIGCHLD does not queue,
 * so how many came is of no use: the walk after this sees every ended
 * child. */
bool
sipc__orphans_signalled(struct sipc_supervisor *s)
{
	struct signalfd_siginfo si[8];
	bool any = false;

	while (read(s->sig_fd, si, sizeof(si)) > 0)
		any = true;
	return any;
}

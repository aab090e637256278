/*
 * orphan.c - owner mode: take it, and reap the orphans this process
 * adopted.
 *
 * In owner mode the process is a child subreaper (or PID 1), so every
 * orphaned descendant becomes its child, and the reaper thread reads
 * SIGCHLD from a signalfd.  On each SIGCHLD it walks this process's
 * children (/proc/self/task/<tid>/children lists the children of every
 * thread) and reaps, by pid and WNOHANG, each one that:
 *   - is not a live worker's own child: those are observed through their
 *     pidfd (waitid WNOWAIT first), so they must not be taken here;
 *   - is not in the host's process group: the host's own children stay
 *     there unless they leave it, and the host waits for them itself.
 * Never waitpid(-1): it could take a worker or a host child.
 *
 * Threads: taking and giving back owner mode, sipc_create() and destroy
 * (owner_lock); the walk, the reaper only (it reads the slots' pid and
 * handle, which are [reaper] fields).
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

#include "sipc_int.h"

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

static bool
live_worker(const struct sipc_supervisor *s, pid_t pid)
{
	for (unsigned i = 0; i < s->nslots; i++)
		if (s->slots[i].handle != NULL && s->slots[i].pid == pid)
			return true;
	return false;
}

static bool
last_worker_group(const struct sipc_supervisor *s, pid_t pgid)
{
	for (unsigned i = 0; i < s->nslots; i++)
		if (s->slots[i].pid == pgid)
			return true;
	return false;
}

/* State and process group of `pid` from /proc/<pid>/stat; -1 if gone.
 * The command name may hold ") ", so parse after the last ')'. */
static int
proc_stat(pid_t pid, char *state, pid_t *pgrp)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;
	int ppid, pg;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	if ((p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 1, " %c %d %d", state, &ppid, &pg) != 3)
		return -1;
	*pgrp = pg;
	return 0;
}

/* One child: reap it if it is an ended orphan.  Returns true while it is
 * a live adoptee of a last worker's group (destroy waits for those). */
static bool
visit(struct sipc_supervisor *s, pid_t pid, pid_t host_pgrp)
{
	char state;
	pid_t pgrp;

	if (live_worker(s, pid) || proc_stat(pid, &state, &pgrp) < 0 ||
	    pgrp == host_pgrp)
		return false;
	if (state == 'Z') {
		(void)waitpid(pid, NULL, WNOHANG | __WALL);
		return false;
	}
	return last_worker_group(s, pgrp);
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

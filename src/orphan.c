/*
 * orphan.c - owner mode: reap the orphans this process adopted.
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
 * Thread: the reaper only (it reads the slots' pid and handle, which are
 * [reaper] fields).  No locks.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sipc_int.h"

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
	char path[96];
	unsigned pending = 0;
	FILE *f;
	int pid;

	snprintf(path, sizeof(path), "/proc/self/task/%s/children", tid);
	if ((f = fopen(path, "re")) == NULL)
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

/*
 * os/cgroup_sweep.c - the cgroups a crashed supervisor left behind: the sweep
 * at open, the journal mark, and the kill after the leftover verdicts;
 * see os/os.h, and os/os.h for the layout and the rules.
 *
 * Threads: the thread that creates the supervisor (no worker exists
 * yet).  No locks, no state: each call works on the directory it is
 * given.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "os/os.h"

/*
 * A supervisor that crashed (no sipc_destroy) leaves its cgroups behind.
 * Its workers normally died with it (parent-death signal), but not
 * every process in them: a descendant that left the worker's session
 * (setsid(), a double fork) does not inherit that signal, and a sandbox
 * whose launch was cut short by the crash can leave its inner bwrap,
 * before its exec of sipc-init.  Two steps, for owners that no longer
 * exist:
 *
 *   - at open (sipc__cg_sweep_stale): only rmdir, which the kernel
 *     refuses for a cgroup that holds a process or a child cgroup.
 *     This runs before the journal's leftover verdicts, which must
 *     come first: a journalled worker is proven and asked to stop
 *     (TERM, then KILL after the grace), not killed outright;
 *   - after the verdicts (sipc__cg_end_dead, called from sipc_create()
 *     through the provider layer): what still holds a process is
 *     killed through its cgroup.kill (the whole subtree), waited for
 *     (bounded) and removed.  The cgroup names that owner, and the
 *     owner is gone: whatever is left in it was its workers' and
 *     nobody else's (the kernel keeps every descendant in its cgroup).
 *     A cgroup marked with a journal (an instance with a state
 *     directory) waits for an instance on that journal, whose verdicts
 *     are the ones that must come first.
 *
 * A pid means something only in the PID namespace that made the name,
 * so the name carries that namespace (its nsfs inode) and only names of
 * this process's own namespace are judged: a supervisor in a container
 * or a test's PID namespace under the same cgroup would see every host
 * pid as gone and empty (or kill) the cgroups of live owners.  A name
 * without a namespace is never touched.  An owner is gone when kill(pid,
 * 0) says ESRCH; a pid that was reused since keeps its old cgroups until
 * that process is gone too.
 */

/* This process's PID namespace (the inode of /proc/self/ns/pid), or 0
 * when it cannot be read: then nothing is swept. */
unsigned long
sipc__cg_own_pidns(void)
{
	struct stat st;

	return stat("/proc/self/ns/pid", &st) == 0 ?
	    (unsigned long)st.st_ino : 0;
}

/* A walk of the directory dirfd, with an offset of its own: a dup()
 * would share dirfd's, and a second walk would find it at the end. */
static DIR *
walk_at(int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;

	if (fd < 0)
		return NULL;
	if ((d = fdopendir(fd)) == NULL)
		close(fd);
	return d;
}

/* rmdir every empty worker cgroup (w*) under dirfd. */
static void
rmdir_workers(int dirfd)
{
	struct dirent *de;
	DIR *d;

	if ((d = walk_at(dirfd)) == NULL)
		return;
	while ((de = readdir(d)) != NULL)
		if (de->d_type == DT_DIR && de->d_name[0] == 'w')
			(void)unlinkat(dirfd, de->d_name, AT_REMOVEDIR);
	closedir(d);
}

/* fn(pfd, name, arg) for every entry under pfd that names a supervisor
 * cgroup of this PID namespace whose owner is gone. */
static void
each_dead_owner(int pfd, void (*fn)(int, const char *, void *), void *arg)
{
	unsigned long ns = sipc__cg_own_pidns(), their_ns;
	struct dirent *de;
	unsigned n;
	char end;
	DIR *d;
	int pid;

	if (ns == 0 || (d = walk_at(pfd)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (sscanf(de->d_name, "sipc.%d.%u.%lu%c", &pid, &n, &their_ns,
		    &end) != 3 || pid <= 0 || their_ns != ns ||
		    kill(pid, 0) == 0 || errno != ESRCH)
			continue;
		fn(pfd, de->d_name, arg);
	}
	closedir(d);
}

/* Remove a dead owner's cgroup and its worker cgroups if they are empty
 * (the kernel refuses the others). */
static void
rmdir_dead(int pfd, const char *name, void *arg)
{
	int cfd;

	(void)arg;
	if ((cfd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return;
	rmdir_workers(cfd);
	close(cfd);
	(void)unlinkat(pfd, name, AT_REMOVEDIR);
}

void
sipc__cg_sweep_stale(int pfd)
{
	each_dead_owner(pfd, rmdir_dead, NULL);
}


/* ------------------------------------------------------- dead owners */

/* Lines (one per process) of the cgroup.procs of dirfd's child `name`. */
static unsigned
count_procs(int dirfd, const char *name)
{
	char path[64], buf[SIPC__CG_FILE_CAP];
	unsigned count = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%.40s/cgroup.procs", name);
	if ((fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	while ((n = read(fd, buf, sizeof(buf))) > 0 ||
	    (n < 0 && errno == EINTR))
		for (ssize_t i = 0; i < n; i++)
			count += buf[i] == '\n';
	close(fd);
	return count;
}

/* How many processes the worker cgroups (w*) under dirfd hold: a look
 * before the kill, for the log (the owner's own cgroup holds none). */
static unsigned
count_worker_procs(int dirfd)
{
	struct dirent *de;
	unsigned count = 0;
	DIR *d;

	if ((d = walk_at(dirfd)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL)
		if (de->d_type == DT_DIR && de->d_name[0] == 'w')
			count += count_procs(dirfd, de->d_name);
	closedir(d);
	return count;
}

/* The journal (state directory, resolved) of the instance that made a
 * supervisor cgroup, in an extended attribute of that cgroup; none
 * when it had no state directory (or the kernel keeps no user
 * attribute on cgroups: then any later instance may end it). */
#define JOURNAL_XATTR "user.sipc.journal"

/* path resolved into ret (PATH_MAX); a directory not made yet (the
 * journal makes it, its last component only) as its resolved parent and
 * its name.  0 or -errno. */
static int
resolve_dir(const char *path, char *ret)
{
	char tmp[PATH_MAX], parent[PATH_MAX];
	const char *dir = ".", *name;
	char *slash;
	size_t n;

	if (realpath(path, ret) != NULL)
		return 0;
	if (errno != ENOENT ||
	    snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
		return -ENOENT;
	while ((n = strlen(tmp)) > 1 && tmp[n - 1] == '/')
		tmp[n - 1] = '\0';
	name = tmp;
	if ((slash = strrchr(tmp, '/')) != NULL) {
		*slash = '\0';
		dir = slash == tmp ? "/" : tmp;
		name = slash + 1;
	}
	if (realpath(dir, parent) == NULL)
		return -errno;
	if (snprintf(ret, PATH_MAX, "%s/%s", strcmp(parent, "/") == 0 ? "" :
	    parent, name) >= PATH_MAX)
		return -ENAMETOOLONG;
	return 0;
}

int
sipc__cg_stale_mark(int dirfd, const char *state_dir, char *journal)
{
	if (resolve_dir(state_dir, journal) < 0) {
		journal[0] = '\0';
		return -ENOENT;
	}
	return fsetxattr(dirfd, JOURNAL_XATTR, journal, strlen(journal), 0) < 0 ?
	    -errno : 0;
}

struct dead_walk {
	const char *parent;           /* the directory walked, for the log */
	const char *journal;          /* ours ("": none), or NULL: ours is
	                               * not to be ended this time */
	sipc__cg_dead_fn *say;
	void *arg;
	int found;                    /* cgroups killed */
};

/* Is the dead owner's cgroup at fd ours to end?  Yes without a journal
 * mark; with one, only for an instance on that journal, once its
 * leftover verdicts are all in. */
static bool
ours_to_end(int fd, const char *journal)
{
	char mark[PATH_MAX + 1];
	ssize_t n = fgetxattr(fd, JOURNAL_XATTR, mark, sizeof(mark) - 1);

	if (n < 0)
		return errno == ENODATA || errno == EOPNOTSUPP;
	mark[n] = '\0';
	return journal != NULL && journal[0] != '\0' &&
	    strcmp(mark, journal) == 0;
}

/* A dead owner's cgroup: kill what it holds (cgroup.kill ends the whole
 * subtree), wait until it is empty (bounded), remove it and its worker
 * cgroups.  Told to w->say only when it held a process. */
static void
kill_dead(int pfd, const char *name, void *arg)
{
	struct dead_walk *w = arg;
	uint64_t populated = 0;
	char path[PATH_MAX];
	unsigned procs;
	int cfd, rc;

	if ((cfd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return;
	if (sipc__cg_read_key(cfd, "cgroup.events", "populated",
	    &populated) < 0 || populated == 0) {
		close(cfd);
		rmdir_dead(pfd, name, NULL);  /* emptied since the open */
		return;
	}
	if (!ours_to_end(cfd, w->journal)) {
		close(cfd);                   /* left to its journal */
		return;
	}
	procs = count_worker_procs(cfd);
	if ((rc = sipc__cg_write_at(cfd, "cgroup.kill", "1")) == 0 &&
	    (rc = sipc__cg_wait_empty(cfd, SIPC__CG_EMPTY_MS)) == 0) {
		rmdir_workers(cfd);
		if (unlinkat(pfd, name, AT_REMOVEDIR) < 0)
			rc = -errno;
	}
	close(cfd);
	w->found++;
	snprintf(path, sizeof(path), "%s/%s", w->parent, name);
	w->say(w->arg, path, procs, rc);
}

int
sipc__cg_stale_end(int dirfd, const char *path, const char *journal,
                   sipc__cg_dead_fn *say, void *arg)
{
	struct dead_walk w = { .journal = journal, .say = say, .arg = arg };
	char parent[PATH_MAX], *slash;
	int pfd;

	snprintf(parent, sizeof(parent), "%s", path);
	if ((slash = strrchr(parent, '/')) != NULL)
		*slash = '\0';
	w.parent = parent;
	/* the supervisor's own cgroup is a child of the host's, where
	 * every supervisor of this host makes its own */
	if ((pfd = openat(dirfd, "..", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) < 0)
		return -errno;
	each_dead_owner(pfd, kill_dead, &w);
	close(pfd);
	return w.found;
}

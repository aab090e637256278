/*
 * clone.c - clone() (shared memory, vfork) or clone3() with a pidfd and
 * exit_signal = 0; see os/os.h.
 *
 * Why clone3 and not posix_spawn: the child comes with a pidfd that
 * names it from the first instruction (no pidfd_open race), is put into
 * new PID (and user) namespaces in the same call, and gets its parent-
 * death signal, group and limits before exec.  With a cgroup, the
 * clone3 child is born in it (CLONE_INTO_CGROUP); the shared-memory
 * child moves itself there as its first step, before it can fork, so in
 * either case no descendant of it ever runs outside.
 * exit_signal = 0 keeps it out of the host's SIGCHLD and wait(-1) until
 * execve(), which resets the exit signal to SIGCHLD (see local.c for
 * what that leaves to the host).
 *
 * The child side is written like libuv's: every signal is blocked in the
 * parent across clone3 so no host handler can run in the child; the
 * child resets every disposition and the mask, moves its descriptors in
 * place, marks everything else close-on-exec, and reports execve's errno
 * before _exit(127).  It uses raw system calls only, so no libc lock,
 * allocator or sanitizer interceptor (whose state another thread may
 * have held at clone time) is ever entered.
 *
 * The errno is reported in memory, not over a pipe (as posix_spawn
 * does): the clone is a vfork (CLONE_VFORK), so the caller goes on only
 * once the child has exec'd or exited, and then reads what the child
 * wrote there.  A pipe's EOF would be a wait that any host child could
 * hold: a host thread that fork()s without exec while the pipe is open
 * gives its child the write end (close-on-exec acts only at exec), and
 * the reaper would wait for that child's exit.  Nothing here waits on a
 * descriptor.
 *
 * Where it can, the child shares the caller's memory until its execve()
 * (CLONE_VM | CLONE_VFORK, see SIPC__SHARED_VM below): a fork-style
 * clone copies the supervisor's page tables and write-protects all its
 * private pages, and every thread then pays a fault for each page it
 * writes next, once per spawn.
 *
 * Threads: whichever thread spawns (the reaper).  Its lifetime matters:
 * the child's parent-death signal follows the spawning thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/sched.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sipc.h"
#include "base/base.h"
#include "os/os.h"

#if defined(__clang__)
#define SIPC__CHILD_SIDE __attribute__((noreturn, noinline, \
	no_sanitize("address", "thread", "undefined")))
#define SIPC__CHILD_SIDE_RET __attribute__((noinline, \
	no_sanitize("address", "thread", "undefined")))
#else
#define SIPC__CHILD_SIDE __attribute__((noreturn, noinline, \
	no_sanitize_address, no_sanitize_thread, no_sanitize_undefined))
#define SIPC__CHILD_SIDE_RET __attribute__((noinline, \
	no_sanitize_address, no_sanitize_thread, no_sanitize_undefined))
#endif
#define SIPC__CHILD_SIDE_VOID SIPC__CHILD_SIDE_RET

/*
 * Spawn without copying the supervisor's page tables: CLONE_VM |
 * CLONE_VFORK, as posix_spawn does.  The child runs on a stack of its
 * own in the caller's frame while the calling thread is suspended, until
 * its execve() (or exit), so nothing is touched by both.  Not with a
 * user namespace (that child stays on clone3, which makes it in the
 * same call; it writes its own id maps).  A cgroup needs no parent step: CLONE_INTO_CGROUP
 * exists only for clone3 (which cannot run a function on another
 * stack), so this child writes "0" to a cgroup.procs the parent opened
 * and fails closed if it cannot (child_side).  Not under a sanitizer:
 * their runtimes do not expect a second task on the same memory.
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SIPC__SHARED_VM 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SIPC__SHARED_VM 0
#endif
#endif
#ifndef SIPC__SHARED_VM
#define SIPC__SHARED_VM 1
#endif
#define SIPC__CHILD_STACK (32 * 1024)

/* The kernel's struct sigaction for rt_sigaction (not glibc's). */
struct sipc__ksigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

int
sipc__fd_high(int fd)
{
	int nfd;

	if (fd >= SIPC__SPAWN_FD_FLOOR)
		return fd;
	nfd = fcntl(fd, F_DUPFD_CLOEXEC, SIPC__SPAWN_FD_FLOOR);
	if (nfd < 0)
		nfd = -errno;
	close(fd);
	return nfd;
}

/* Where the child reports: memory the caller reads once the vfork
 * clone let it go on.  0: exec'd; > 0 exec's errno; < 0 a step before
 * it failed (-errno).  The maps, for a child in a new user namespace,
 * are made before the clone (no formatting in the child). */
struct sipc__spawn_report {
	volatile int err;
	char uid_map[32];
	char gid_map[32];
};

static void SIPC__CHILD_SIDE
child_fail(struct sipc__spawn_report *rep, int err)
{
	rep->err = err;
	(void)syscall(SYS_exit_group, 127);
	for (;;)
		;
}

/* Raw: write text to a file of /proc/self.  0 or -errno. */
static int SIPC__CHILD_SIDE_RET
child_write(const char *path, const char *text)
{
	long fd, n = 0, r;

	while (text[n] != '\0')
		n++;
	if ((fd = syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CLOEXEC)) < 0)
		return -errno;
	r = syscall(SYS_write, fd, text, n);
	r = r == n ? 0 : r < 0 ? -errno : -EIO;
	(void)syscall(SYS_close, fd);
	return (int)r;
}

/* In a new user namespace, the child maps the caller's own uid and gid
 * itself (a one-line map of its own ids is what an unprivileged process
 * may write for its namespace), so the parent has no step between clone
 * and exec and the clone can be a vfork. */
static void SIPC__CHILD_SIDE_VOID
child_id_maps(struct sipc__spawn_report *rep)
{
	int r;

	if ((r = child_write("/proc/self/uid_map", rep->uid_map)) < 0)
		child_fail(rep, r);
	if ((r = child_write("/proc/self/setgroups", "deny")) < 0 &&
	    r != -ENOENT)
		child_fail(rep, r);
	if ((r = child_write("/proc/self/gid_map", rep->gid_map)) < 0)
		child_fail(rep, r);
}

/*
 * Runs in the child between clone and execve: raw system calls only.
 * cgprocs >= 0 (the shared-memory spawn in a cgroup): the child first
 * moves itself into that cgroup.procs' cgroup ("0" is the writing task)
 * and, if it cannot, reports -errno (negative: not an exec error) and
 * exits, so a worker never runs outside its cgroup.  Nothing forks
 * before this write, so no descendant is left behind outside either.
 */
static void SIPC__CHILD_SIDE
child_side(const struct sipc__spawn *sp, struct sipc__spawn_report *rep,
           int cgprocs, pid_t parent)
{
	struct sipc__ksigaction dfl = { .handler = SIG_DFL };
	uint64_t none = 0;
	unsigned first_free = 4;
	long r;
	int i;

	if (cgprocs >= 0) {
		r = syscall(SYS_write, cgprocs, "0", 1);
		if (r != 1)
			child_fail(rep, r < 0 ? -errno : -EIO);
	}
	if (sp->flags & SIPC__SPAWN_NEWUSER)
		child_id_maps(rep);
	/* Groups, then gid, then uid (after it none of the others could be
	 * changed), and before the parent-death signal, which a change of
	 * credentials clears. */
	if ((sp->flags & SIPC__SPAWN_SETID) &&
	    (syscall(SYS_setgroups, 0, NULL) < 0 ||
	    syscall(SYS_setresgid, sp->gid, sp->gid, sp->gid) < 0 ||
	    syscall(SYS_setresuid, sp->uid, sp->uid, sp->uid) < 0))
		child_fail(rep, -errno);
	/* Die with the spawning thread (the long-lived reaper); outside a
	 * new PID namespace, re-check that the parent did not die first
	 * (inside one, getppid() is 0: sipc-init checks its report socket
	 * instead). */
	if (syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
		child_fail(rep, errno);
	if (!(sp->flags & SIPC__SPAWN_NEWPID) &&
	    syscall(SYS_getppid) != parent)
		child_fail(rep, ESRCH);
	/* A /proc of the new PID namespace, mounted here, before execve:
	 * in a user namespace that maps our own uid, sipc-init is not root
	 * of it and has no capability left after its exec, so a mount of
	 * its own would be refused and the worker would see host pids.
	 * Failure is left for sipc-init to find and report. */
	if (sp->flags & SIPC__SPAWN_NEWPID) {
		if (syscall(SYS_mount, NULL, "/", NULL, MS_REC | MS_PRIVATE,
		    NULL) == 0)
			(void)syscall(SYS_mount, "proc", "/proc", "proc",
			    MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	}
	if ((sp->flags & SIPC__SPAWN_SETPGRP) &&
	    syscall(SYS_setpgid, 0, 0) < 0)
		child_fail(rep, errno);
	if (sp->nproc_limit > 0) {
		struct rlimit rl = { sp->nproc_limit, sp->nproc_limit };

		if (syscall(SYS_prlimit64, 0, RLIMIT_NPROC, &rl, NULL) < 0)
			child_fail(rep, errno);
	}
	/* Dispositions: a host's SIG_IGN would survive execve. */
	for (i = 1; i < 65; i++)
		if (i != SIGKILL && i != SIGSTOP)
			(void)syscall(SYS_rt_sigaction, i, &dfl, NULL, 8);
	for (i = 0; i < 5; i++) {
		if (sp->fds[i] < 0)
			continue;
		if (syscall(SYS_dup3, sp->fds[i], i, 0) < 0)
			child_fail(rep, errno);
		first_free = (unsigned)i + 1;
	}
	/* Everything above goes at execve, descriptors the host forgot to
	 * mark close-on-exec included. */
	if (syscall(SYS_close_range, first_free, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
		child_fail(rep, errno);
	(void)syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, 8);
	(void)syscall(SYS_execve, sp->path, sp->argv, sp->envp);
	child_fail(rep, errno);
}

struct child_args {
	const struct sipc__spawn *sp;
	struct sipc__spawn_report *rep;
	int cgprocs;
	pid_t parent;
};

#if defined(__clang__)
__attribute__((no_sanitize("address", "thread", "undefined")))
#else
__attribute__((no_sanitize_address, no_sanitize_thread,
    no_sanitize_undefined))
#endif
static int
child_entry(void *arg)
{
	const struct child_args *a = arg;

	child_side(a->sp, a->rep, a->cgprocs, a->parent);
}

/* clone() with CLONE_VM | CLONE_VFORK (see SIPC__SHARED_VM): returns
 * the child's pid, or -1 with errno set.  cgprocs: see child_side. */
static long
clone_shared_vm(const struct sipc__spawn *sp, struct sipc__spawn_report *rep,
                int cgprocs, pid_t parent, int *ret_pidfd)
{
	_Alignas(16) char stack[SIPC__CHILD_STACK];
	struct child_args a = { .sp = sp, .rep = rep, .cgprocs = cgprocs,
	    .parent = parent };
	int flags = CLONE_VM | CLONE_VFORK | CLONE_PIDFD;  /* exit signal 0 */

	if (sp->flags & SIPC__SPAWN_NEWPID)
		flags |= CLONE_NEWPID | CLONE_NEWNS;
	return clone(child_entry, stack + sizeof(stack), flags, &a,
	    (pid_t *)ret_pidfd);
}

/* The report: on the caller's stack for the shared-memory child, which
 * writes the caller's own memory; a shared mapping for the clone3 child,
 * which has a copy of everything else. */
static struct sipc__spawn_report *
report_new(bool shared, struct sipc__spawn_report *local)
{
	void *m;

	if (shared)
		return local;
	m = mmap(NULL, sizeof(*local), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	return m == MAP_FAILED ? NULL : m;
}

static void
report_free(struct sipc__spawn_report *rep, bool shared)
{
	if (rep != NULL && !shared)
		(void)munmap(rep, sizeof(*rep));
}

/* clone3 (CLONE_VFORK: the caller goes on once the child exec'd or
 * exited): the child's pid, or -1 with errno set. */
static long
clone3_vfork(const struct sipc__spawn *sp, struct sipc__spawn_report *rep,
             pid_t parent, int *ret_pidfd)
{
	struct clone_args ca;
	long pid;

	memset(&ca, 0, sizeof(ca));
	ca.flags = CLONE_PIDFD | CLONE_VFORK;
	if (sp->flags & SIPC__SPAWN_NEWPID)
		ca.flags |= CLONE_NEWPID | CLONE_NEWNS;
	if (sp->flags & SIPC__SPAWN_NEWUSER)
		ca.flags |= CLONE_NEWUSER;
	if (sp->flags & SIPC__SPAWN_CGROUP) {
		ca.flags |= CLONE_INTO_CGROUP;
		ca.cgroup = (uint64_t)sp->cgroup_fd;
	}
	ca.pidfd = (uint64_t)(uintptr_t)ret_pidfd;
	ca.exit_signal = 0;
	pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0)
		child_side(sp, rep, -1, parent);
	return pid;
}

int
sipc__spawn_start(const struct sipc__spawn *sp, struct sipc__spawned *ret)
{
	struct sipc__spawn_report own, *rep;
	int pidfd = -1, rc = 0, err, cgprocs = -1;
	bool shared = SIPC__SHARED_VM && !(sp->flags & SIPC__SPAWN_NEWUSER);
	sigset_t all, old;
	pid_t parent = getpid();
	long pid;

	memset(&own, 0, sizeof(own));
	if ((rep = report_new(shared, &own)) == NULL)
		return -errno;
	rep->err = 0;
	snprintf(rep->uid_map, sizeof(rep->uid_map), "%u %u 1\n",
	    (unsigned)getuid(), (unsigned)getuid());
	snprintf(rep->gid_map, sizeof(rep->gid_map), "%u %u 1\n",
	    (unsigned)getgid(), (unsigned)getgid());
	/* The shared-memory child cannot be cloned into its cgroup: it
	 * moves itself there through this descriptor (child_side). */
	if (shared && (sp->flags & SIPC__SPAWN_CGROUP) &&
	    (cgprocs = openat(sp->cgroup_fd, "cgroup.procs",
	    O_WRONLY | O_CLOEXEC)) < 0) {
		rc = -errno;
		goto out;
	}
	/* No host signal handler may run in the child before its reset. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (shared)
		pid = clone_shared_vm(sp, rep, cgprocs, parent, &pidfd);
	else
		pid = clone3_vfork(sp, rep, parent, &pidfd);
	err = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		rc = -err;
		goto out;
	}
	/* The child has exec'd or exited: what it wrote is final. */
	ret->pid = (pid_t)pid;
	ret->pidfd = pidfd;
	ret->report = rep->err;
out:
	if (cgprocs >= 0)
		close(cgprocs);
	report_free(rep, shared);
	return rc;
}

int
sipc__spawn_finish(struct sipc__spawned *sd, int *ret_errno)
{
	int err = sd->report;

	if (err == 0)
		return 0;
	/* it exited (exit_group right after its report) */
	(void)sipc__pidfd_reap_within(sd->pidfd, SIPC__REAP_MS);
	close(sd->pidfd);
	sd->pidfd = -1;
	if (err < 0)
		return err;
	*ret_errno = err;
	return SIPC_E_EXEC;
}

int
sipc__spawn(const struct sipc__spawn *sp, pid_t *ret_pid, int *ret_pidfd,
            int *ret_errno)
{
	struct sipc__spawned sd;
	int rc;

	if ((rc = sipc__spawn_start(sp, &sd)) < 0 ||
	    (rc = sipc__spawn_finish(&sd, ret_errno)) < 0)
		return rc;
	*ret_pid = sd.pid;
	*ret_pidfd = sd.pidfd;
	return 0;
}

int
sipc__pidfd_observe(int pidfd, siginfo_t *ret)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (waitid(P_PIDFD, (id_t)pidfd, &si,
	    WEXITED | WNOHANG | WNOWAIT | __WALL) < 0)
		return errno == EINTR ? 0 : -errno;
	if (si.si_pid == 0)
		return 0;
	*ret = si;
	return 1;
}

int
sipc__pidfd_reap_within(int pidfd, int ms)
{
	struct pollfd pf = { .fd = pidfd, .events = POLLIN };
	int64_t until = sipc__now_ms() + ms, left;
	int r = 0;

	while ((left = until - sipc__now_ms()) >= 0 &&
	    (r = poll(&pf, 1, (int)left)) < 0 && errno == EINTR)
		;
	if (r != 1) {
		sipc__bound_expired("a killed child to exit before its reap");
		return -ETIMEDOUT;
	}
	return sipc__pidfd_reap(pidfd);
}

int
sipc__pidfd_reap(int pidfd)
{
	siginfo_t si;

	while (waitid(P_PIDFD, (id_t)pidfd, &si, WEXITED | __WALL) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

/*
 * clone.h - start a child with clone3(): a pidfd from the kernel,
 * exit_signal = 0, optional new PID (and user) namespace, and the
 * descriptor and signal hygiene every worker gets.  Without a user
 * namespace (and outside sanitizer builds), the same child comes from
 * clone(CLONE_VM | CLONE_VFORK | CLONE_PIDFD) instead: it
 * shares the caller's memory until its execve(), so no page table is
 * copied and none of the caller's pages is write-protected (clone.c).
 * Either child reports a failed exec in memory the caller reads once
 * the vfork clone returns, never over a pipe a host child could hold.
 *
 * A child cloned with exit_signal = 0 raises no SIGCHLD in the host, is
 * invisible to a host wait()/waitpid(-1) without __WALL, and is not
 * auto-reaped when the host ignores SIGCHLD - but only until it calls
 * execve(): the kernel then resets its exit signal to SIGCHLD (it "changed
 * execution domain").  What holds for good: the pidfd names the child
 * from the first instruction, and it is observed (WNOWAIT) and reaped
 * only through that pidfd (sipc__pidfd_*), never by pid.
 *
 * Threads: the reaper thread (and tests).  The child side runs only raw
 * system calls between clone3 and execve: no malloc, no locks, no libc
 * wrapper that a sanitizer intercepts.
 */
#ifndef SIPC_CLONE_H
#define SIPC_CLONE_H

#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

enum sipc__spawn_flags {
	SIPC__SPAWN_SETPGRP = 1u << 0,  /* own process group (leader) */
	SIPC__SPAWN_NEWPID = 1u << 1,   /* PID 1 of a new PID namespace, in a
	                                 * mount namespace of its own (for a
	                                 * /proc that shows only its pids) */
	SIPC__SPAWN_NEWUSER = 1u << 2,  /* ... inside a new user namespace
	                                 * mapping the caller's uid/gid */
	SIPC__SPAWN_CGROUP = 1u << 3,   /* in cgroup_fd's cgroup v2 before
	                                 * it runs anything of its own: born
	                                 * there (clone3, CLONE_INTO_CGROUP)
	                                 * or moved there by its first system
	                                 * call (shared-memory spawn: it
	                                 * writes "0" to its cgroup.procs,
	                                 * or fails); no child it forks ever
	                                 * lives outside it */
	SIPC__SPAWN_SETID = 1u << 4,    /* as uid and gid (no supplementary
	                                 * groups) before anything else of
	                                 * its own: a root caller's child that
	                                 * must not be root */
};

struct sipc__spawn {
	const char *path;
	char *const *argv;
	char *const *envp;
	/* Descriptors the child finds at 0, 1, 2, 3 and 4 (-1: none; 0 must
	 * be given).  Every source must be >= SIPC__SPAWN_FD_FLOOR so no
	 * dup2() target clobbers another source.  Everything else is
	 * closed in the child. */
	int fds[5];
	unsigned flags;               /* enum sipc__spawn_flags */
	unsigned nproc_limit;         /* RLIMIT_NPROC in the child, 0 = none */
	int cgroup_fd;                /* SIPC__SPAWN_CGROUP: its directory */
	uid_t uid;                    /* SIPC__SPAWN_SETID */
	gid_t gid;
};

#define SIPC__SPAWN_FD_FLOOR 10

/* A child cloned by sipc__spawn_start: it has exec'd (report 0) or
 * exited after its report. */
struct sipc__spawned {
	pid_t pid;
	int pidfd;                    /* close-on-exec */
	int report;                   /* 0 exec'd; > 0 exec's errno; < 0 a
	                               * step before exec failed (-errno) */
};

/*
 * Start the child.  Both clones are vforks (CLONE_VFORK): the call
 * returns once the child has begun its execve() or has exited, with its
 * report in *ret (no descriptor to wait on, so no host child forked
 * meanwhile can hold the caller).  The loading of the program and the
 * dynamic linker still run in parallel, so a caller can start many and
 * then collect them.  In a new user namespace the child writes its own
 * one-line uid and gid maps first.
 * Returns 0 with *ret filled, or -errno when the clone failed
 * (EPERM/EINVAL/ENOSPC/EUSERS for a namespace the caller may not
 * create) or cgroup_fd's cgroup.procs cannot be opened for writing;
 * nothing is left behind on
 * failure.  sp and what it points to are read only during the call (the
 * child has its own copy).  The caller's descriptors are untouched.
 */
int sipc__spawn_start(const struct sipc__spawn *sp, struct sipc__spawned *ret);

/*
 * What a started child reported.  Returns 0 (pid and pidfd stay the
 * caller's); SIPC_E_EXEC with *ret_errno set when the child could not
 * exec; -errno when a step before exec failed (it could not move itself
 * into its cgroup, SIPC__SPAWN_CGROUP on the shared-memory spawn, as
 * clone3 would have failed with CLONE_INTO_CGROUP; or could not write
 * its id maps).  On failure the child (which has exited) is reaped,
 * bounded, and its pidfd closed.
 */
int sipc__spawn_finish(struct sipc__spawned *sd, int *ret_errno);

/* Start the child and wait until it has exec'd (start, then finish):
 * 0 with its pid and pidfd, or as those two fail. */
int sipc__spawn(const struct sipc__spawn *sp, pid_t *ret_pid, int *ret_pidfd,
                int *ret_errno);

/* Move fd to >= SIPC__SPAWN_FD_FLOOR, close-on-exec; closes the old one.
 * Returns the new descriptor or -errno (fd closed either way). */
int sipc__fd_high(int fd);

/*
 * Has the child behind pidfd ended?  1: it has, *ret filled, still
 * unreaped (WNOWAIT: its pid and group id stay pinned); 0: running;
 * -ECHILD: someone else reaped it (it is lost); other -errno.
 */
int sipc__pidfd_observe(int pidfd, siginfo_t *ret);
/* Reap the child behind pidfd (blocking; EINTR retried).  0 or -errno.
 * Only for a child known to have exited (observed, WNOWAIT). */
int sipc__pidfd_reap(int pidfd);
/* Reap the child behind pidfd once it has exited, waiting at most ms:
 * 0, -ETIMEDOUT (left unreaped; counted as an expired bound, clock.h),
 * or -errno.  For a child just killed or known to be exiting, whose
 * exit may still hang (a PID namespace member that cannot die). */
int sipc__pidfd_reap_within(int pidfd, int ms);
/* The bound for that: a killed process is normally gone in
 * milliseconds. */
#define SIPC__REAP_MS 5000

#endif

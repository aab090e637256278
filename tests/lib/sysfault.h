/*
 * sysfault.h - real system call faults for tests, through seccomp: the
 * kernel itself fails (or holds for inspection) a call the library makes;
 * nothing in the library is replaced.  A seccomp filter cannot be
 * removed, so each helper runs or must be called in a forked child.
 * Needs Linux 5.5 (user notification with CONTINUE); no privilege.
 */
#ifndef SIPC_SYSFAULT_H
#define SIPC_SYSFAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Can this process use the helpers below (seccomp filters with a user
 * notification listener)?  Probed in a forked child; a test that needs
 * them calls tl_skip() when not. */
bool sf_supported(void);

/* In the calling thread and the children it forks from now on, for
 * good: fsync(fd) fails with -err (err > 0); other descriptors and other
 * calls are untouched.  0 or -errno.  Call it in a forked child. */
int sf_fail_fsync_on(int fd, int err);

/* Decides one brokered call: `pid` made system call `args`; return 0 to
 * let it run as made, or a negative errno to fail it with.  Runs in the
 * broker process; it may record facts in `arg`. */
typedef int (*sf_judge)(pid_t pid, const uint64_t args[6], void *arg);

/*
 * Fork a broker, which forks a process running body(barg) (its return
 * value is that process's exit status) in which every call of system
 * call `nr` waits until judge(pid, args, jarg) in the broker decides it.
 * When the body has ended (or after 60 s, then killed), the broker sends
 * the `jlen` bytes at `jarg` back: on return they hold what the judge
 * recorded.  Returns the body's exit status (0..255), or -1 if something
 * could not be set up (or the body was killed).  The caller's process is
 * not filtered.
 */
int sf_broker(int nr, sf_judge judge, void *jarg, size_t jlen,
              int (*body)(void *), void *barg);

/* What descriptor `fd` of process `pid` names (readlink of its /proc
 * entry), NUL-terminated in buf; 0 or -errno. */
int sf_fd_path(pid_t pid, uint64_t fd, char *buf, size_t len);

/* The open flags of descriptor `fd` of process `pid` (the "flags:" line
 * of its fdinfo, which includes O_CLOEXEC); -errno when unreadable. */
long sf_fd_flags(pid_t pid, uint64_t fd);

#endif

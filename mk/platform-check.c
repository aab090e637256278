/*
 * platform-check.c - compiled (never run) before any library source, so
 * a machine below the platform floor stops the build with one clear
 * line instead of an unknown identifier deep in the sources.  The floor
 * is stated in README.md (Platform).
 */
#include <features.h>

#if !defined(__GLIBC__) || __GLIBC__ < 2 || \
    (__GLIBC__ == 2 && __GLIBC_MINOR__ < 36)
#error "sipc needs glibc >= 2.36 (<sys/pidfd.h>, P_PIDFD)"
#endif

#include <linux/close_range.h>
#include <linux/sched.h>
#include <linux/version.h>
#include <sys/pidfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#if LINUX_VERSION_CODE < KERNEL_VERSION(5, 11, 0)
#error "sipc needs Linux >= 5.11 kernel headers (clone3 CLONE_PIDFD, waitid P_PIDFD, close_range CLOSE_RANGE_CLOEXEC)"
#endif

#if !defined(SYS_clone3) || !defined(SYS_close_range) || \
    !defined(CLOSE_RANGE_CLOEXEC) || !defined(CLONE_PIDFD)
#error "sipc needs clone3, CLONE_PIDFD, close_range and CLOSE_RANGE_CLOEXEC in the kernel headers (Linux >= 5.11)"
#endif

/* The names the sources use, so a libc that lacks one fails here
 * (P_PIDFD is an enumerator of idtype_t, not a macro). */
int sipc_platform_check(void);
int
sipc_platform_check(void)
{
	struct clone_args ca = { .flags = CLONE_PIDFD };
	int (*g)(pid_t, unsigned int) = pidfd_open;

	return ca.flags != 0 && g != 0 && P_PIDFD != 0;
}

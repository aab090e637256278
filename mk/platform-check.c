/*
 * platform-check.c - compiled (never run) before any library source, so
 * a machine below the platform floor stops the build with one clear
 * line instead of an unknown identifier deep in the sources.  The floor
 * is stated in README.md (Platform).
 */
#include <features.h>

#if !defined(__GLIBC__) || __GLIBC__ < 2 || \
    (__GLIBC__ == 2 && __GLIBC_MINOR__ < 36)
#error "sipc needs glibc >= 2.36 (<sys/pidfd.h>, posix_spawn_file_actions_addclosefrom_np)"
#endif

#include <linux/version.h>
#include <spawn.h>
#include <sys/pidfd.h>
#include <sys/wait.h>

#if LINUX_VERSION_CODE < KERNEL_VERSION(5, 4, 0)
#error "sipc needs Linux >= 5.4 kernel headers (waitid P_PIDFD, pidfd_open, close_range)"
#endif

/* The names the sources use, so a libc that lacks one fails here
 * (P_PIDFD is an enumerator of idtype_t, not a macro). */
int sipc_platform_check(void);
int
sipc_platform_check(void)
{
	posix_spawn_file_actions_t fa;
	int (*f)(posix_spawn_file_actions_t *, int) =
	    posix_spawn_file_actions_addclosefrom_np;
	int (*g)(pid_t, unsigned int) = pidfd_open;

	(void)fa;
	return f != 0 && g != 0 && P_PIDFD != 0;
}

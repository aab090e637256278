/* init_filter.h - sipc-init's system-call filter and resource limits
 * (src/init/filter.c). */
#ifndef SIPC_INIT_FILTER_H
#define SIPC_INIT_FILTER_H

#include <stdbool.h>
#include <sys/resource.h>

/* Installs the default profile in the calling process (and sets
 * no_new_privs): every refused call is sent to the filter's listener
 * (user notification).  refuse and allow are comma-separated names (may
 * be NULL or empty): calls refused besides the default, and names of the
 * default profile not refused.  0 and the listener in *ret_notify_fd;
 * or 0 and -1 there when no listener can be had (a filter of the
 * caller's ancestry holds the one the kernel allows), refused calls then
 * killing the process with SIGSYS (in audit mode that is the load's
 * error instead); or a negative errno (-EINVAL for a name this
 * libseccomp does not know).  On failure nothing is installed and the
 * caller must not execute the worker.  Single-threaded callers only (it
 * allocates). */
int sipc__init_filter(const char *refuse, const char *allow, bool audit,
                      int *ret_notify_fd);

/* Drops every capability from every set (bounding, ambient, permitted,
 * effective, inheritable) and sets RLIMIT_CORE to 0/0.  0, or a negative
 * errno; the caller must not execute the worker on failure. */
int sipc__init_drop_privileges(void);

/* Installs the filesystem rules (landlock.c) in the calling process:
 * read and execute beneath each path of `ro`, every right beneath each
 * of `rw` (both '\n'-separated; a path of rw that does not exist is
 * skipped), nothing elsewhere; sets no_new_privs.  0, or a negative
 * errno (-EOPNOTSUPP or -ENOSYS: no Landlock); on failure the caller
 * must not execute the worker. */
int sipc__init_landlock(const char *ro, const char *rw);
/* Sets the limits named by spec, "as:fsize:nofile:cpu:nproc" (each a
 * decimal number, "-" for unlimited), soft = hard, so the worker cannot
 * raise them.  NULL sets nothing.  0, or a negative errno (-EINVAL for a
 * malformed spec); the caller must not execute the worker on failure. */
int sipc__init_limits(const char *spec);

/* The spec's RLIMIT_CPU in seconds, RLIM_INFINITY for none (or no spec,
 * or a malformed one). */
rlim_t sipc__init_cpu_limit(const char *spec);

#endif

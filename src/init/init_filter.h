/* init_filter.h - sipc-init's system-call filter (src/init/filter.c). */
#ifndef SIPC_INIT_FILTER_H
#define SIPC_INIT_FILTER_H

/* Installs the default profile in the calling process (and sets
 * no_new_privs).  0, or a negative errno; on failure nothing is
 * installed and the caller must not execute the worker.  Single-threaded
 * callers only (it allocates). */
int sipc__init_filter(void);

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

#endif

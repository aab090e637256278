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

#endif

/*
 * sandbox.h - the sandbox provider (bubblewrap; sandbox.c).
 *
 * Threads: the reaper thread calls the provider's ops; the rest is for
 * tests and selection, any thread.
 */
#ifndef SIPC_SANDBOX_H
#define SIPC_SANDBOX_H

#include <stdint.h>
#include <sys/types.h>

#include "ident.h"
#include "provider.h"

extern const struct sipc__provider sipc__provider_sandbox;

/* What proves a sandbox is still the one a handle (or a journal) names:
 * the outer bwrap and the namespace's init, each by pid and start time,
 * the boot, and the init's PID namespace. */
struct sipc__sbx_id {
	pid_t bwrap_pid;
	uint64_t bwrap_start;
	pid_t init_pid;
	uint64_t init_start;
	uint64_t pidns;               /* inode of /proc/<init>/ns/pid */
	char boot_id[SIPC__BOOT_ID_LEN + 1];
};

/* The bwrap this process uses: the first executable "bwrap" on $PATH,
 * looked up once.  0 with *ret set, or -ENOENT. */
int sipc__sandbox_bwrap(const char **ret);

/* Terminate the sandbox `id` names, left by a dead supervisor, if it is
 * proven (same boot; its init alive with the recorded start time and
 * PID namespace): TERM to its init, KILL after grace_ms.  1 proven and
 * ended, 0 not proven (left alone), or -errno.  Blocks up to grace_ms
 * plus a bounded wait.  Any thread. */
int sipc__sandbox_leftover(const struct sipc__sbx_id *id, unsigned grace_ms);

/* The identity of a started sandbox (a handle of sipc__provider_sandbox). */
const struct sipc__sbx_id *sipc__sandbox_id(const void *handle);

#endif

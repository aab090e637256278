/*
 * provider.h - the interface between the supervisor core and whatever
 * runs workers.  The core never assumes workers are local processes:
 * it launches through `launch` (which also reports the worker's pid,
 * group and start time), learns of their end through `try_end`, stops
 * them through `signal_tree`, and reads what isolation they get from the
 * `guarantees` field.  The local adapter (unix/local.c) is one implementation; an
 * isolated provider (microVM, container runtime) is another, and must
 * declare the guarantees it really enforces.
 *
 * Threads: every op is called only from the reaper thread, so an
 * implementation needs no locking of its own for per-worker state.
 */
#ifndef SIPC_PROVIDER_H
#define SIPC_PROVIDER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sipc.h"

struct sipc__cg;

struct sipc__launch {
	const char *path;
	char *const *argv;
	char *const *envp;            /* full environment for the worker */
	uint32_t slot, generation;
	unsigned nproc_limit;         /* 0 = none */
	enum sipc_containment contain;/* asked for (AUTO: best available) */
	const char *init_path;        /* sipc-init; NULL: installed default */
	/* The supervisor's cgroup (cgroup.h), NULL: none.  The worker gets
	 * a cgroup of its own below it, for its generation. */
	struct sipc__cg *cg;
};

/* Channels handed back by launch.  The core owns both descriptors. */
struct sipc__chan {
	int proto_fd;                 /* stream socket, frames both ways */
	int diag_fd;                  /* worker stdout+stderr, read only */
	pid_t pid;                    /* for stats and logs; 0 if none */
	pid_t pgid;
	uint64_t starttime;           /* clock ticks since boot, 0 if unknown */
	enum sipc_containment contain;/* what the worker got */
	/* Why AUTO did not get the strongest mode ("" if it did); for the
	 * log. */
	char contain_why[96];
	/* Its own cgroup: in one, with these enum sipc_limit bits written;
	 * or not, with the negative error why (0 when launch had no cg). */
	bool cgroup;
	unsigned limits;
	int cgroup_err;
};

enum sipc__tree_sig { SIPC__SIG_TERM, SIPC__SIG_KILL };

struct sipc__provider {
	const char *name;
	/* enum sipc_guarantee bits this provider enforces. */
	unsigned guarantees;
	/* Start a worker.  On failure returns a negative error
	 * (SIPC_E_EXEC with *ret_errno set for exec failures) and leaves
	 * nothing behind. */
	int (*launch)(void *prov, const struct sipc__launch *l,
	              struct sipc__chan *ret_chan, void **ret_handle,
	              int *ret_errno);
	/* The same launch in two halves, so the reaper can start many
	 * workers and then collect them while they exec in parallel
	 * (optional: NULL when the provider has only launch).
	 * launch_start returns 0 with a pending launch (*ret_pending), or
	 * a negative error as launch, leaving nothing behind; l and what
	 * it points to must stay valid until launch_finish.  launch_finish
	 * waits for the worker to start and returns as launch; it consumes
	 * the pending launch either way.  Every started launch is
	 * finished. */
	int (*launch_start)(void *prov, const struct sipc__launch *l,
	                    void **ret_pending);
	int (*launch_finish)(void *pending, struct sipc__chan *ret_chan,
	                     void **ret_handle, int *ret_errno);
	/* Non-blocking (a killed cgroup may take up to SIPC__CG_EMPTY_MS
	 * to empty).  0: still running.  1: ended; the provider has
	 * observed the end, swept the worker's tree, released the process
	 * (reaped), and filled *ret (kind CLEAN/CODE/SIGNAL, OOM when the
	 * OOM killer ended it in its own cgroup, or LOST when someone else
	 * reaped it: then only its own cgroup, if any, was swept).  <0:
	 * error. */
	int (*try_end)(void *handle, struct sipc_exit *ret);
	/* Signal the worker's whole tree (KILL: its own cgroup too, if
	 * any).  Never reaches a process the provider cannot prove belongs
	 * to this worker; a no-op after try_end returned 1. */
	int (*signal_tree)(void *handle, enum sipc__tree_sig sig);
	/* A descriptor that polls readable (POLLIN) once the worker has
	 * ended, for the reaper's poll(); -1 if the provider has none (the
	 * reaper then rescans on its timer). */
	int (*end_fd)(void *handle);
	/* Free the handle.  A worker not yet ended is killed (tree
	 * included) and reaped first: nothing is ever left unowned. */
	void (*release)(void *handle);
};

extern const struct sipc__provider sipc__provider_local;

/*
 * Select the provider named in cfg and check it against the
 * configuration's environment.  Fails closed: SIPC_E_NOENV when the
 * environment is unset, SIPC_E_PRODUCTION (with each missing guarantee
 * named in errbuf) when the provider lacks a required guarantee.
 */
int sipc__provider_select(const struct sipc_config *cfg, char *errbuf,
                          size_t errlen,
                          const struct sipc__provider **ret);

#endif

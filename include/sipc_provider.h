/*
 * sipc_provider.h - the seam between the supervisor and whatever runs
 * its workers.
 *
 * The supervisor never assumes a worker is a local process.  It asks a
 * provider to launch one and gets back a channel (two descriptors), a
 * descriptor that polls readable once the worker has ended, and an
 * opaque identity that it journals verbatim.  It stops a worker, learns
 * how it ended, has what it left swept, and, after a crash, hands each
 * journalled identity back to the provider that made it, which alone can
 * prove whether that worker still runs and end it.  Nothing else about
 * the worker (a pid, a process group, a cgroup, a VM) crosses the seam,
 * except facts for stats and logs that the core only displays.
 *
 * Built in: "local" (workers are children of this process; declares no
 * guarantee, so production configurations refuse it) and "sandbox"
 * (each worker under bubblewrap; declares every guarantee but
 * resource_limits, separate_user only as root and filesystem_rules only
 * with Landlock, so production refuses it too).  A
 * host adds its own with sipc_provider_register() and names it in
 * sipc_config.provider.
 *
 * What "never signals an unrelated process" means for an implementer:
 * stop, sweep, release and leftover act only on what the provider can
 * prove is this worker's (a pidfd it holds, a namespace or cgroup it
 * made, an identity checked against the live system while pinned).  A
 * number that may have been reused (a pid, a group id after its leader
 * was reaped by someone else) is never acted on.  When in doubt, leave
 * it alone and say so (leftover returns 0; try_end reports LOST).
 *
 * Threads: create, declared and destroy run on the thread calling
 * sipc_create() / sipc_destroy(); leftover on sipc_create()'s thread
 * before any launch; info on any thread (sipc_stats_get()); everything
 * per worker (launch*, try_end, stop, sweep, release) on the
 * supervisor's one reaper thread, so per-handle state needs no lock;
 * the one exception is the start-up probe (CONTRACT.md PV4), whose
 * launch, try_end, stop, sweep and release run on sipc_create()'s
 * thread before the reaper starts, one handle at a time.
 * Several supervisors may share a provider: state is per supervisor.
 *
 * Link with libsipc.a; include this header after (or instead of) sipc.h.
 */
#ifndef SIPC_PROVIDER_H
#define SIPC_PROVIDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sipc.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Version of this interface; a provider sets ops.abi to it. */
#define SIPC_PROVIDER_ABI 1
/* Longest identity a provider may journal per worker, in bytes. */
#define SIPC_PROVIDER_ID_MAX 128
/* Longest provider name, not counting the NUL. */
#define SIPC_PROVIDER_NAME_MAX 31

/* What a provider is told to start one worker.  Everything it points
 * at stays valid until launch (or launch_finish) returns. */
struct sipc_provider_launch {
	const char *path;             /* worker executable */
	char *const *argv;            /* NULL-terminated */
	char *const *envp;            /* complete: the allow-list applied */
	uint32_t worker_id;           /* slot, and its generation: a pair */
	uint32_t generation;          /* never launched twice */
	unsigned nproc_limit;         /* RLIMIT_NPROC, 0 = none */
	enum sipc_containment contain;/* asked for (AUTO: best available) */
	const char *init_path;        /* sipc-init; NULL: installed default */
	/* The worker's scratch directory (SIPC_SCRATCH in envp), to be
	 * visible read-write at the same path; NULL: none. */
	const char *scratch_dir;
};

/* A worker's identity as its provider can later prove it: journalled
 * verbatim, read back after a crash and handed to leftover().  Its
 * layout is the provider's; the core never reads it. */
struct sipc_provider_id {
	uint16_t len;                 /* bytes used, <= SIPC_PROVIDER_ID_MAX */
	uint8_t bytes[SIPC_PROVIDER_ID_MAX];
};

/* Facts for stats and logs only (sipc_worker_stats, sipc_stats); the
 * core displays them and never acts on them. */
struct sipc_provider_info {
	bool cgroup;                  /* in a cgroup of its own */
	unsigned limits;              /* enum sipc_limit bits enforced there */
	int cgroup_err;               /* why not (negative), 0: not wanted */
	/* Pool level (info op): the cgroup's path, or why there is none. */
	char text[160];
};

/* What launch hands back.  The core owns proto_fd and diag_fd from then
 * on (it closes them); end_fd stays the provider's until release. */
struct sipc_provider_chan {
	int proto_fd;                 /* stream socket, frames both ways; the
	                               * worker finds its end as fd 3 */
	int diag_fd;                  /* worker stdout+stderr, read only */
	int end_fd;                   /* POLLIN once the worker has ended
	                               * (local: its pidfd); -1 if none: the
	                               * core then rescans on a timer, and
	                               * production refuses the provider */
	struct sipc_provider_id id;   /* journalled before any request */
	long display_pid;             /* logs and stats only; 0 if none */
	enum sipc_containment contain;/* what the worker got */
	char note[96];                /* why AUTO got less; "" if it did not */
	struct sipc_provider_info info;
	/* The pid of this process's own child that the launch made (the
	 * process behind end_fd: local, the worker or its sipc-init;
	 * sandbox, the outer bwrap), 0 when the provider has none.  Owner
	 * mode (sipc_config.owner), which reaps the orphans this process
	 * adopts, never reaps it while the handle lives: it is the
	 * provider's to observe and reap.  Left 0 by a provider built
	 * before it existed (the core clears the struct first): owner
	 * mode then spares display_pid instead. */
	long child_pid;
	/* The worker's cgroup directory (O_PATH or read-only), the
	 * provider's until release, where the core reads its usage
	 * (cpu.stat, memory.current); it keeps a copy (dup) of its own.
	 * 0 or less: none (0 is what a provider built before it existed
	 * leaves). */
	int cgroup_fd;
};

enum sipc_provider_stop {
	SIPC_STOP_GRACEFUL,           /* TERM to the worker's tree */
	SIPC_STOP_FORCED,             /* kill the worker's whole tree */
};

struct sipc_provider_ops {
	unsigned abi;                 /* SIPC_PROVIDER_ABI */
	/* Unique; 1 to SIPC_PROVIDER_NAME_MAX characters of [a-z0-9_-].
	 * It is journalled with each identity. */
	const char *name;

	/* Guarantees (enum sipc_guarantee bits) this provider would enforce
	 * for `cfg` on this machine.  Pure, no state: called before create,
	 * so a refused configuration costs nothing.  May be NULL (none). */
	unsigned (*declared)(const struct sipc_config *cfg);
	/* Make the state of one supervisor.  0 with *ret_state (passed to
	 * every op below; may be NULL), or a negative error with a reason
	 * in errbuf (errlen >= 1).  Also called for a provider that is not
	 * the selected one when the journal names it (leftovers). */
	int (*create)(const struct sipc_config *cfg, void **ret_state,
	              char *errbuf, size_t errlen);
	/* After every handle of this state was released.  NULL state ok. */
	void (*destroy)(void *state);
	/* Pool-level facts for stats (optional, NULL).  Any thread. */
	void (*info)(void *state, struct sipc_provider_info *ret);

	/* Start a worker and wait until it runs (exec'd) or failed.
	 * 0 with *ret_chan and *ret_handle; else a negative error,
	 * SIPC_E_EXEC with *ret_errno for a worker that could not be
	 * executed, and nothing left behind (no process, no descriptor).
	 * May block for the worker's exec. */
	int (*launch)(void *state, const struct sipc_provider_launch *l,
	              struct sipc_provider_chan *ret_chan, void **ret_handle,
	              int *ret_errno);
	/* Optional pair (both NULL, or both set): launch in two halves so
	 * the reaper starts many workers and then collects each while the
	 * others exec.  launch_start returns 0 with a pending launch, or an
	 * error as launch; l and what it points to stay valid until
	 * launch_finish, which consumes the pending launch either way and
	 * returns as launch.  Every started launch is finished. */
	int (*launch_start)(void *state, const struct sipc_provider_launch *l,
	                    void **ret_pending);
	int (*launch_finish)(void *pending, struct sipc_provider_chan *ret_chan,
	                     void **ret_handle, int *ret_errno);

	/* Non-blocking.  0: still running.  1: ended, *ret filled (kind
	 * CLEAN, CODE, SIGNAL, OOM; LOST when its status cannot be known);
	 * keeps returning 1 and the same *ret.  <0: error (the core logs it
	 * and asks again).  Called when end_fd polls readable, and on the
	 * reaper's timer. */
	int (*try_end)(void *handle, struct sipc_exit *ret);
	/* GRACEFUL: the worker's tree is asked to stop (TERM); FORCED: it
	 * is killed, every descendant included.  Never reaches a process
	 * not proven to be this worker's; a no-op once ended.  Non-blocking;
	 * 0 or a negative error. */
	int (*stop)(void *handle, enum sipc_provider_stop how);
	/* After try_end returned 1: reclaim what the worker left (members
	 * of its tree still running, its cgroup, scratch files) and release
	 * its process resources.  Bounded (it may wait briefly for a killed
	 * tree to empty).  0 or a negative error (logged); may be NULL.
	 * 1: not done, what was killed has not gone yet: the core calls it
	 * again (after try_end, which keeps returning 1) when end_fd polls
	 * readable or on its timer, and settles the worker's end only once
	 * sweep returned 0 or an error; release finishes it (bounded).
	 * While it answers 1, end_fd must not poll readable until there is
	 * something new to look at (or the core asks in a loop).  A sweep
	 * that still answers 1 after 10 s is given up: the core logs an
	 * error and settles the end without it. */
	int (*sweep)(void *handle);
	/* Free the handle (end_fd is closed here).  A worker not yet ended
	 * is killed and swept first: nothing is ever left unowned. */
	void (*release)(void *handle);

	/* A journalled identity of a previous supervisor instance (it
	 * crashed, or its host did): 1 proven to be that worker and
	 * terminated (it has exited); 0 not proven (gone, or the identity
	 * names something else now), left alone; <0 error (it may still
	 * run; the record is kept and the next instance tries again).
	 * sipc_create()'s thread, before any launch; may block up to
	 * grace_ms plus a bounded wait after the kill. */
	int (*leftover)(void *state, const struct sipc_provider_id *id,
	                unsigned grace_ms);
};

/*
 * Make a provider selectable by name (sipc_config.provider) for every
 * supervisor created afterwards.  `ops` and everything it points to
 * must outlive every supervisor that uses it (a static object); it is
 * never copied.  Returns 0; SIPC_E_CONFIG when abi is not
 * SIPC_PROVIDER_ABI, the name is not 1..31 of [a-z0-9_-], or a required
 * op (create, destroy, launch, try_end, stop, release, leftover) is
 * missing, or
 * launch_start/launch_finish are not both set or both NULL; -EEXIST
 * when the name is taken (a built-in or an earlier registration);
 * -ENOMEM.  There is no unregistering.  Any thread (a mutex).
 */
int sipc_provider_register(const struct sipc_provider_ops *ops);

#ifdef __cplusplus
}
#endif
#endif /* SIPC_PROVIDER_H */

/*
 * cgroup.h - cgroup v2 where the supervisor may write one: a cgroup per
 * supervisor, a child cgroup per worker generation, limits written into
 * it, cgroup.kill at the end of every worker, and the OOM-kill count.
 *
 * Layout (the "no internal processes" rule of cgroup v2):
 *
 *   <own cgroup>/                  the host process's cgroup, untouched
 *                                  but for cgroup.subtree_control when a
 *                                  configured limit needs a controller
 *     sipc.<pid>.<n>.<pidns>/      one per supervisor (<pidns>: the inode
 *                                  of the PID namespace <pid> belongs
 *                                  to); holds no process, so its
 *                                  subtree_control may enable the
 *                                  controllers the limits need
 *       w<slot>.g<generation>/     one per worker generation; a leaf: the
 *                                  worker (or its sipc-init) is cloned
 *                                  straight into it (CLONE_INTO_CGROUP)
 *                                  or moves itself in before it runs
 *                                  any code of its own (clone.h); every
 *                                  descendant stays in it
 *
 * The host process is never moved.  A controller can be enabled for the
 * supervisor's cgroup only if the host's own cgroup has it in
 * cgroup.controllers and may list it in cgroup.subtree_control: always
 * in the root cgroup; in any other cgroup only while it holds no process
 * (the kernel answers EBUSY), which is the host's (or its service
 * manager's) arrangement to make.  What cannot be arranged is reported,
 * and a configured limit that cannot be enforced is an error: it is
 * never silently dropped.
 *
 * Threads: sipc__cg_open / sipc__cg_close on the thread that creates or
 * destroys the supervisor (no worker exists then); the sipc__cgw_* calls
 * on the reaper thread (through the providers).  A struct sipc__cg
 * is read-only between open and close.
 */
#ifndef SIPC_CGROUP_H
#define SIPC_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sipc.h"
#include "cgstale.h"              /* sipc__cg_dead_fn */

struct sipc__cg;                  /* the supervisor's cgroup */
struct sipc__cgw;                 /* one worker generation's cgroup */

struct sipc__cg_limits {
	unsigned pids_max;            /* 0 = unset */
	size_t memory_max;            /* bytes, 0 = unset */
	unsigned cpu_max_percent;     /* of one CPU, 0 = unset */
};

/* Bound on waiting for a killed worker cgroup to empty before rmdir. */
#define SIPC__CG_EMPTY_MS 2000
/* Of that, how long a worker's end waits in place (on the reaper
 * thread) before the rest is waited for without blocking (launchio.h). */
#define SIPC__CG_QUICK_MS 100

/*
 * Make the supervisor's cgroup.  mode OFF: *ret = NULL, why "off".
 * AUTO without limits: *ret = NULL with the reason in why when no cgroup
 * can be made here (returns 0: run without, reported).  REQUIRED, or any
 * limit set: an error (-errno, or SIPC_E_CGROUP when a controller is
 * missing) with "key: reason" in why.  On success *ret is the cgroup and
 * why holds its path.  Nothing is left behind on failure.
 */
int sipc__cg_open(enum sipc_cgroup_mode mode, const struct sipc__cg_limits *lim,
                  struct sipc__cg **ret, char *why, size_t whylen);
/* Kill and remove whatever worker cgroup is left (bounded), then the
 * supervisor's own; free.  Call after every worker ended.  0, or -errno
 * when the supervisor's cgroup could not be removed.  Accepts NULL. */
int sipc__cg_close(struct sipc__cg *cg);
/* The supervisor cgroup's directory (absolute path). */
const char *sipc__cg_path(const struct sipc__cg *cg);
/* enum sipc_limit bits configured (each one is enforced in every worker
 * cgroup, or the worker does not start). */
unsigned sipc__cg_limits(const struct sipc__cg *cg);

/*
 * Mark cg with the journal of its instance: state_dir (resolved; a
 * directory not made yet as its resolved parent and name), in an
 * extended attribute of the cgroup, so that what a crash of this
 * instance leaves is ended only by an instance on the same journal
 * (sipc__cg_end_dead).  0 (also for a NULL cg or state_dir) or -errno
 * (then unmarked: any later instance may end it).  sipc__cg_state_init
 * does it; the thread that creates the supervisor.
 */
int sipc__cg_mark_journal(struct sipc__cg *cg, const char *state_dir);

/*
 * End what crashed supervisors left: every supervisor cgroup beside
 * cg's (sipc.<pid>.<n>.<pidns> under the same parent) whose name carries
 * this process's PID namespace and whose pid no longer exists, and that
 * still holds a process, is killed through its cgroup.kill (the whole
 * subtree), waited for up to SIPC__CG_EMPTY_MS and removed with its
 * worker cgroups; an empty one is only removed.  A live owner's
 * cgroups, another namespace's and names without a namespace are never
 * touched.  Nor is a cgroup marked with a journal, unless cg is marked
 * with the same one and journal_settled says that journal keeps no
 * leftover record (every journalled worker had its verdict: none is
 * left for a later instance).
 * say(arg, path, procs, err) for each cgroup killed: its path, how many
 * processes its worker cgroups held just before the kill, and 0 (killed
 * and removed) or -errno (-ETIMEDOUT: not empty in time; it stays for
 * the next instance).  Returns how many were killed, or -errno when the
 * parent cannot be opened.  Call it after the leftover verdicts, before
 * any worker starts.  Accepts NULL cg (returns 0).  sipc_create()'s
 * thread.
 */
int sipc__cg_end_dead(const struct sipc__cg *cg, bool journal_settled,
                      sipc__cg_dead_fn *say, void *arg);

/*
 * A provider's state for one supervisor, shaped as the provider ops
 * create, destroy and info (sipc_provider.h; the local and the sandbox
 * providers share it): the supervisor's cgroup, or why it has none.
 * create: per cfg's `cgroup` mode and limits; on failure errbuf says
 * "cgroup: <why>", the error is sipc__cg_open()'s, nothing is left.
 * destroy accepts NULL.  Threads: as those ops.
 */
struct sipc__cg_state {
	struct sipc__cg *cg;
	char why[160];
};
int sipc__cg_state_create(const struct sipc_config *cfg, void **ret_state,
                          char *errbuf, size_t errlen);
void sipc__cg_state_destroy(void *state);
/* The same in a state the caller embeds (a provider with more state). */
int sipc__cg_state_init(const struct sipc_config *cfg,
                        struct sipc__cg_state *st, char *errbuf,
                        size_t errlen);
void sipc__cg_state_fini(struct sipc__cg_state *st);
struct sipc_provider_info;
void sipc__cg_state_info(void *state, struct sipc_provider_info *ret);

/* Make a worker generation's cgroup and write the limits into it.
 * 0 or -errno (nothing left behind). */
int sipc__cgw_create(struct sipc__cg *cg, uint32_t slot, uint32_t gen,
                     struct sipc__cgw **ret);
/* Directory descriptor: clone3's CLONE_INTO_CGROUP, or where the
 * spawn opens cgroup.procs (clone.h). */
int sipc__cgw_fd(const struct sipc__cgw *w);
/* Kill every process in it (cgroup.kill).  0 or -errno. */
int sipc__cgw_kill(struct sipc__cgw *w);
/* How many times the OOM killer acted in it (memory.events oom_kill);
 * 0 when the memory controller is not enabled there. */
uint64_t sipc__cgw_oom_kills(const struct sipc__cgw *w);
/* An end by SIGKILL while w counts an OOM kill becomes SIPC_EXIT_OOM.
 * Accepts NULL (no cgroup: left as it is). */
void sipc__cgw_note_oom(const struct sipc__cgw *w, struct sipc_exit *e);
/* Kill, wait (up to SIPC__CG_EMPTY_MS) until it holds no process, rmdir
 * and free.  A cgroup that did not empty in time stays for
 * sipc__cg_close() (-ETIMEDOUT).  0 or -errno.  Accepts NULL. */
int sipc__cgw_remove(struct sipc__cgw *w);
/* The same, waiting at most ms (0: only a look). */
int sipc__cgw_remove_within(struct sipc__cgw *w, int ms);
/* Its cgroup.events, opened for poll() / epoll: POLLPRI when it changes
 * ("populated" included), until it is read again through this
 * descriptor (sipc__cg_events_empty, cgfile.h).  The descriptor or
 * -errno. */
int sipc__cgw_events_open(const struct sipc__cgw *w);

#endif

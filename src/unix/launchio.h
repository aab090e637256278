/*
 * launchio.h - what every provider that starts a worker under sipc-init
 * needs around the clone: the worker's descriptors (channel,
 * diagnostics, init report, /dev/null), sipc-init's argv and the
 * namespace view of the environment, its reports, a wait status
 * turned into a struct sipc_exit, and the worker's end (the provider
 * ops try_end, stop, sweep and release, one copy for both providers).
 *
 * Threads: the reaper thread (through the providers) and tests.  No
 * shared state.
 */
#ifndef SIPC_LAUNCHIO_H
#define SIPC_LAUNCHIO_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "init_proto.h"
#include "sipc.h"
#include "sipc_provider.h"

struct sipc__cgw;

/* [0] the supervisor's end, [1] the child's (moved high by open). */
struct sipc__launch_fds {
	int sv[2];                    /* channel (stream socket) */
	int dp[2];                    /* diagnostics pipe */
	int rp[2];                    /* sipc-init's report socket */
	int devnull;
	bool window;                  /* holds the fork window (below) */
};

/*
 * The child's ends exist only between open and close_child (or close):
 * the "fork window".  A host thread's fork() (without exec) inside it
 * would give its child copies of them: the worker's channel, its
 * diagnostics and its init's report socket would then stay open after
 * the worker closed or lost its own, for as long as that host child
 * lives.  So open counts a window under a process-wide mutex that a
 * pthread_atfork() prepare handler holds through the fork: a host
 * fork() waits until no window is open (a window lasts one clone,
 * through its exec), and no launch opens one while a fork is under way.
 * Library threads never fork().  (A vfork() or posix_spawn() child runs no handler; it execs
 * at once, and close-on-exec takes the copies then.)
 *
 * Open all four, the child's ends at or above SIPC__SPAWN_FD_FLOOR.
 * passcred: the report socket's supervisor end gets SO_PASSCRED, so
 * each report carries the sender's pid as this process sees it (a
 * namespace's init has no other way to tell us its host pid).  0 or
 * -errno; on failure whatever was opened is in *f for close.
 */
int sipc__launch_fds_open(struct sipc__launch_fds *f, bool passcred);
/* Close every descriptor still open (-1 entries skipped). */
void sipc__launch_fds_close(struct sipc__launch_fds *f);
/* Close the child's ends once the child has its copies. */
void sipc__launch_fds_close_child(struct sipc__launch_fds *f);

/* The environment as seen from inside a PID namespace: SIPC_PARENT_PID
 * says 1 (sipc-init).  A new array of the same strings; free() it. */
char **sipc__ns_env(char *const *envp);

/*
 * Read one report from sipc-init, waiting up to ms.  1 (got one), 0
 * (none in time, or end of stream), or -errno.  ret_pid (may be NULL)
 * gets the sender's pid from its credentials, 0 when the socket does not
 * pass them.
 */
int sipc__init_report_read(int fd, int ms, struct sipc__init_msg *ret,
                           pid_t *ret_pid);
/* The first report, as sipc__init_report_read, but the wait also ends
 * when our child behind pidfd has exited (a report it sent first is
 * still read): an init that died without reporting is not waited for
 * until the bound.  A bound that runs out is counted (clock.h). */
int sipc__init_report_wait(int fd, int pidfd, int ms,
                           struct sipc__init_msg *ret, pid_t *ret_pid);
/* Is a report waiting (non-blocking)?  false for fd < 0. */
bool sipc__init_report_pending(int fd);
/* Drain the reports; true when one was EXITED, *ret then its status. */
bool sipc__init_report_exit(int fd, struct sipc_exit *ret);

/* A wait status (as waitpid gives, or sipc-init reports) as an exit. */
void sipc__exit_from_status(int status, struct sipc_exit *ret);

/* Wait up to ms for the process behind pidfd to exit: true if it did. */
bool sipc__pidfd_gone_within(int pidfd, int ms);

/* Bound on a namespace's end after its init was killed. */
#define SIPC__INIT_END_MS 5000
/* How long try_end waits, once per worker, for our child to exit after
 * its init reported the worker's end (it exits at once, unless its
 * namespace's teardown hangs on a member that cannot die). */
#define SIPC__INIT_EXIT_MS 500

/*
 * One worker's end, as a provider's handle holds it: its FIRST member,
 * so that the sipc__wend_* functions below are the provider's ops
 * try_end, stop, sweep and release as they are (the handle is the
 * struct sipc__wend).  The provider fills it at launch:
 *   pidfd      our child, the end descriptor: observed with WNOWAIT, so
 *              its zombie pins its pid (and group id) until sweep
 *              reaps it.  Local: the worker or its sipc-init; sandbox:
 *              the outer bwrap, which exits last.
 *   sig_fd     where stop's signals go.  Equal to pidfd (local), or
 *              the pidfd of a proven process behind our child, owned
 *              here and killed at sweep (sandbox: sipc-init, never the
 *              outer bwrap, which would take the status with it), or
 *              -1 when that process is already gone with its namespace
 *              (stop is then a no-op).
 *   pgid       > 0: a process group signalled with pidfd, and killed
 *              before the reap, only while our zombie pins its id
 *              (local process-group mode); 0: none.
 *   report_fd  sipc-init's report socket, or -1: the worker's exact
 *              status, and "a report is waiting" means the init is on
 *              its way out.
 *   fold128    our child reports a PID 1 killed by signal n as exit
 *              code 128+n (bwrap): read it back as signal n.
 *   cg         the worker generation's cgroup, or NULL: FORCED writes
 *              cgroup.kill, the end notes an OOM kill, sweep removes it.
 *
 * With a cgroup, sweep kills its members and removes it once it holds
 * no process, at most SIPC__CG_EMPTY_MS later, without blocking: past
 * a brief wait it returns 1 (not done: call again) and the end
 * descriptor (an epoll set: our child's pidfd, then cgroup.events and
 * a deadline timer) wakes the caller for the next look.
 * Threads: the reaper thread only (a handle needs no lock).
 */
struct sipc__wend {
	int pidfd;
	int sig_fd;
	int report_fd;
	pid_t pgid;
	bool fold128;
	bool ended;
	bool draining;                /* swept but its cgroup not yet empty */
	bool reaped;                  /* by sweep, or behind our back */
	bool swept;
	bool exit_waited;             /* try_end's one wait after a report */
	struct sipc__cgw *cg;
	int ep;                       /* the end descriptor with a cgroup */
	int ev_fd;                    /* while draining: cgroup.events */
	int tm_fd;                    /* while draining: its deadline */
	int64_t drain_until;          /* monotonic ms: give up waiting */
	struct sipc_exit exit;        /* once ended: how */
};

/* Every descriptor -1, nothing ended. */
void sipc__wend_init(struct sipc__wend *w);
/* Once w->cg is set (or is known NULL), before the clone: what the end
 * descriptor needs.  0 or -errno. */
int sipc__wend_prepare(struct sipc__wend *w);
/* Once pidfd is set: the channel's end descriptor (chan.end_fd). */
int sipc__wend_end_fd(struct sipc__wend *w);
/* A launch that started: *ret cleared, then given f's protocol and
 * diagnostics descriptors (f no longer holds them), the end descriptor
 * and the cgroup facts (the limits of the provider's cgroup state `cg`,
 * which may be NULL, when the worker has a cgroup; `cg_err`: why it has
 * none).  The provider fills the rest (pid,
 * containment, note, identity). */
void sipc__wend_chan(struct sipc__wend *w, struct sipc__launch_fds *f,
                     const struct sipc__cg *cg, int cg_err,
                     struct sipc_provider_chan *ret);
/* A launch that did not start (its child, if any, reaped): close what
 * prepare opened, remove the cgroup. */
void sipc__wend_drop(struct sipc__wend *w);
/* The ops (sipc_provider.h), h a handle whose first member is a struct
 * sipc__wend.  sweep: 0, 1 (its cgroup not empty yet: call again once
 * the end descriptor polls readable) or -errno (-ETIMEDOUT: it did not
 * empty in time; it stays for sipc__cg_close).  release frees h with
 * free(), after closing what the struct sipc__wend holds: a provider
 * keeps nothing else to release in its handle. */
int sipc__wend_try_end(void *h, struct sipc_exit *ret);
int sipc__wend_stop(void *h, enum sipc_provider_stop how);
int sipc__wend_sweep(void *h);
void sipc__wend_release(void *h);

#endif

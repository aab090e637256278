/*
 * launchio.h - what every provider that starts a worker under sipc-init
 * needs around the clone: the worker's descriptors (channel,
 * diagnostics, init report, /dev/null), sipc-init's argv and the
 * namespace view of the environment, its reports, and a wait status
 * turned into a struct sipc_exit.
 *
 * Threads: the reaper thread (through the providers) and tests.  No
 * shared state.
 */
#ifndef SIPC_LAUNCHIO_H
#define SIPC_LAUNCHIO_H

#include <stdbool.h>
#include <sys/types.h>

#include "init_proto.h"
#include "sipc.h"

/* [0] the supervisor's end, [1] the child's (moved high by open). */
struct sipc__launch_fds {
	int sv[2];                    /* channel (stream socket) */
	int dp[2];                    /* diagnostics pipe */
	int rp[2];                    /* sipc-init's report socket */
	int devnull;
};

/*
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
/* Is a report waiting (non-blocking)?  false for fd < 0. */
bool sipc__init_report_pending(int fd);
/* Drain the reports; true when one was EXITED, *ret then its status. */
bool sipc__init_report_exit(int fd, struct sipc_exit *ret);

/* A wait status (as waitpid gives, or sipc-init reports) as an exit. */
void sipc__exit_from_status(int status, struct sipc_exit *ret);

#endif

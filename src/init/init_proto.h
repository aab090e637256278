/*
 * init_proto.h - what sipc-init (PID 1 of a worker's PID namespace)
 * tells the supervisor over its report socket (descriptor 4 in the
 * init, never passed on to the worker).  Fixed-size records on a local
 * stream socket, native byte order (same machine, same build).
 *
 * The socket also carries the supervisor's life: when the supervisor
 * ends, its end closes, the init sees the hang-up and exits, and the
 * kernel kills everything left in the namespace.
 */
#ifndef SIPC_INIT_PROTO_H
#define SIPC_INIT_PROTO_H

#include <stdint.h>

#define SIPC__INIT_REPORT_FD 4

/* Set (to "1") by the sandbox provider: bubblewrap adds PWD=/ after its
 * --chdir, so sipc-init removes PWD and this marker before the worker
 * starts; the worker then gets the launch environment alone. */
#define SIPC__INIT_NO_PWD "SIPC__INIT_NO_PWD"
/* Set by the sandbox provider: sipc-init installs its system-call
 * filter in the worker's process before execve, and refuses to start
 * the worker when it cannot (src/init/filter.c).  Dropped before the
 * worker runs. */
#define SIPC__INIT_FILTER "SIPC__INIT_FILTER"
/* Set by the sandbox provider where the kernel has Landlock: the paths
 * ('\n'-separated) the worker may read (RO) and write (RW); sipc-init
 * installs those rules in the worker's process before the filter and
 * refuses to start the worker when it cannot (src/init/landlock.c).
 * Dropped before the worker runs. */
#define SIPC__INIT_LL_RO "SIPC__INIT_LL_RO"
#define SIPC__INIT_LL_RW "SIPC__INIT_LL_RW"
/* With SIPC__INIT_FILTER, set by the sandbox provider from the
 * configuration, all dropped before the worker runs: calls refused
 * besides the default profile and names of it allowed back
 * (comma-separated), audit mode ("1": a refused call is logged on
 * stderr and runs), and the resource limits "as:fsize:nofile:cpu:nproc"
 * (numbers, "-" unlimited; src/init/limits.c). */
#define SIPC__INIT_REFUSE "SIPC__INIT_REFUSE"
#define SIPC__INIT_ALLOW "SIPC__INIT_ALLOW"
#define SIPC__INIT_AUDIT "SIPC__INIT_AUDIT"
#define SIPC__INIT_LIMITS "SIPC__INIT_LIMITS"

enum sipc__init_kind {
	SIPC__INIT_STARTED = 1,       /* worker exec'd; value = its pid
	                               * inside the namespace */
	SIPC__INIT_EXEC_FAILED = 2,   /* value = execve's errno */
	SIPC__INIT_EXITED = 3,        /* value = the worker's wait status */
	SIPC__INIT_POLICY = 4,        /* a refused system call ended the
	                               * worker (sent before its EXITED);
	                               * value = the call's number, -1 when
	                               * the kernel did not say (SIGSYS of
	                               * a foreign architecture's call);
	                               * name = its name, or "" */
	SIPC__INIT_LIMIT = 5,         /* the worker was killed on reaching
	                               * RLIMIT_CPU (sent before its
	                               * EXITED); value = RLIMIT_CPU */
};

#define SIPC__INIT_NAME_MAX 32

struct sipc__init_msg {
	uint32_t kind;
	int32_t value;
	char name[SIPC__INIT_NAME_MAX];
};

#endif

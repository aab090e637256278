/*
 * sipc.h - supervisor side of sipc: run opaque requests on supervised
 * local worker processes.
 *
 * Conventions (apply to every function below unless its comment says
 * otherwise):
 *   - Functions return 0 (or a non-negative count) on success and a
 *     negative error code on failure: -errno for system errors, or one of
 *     the SIPC_E_* codes (all below -1000).  sipc_strerror() names both.
 *   - Output parameters come last (ret_*) and are left untouched on failure.
 *   - The library never prints.  Worker diagnostics and library events go
 *     to the optional log callback in the configuration, escaped.
 *   - Lock order inside the library: slot lock -> table lock.  No library
 *     lock is held while a completion or log callback runs.
 *
 *   - Threads.  "Library thread" means a thread the library runs: a
 *     worker's reader or writer, the reaper, and a host thread while it
 *     runs a callback inside another public call (a completion for an
 *     immediate rejection, a log line when the journal breaks inside
 *     sipc_submit(), or a log line while a sipc_call() thread reads its
 *     own reply from an idle worker, such as a protocol violation).
 *     Completion and log callbacks run there.  The calls
 *     that wait for library threads (sipc_destroy, sipc_call,
 *     sipc_wait_ready) return -EDEADLK there, whichever supervisor they
 *     name: a callback of supervisor A that blocked on supervisor B
 *     could close a cycle with a callback of B blocking on A.
 *     sipc_submit (never blocks there), sipc_stats_get and the reconcile
 *     calls are allowed.
 *   - Racing sipc_destroy().  Calls already inside the library when
 *     destroy begins finish first (a blocked sipc_wait_ready returns
 *     SIPC_E_SHUTDOWN at once); a call that enters after destroy has
 *     begun returns SIPC_E_SHUTDOWN (sipc_call: a REJECTED result)
 *     without touching anything else.  A call made after destroy has
 *     returned is a use-after-free, as with free().
 *   - Ownership.  Whatever the host passes in is copied before the call
 *     returns, and may be freed or reused then: the configuration and
 *     every string and array it points at (sipc_create), a request's
 *     payload and idempotency key (sipc_submit, sipc_call), a listed
 *     request (sipc_reconcile_resolve).  One exception in how, not
 *     when: a sipc_call() payload of 64 KiB or more is read where it is
 *     while the call runs (copied only if another thread must write
 *     it), so it must not change until sipc_call() returns; it is
 *     never read after.  One exception in when: the payload of a
 *     sipc_submit() with SIPC_REQ_LEND is not copied; it is read where
 *     it is until its callback begins (see sipc_submit).  A request's
 *     descriptor (SIPC_REQ_FD) is duplicated, read-only, before the
 *     call returns; the copy is closed once the request is freed,
 *     whatever its outcome.  Kept by
 *     pointer: cfg.log_arg
 *     (until sipc_destroy returns) and a submit's callback `arg` (until
 *     its callback has run; never used when sipc_submit fails).
 *
 * What the library does to process-wide state, and what a host must not
 * do, is in the section "Process-wide state" below sipc_create().
 *
 * Link with: libsipc.a -lbsd -pthread  (or `pkg-config --libs sipc`).
 * Reference: the sipc(7) manual page and one page per function.
 */
#ifndef SIPC_H
#define SIPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

#include "sipc_version.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SIPC_PROTOCOL_VERSION 1

/* ---------------------------------------------------------------- version */

/* The library's version as SIPC_VERSION_HEX ((major << 16) | (minor << 8)
 * | patch) and as "major.minor.patch" (static string).  Compare them with
 * the SIPC_VERSION_* macros to tell the headers a program was compiled
 * with from the library it was linked with.  Any thread. */
unsigned sipc_version(void);
const char *sipc_version_string(void);

/* ---------------------------------------------------------------- errors */

/* X-macro table: one place for the codes and their messages. */
#define SIPC_ERRORS(X)                                                        \
	X(SIPC_E_CONFIG, -1001, "invalid configuration")                      \
	X(SIPC_E_TOOBIG, -1002, "payload larger than the configured maximum") \
	X(SIPC_E_FULL, -1003, "queue full (backpressure)")                    \
	X(SIPC_E_UNAVAILABLE, -1004, "no worker available (restart limit)")   \
	X(SIPC_E_SHUTDOWN, -1005, "supervisor is shutting down")              \
	X(SIPC_E_TIMEOUT, -1006, "deadline expired")                          \
	X(SIPC_E_WORKER_DIED, -1007, "worker ended while request in flight")  \
	X(SIPC_E_POISON, -1008, "request was in flight on two workers that died") \
	X(SIPC_E_PROTOCOL, -1009, "worker violated the protocol")             \
	X(SIPC_E_VERSION, -1010, "worker speaks another protocol version")    \
	X(SIPC_E_EXEC, -1011, "worker executable could not be started")       \
	X(SIPC_E_BADMAGIC, -1012, "frame has a bad magic number")             \
	X(SIPC_E_BADTYPE, -1013, "frame has an unknown type")                 \
	X(SIPC_E_BADCHECK, -1014, "frame header checksum mismatch")           \
	X(SIPC_E_HANDSHAKE, -1015, "worker did not complete the handshake")   \
	X(SIPC_E_PRODUCTION, -1016, "provider lacks guarantees required in production") \
	X(SIPC_E_NOENV, -1017, "configuration does not state its environment") \
	X(SIPC_E_LOCKED, -1018, "state directory is locked by another instance") \
	X(SIPC_E_JOURNAL, -1019, "journal cannot be read or written")         \
	X(SIPC_E_CANCELLED, -1020, "request cancelled")                       \
	X(SIPC_E_STALL, -1021, "worker stalled")                              \
	X(SIPC_E_NOTFOUND, -1022, "no such request")                          \
	X(SIPC_E_CGROUP, -1023, "cgroup or resource limit cannot be enforced here") \
	X(SIPC_E_QUEUE_TIMEOUT, -1024, "request waited past its queue budget unwritten") \
	X(SIPC_E_NOFD, -1025, "worker takes no descriptors")

enum sipc_error {
#define SIPC__ERRENUM(name, val, msg) name = (val),
	SIPC_ERRORS(SIPC__ERRENUM)
#undef SIPC__ERRENUM
};

/* Message for a negative error code (sipc or errno).  Never NULL; the
 * string is static.  Any thread. */
const char *sipc_strerror(int err);

/* -------------------------------------------------------------- outcomes */

/*
 * Every submitted request reaches exactly one outcome.  The five kinds are
 * chosen so a caller can act on them without guessing:
 *
 *   OK            the worker replied; reply bytes attached.
 *   WORKER_ERROR  the worker replied with an error frame (code + bytes).
 *   REJECTED      the request was never written to any worker.  Safe to
 *                 resubmit.  `error` says why (FULL, UNAVAILABLE,
 *                 SHUTDOWN, CANCELLED by sipc_cancel(), QUEUE_TIMEOUT:
 *                 its queue budget passed before it was written,
 *                 JOURNAL: its record could not be journalled).  An oversize payload is refused by
 *                 sipc_submit() itself (SIPC_E_TOOBIG), not a result.
 *   TIMEOUT       the deadline passed.  `may_have_run` says whether the
 *                 request had been written to a worker.
 *   UNKNOWN       the request was written and the worker ended (or broke
 *                 the protocol) before replying: it may have run.  It is
 *                 never retried unless it was submitted SIPC_REQ_IDEMPOTENT.
 *                 `error` says why (WORKER_DIED, POISON, PROTOCOL, STALL,
 *                 SHUTDOWN, TIMEOUT after a deadline's termination,
 *                 UNAVAILABLE, JOURNAL, CANCELLED: sipc_cancel() after
 *                 it was written; CONTRACT.md section 6).
 */
enum sipc_outcome {
	SIPC_OUTCOME_OK = 0,
	SIPC_OUTCOME_WORKER_ERROR = 1,
	SIPC_OUTCOME_REJECTED = 2,
	SIPC_OUTCOME_TIMEOUT = 3,
	SIPC_OUTCOME_UNKNOWN = 4,
};
const char *sipc_outcome_name(enum sipc_outcome o);

/* Why a worker ended, as far as the supervisor can tell. */
enum sipc_exit_kind {
	SIPC_EXIT_NONE = 0,       /* not ended (or not known yet) */
	SIPC_EXIT_CLEAN,          /* exit status 0, not asked to stop */
	SIPC_EXIT_CODE,           /* exit status != 0 (code) */
	SIPC_EXIT_SIGNAL,         /* killed by a signal it was not sent by us */
	SIPC_EXIT_TERMINATED,     /* the supervisor ended it (reason) */
	SIPC_EXIT_EXEC_FAILED,    /* exec failed (code = errno) */
	SIPC_EXIT_HANDSHAKE,      /* ended or broke before a valid handshake */
	SIPC_EXIT_LOST,           /* reaped by someone else (a host wait on a
	                           * pid it does not own): status unknown, and
	                           * its process group was left alone, not
	                           * signalled (its own cgroup, which names no
	                           * stranger, is still killed) */
	SIPC_EXIT_OOM,            /* killed by the kernel's OOM killer in its
	                           * own cgroup (memory_max reached; signo is
	                           * SIGKILL); reason: ours, if we were also
	                           * stopping it */
	SIPC_EXIT_RECYCLED,       /* retired as planned (max_requests,
	                           * max_age_ms, max_rss), nothing in flight, and
	                           * ended by us (reason POLICY, recycle
	                           * says why); not a failure: no restart
	                           * is counted against any limit */
	SIPC_EXIT_POLICY,         /* sandbox: made a system call its filter
	                           * refuses (syscall, syscall_name), and its
	                           * tree was killed (signo); a request it
	                           * ran is never retried */
	SIPC_EXIT_LIMIT,          /* sandbox: a resource limit's signal ended
	                           * it (signo SIGXCPU: RLIMIT_CPU, SIGXFSZ:
	                           * RLIMIT_FSIZE; rlimit says which) */
};

/* Why a worker was recycled (SIPC_EXIT_RECYCLED). */
enum sipc_recycle_reason {
	SIPC_RECYCLE_NONE = 0,
	SIPC_RECYCLE_REQUESTS,    /* max_requests written to it */
	SIPC_RECYCLE_AGE,         /* max_age_ms since its start */
	SIPC_RECYCLE_RSS,         /* its tree's resident memory over max_rss */
};
const char *sipc_exit_kind_name(enum sipc_exit_kind k);

/* Why the supervisor terminated a worker (SIPC_EXIT_TERMINATED). */
enum sipc_term_reason {
	SIPC_TERM_NONE = 0,
	SIPC_TERM_SHUTDOWN,       /* sipc_destroy() */
	SIPC_TERM_DEADLINE,       /* a request stayed wedged past its grace */
	SIPC_TERM_STALL,          /* no progress while work was pending */
	SIPC_TERM_PROTOCOL,       /* protocol violation */
	SIPC_TERM_CHANNEL_LOST,   /* protocol channel closed, process alive */
	SIPC_TERM_POLICY,         /* restart policy / operator request */
};
const char *sipc_term_reason_name(enum sipc_term_reason r);

struct sipc_exit {
	enum sipc_exit_kind kind;
	int code;                 /* exit code, or errno for EXEC_FAILED */
	int signo;                /* signal that ended it, if any */
	bool core_dumped;
	enum sipc_term_reason reason;
	enum sipc_recycle_reason recycle; /* SIPC_EXIT_RECYCLED: why */
	/* SIPC_EXIT_POLICY: the refused call's number and name, -1 and ""
	 * when the kernel did not say (a foreign architecture's call). */
	int syscall;
	char syscall_name[32];
	int rlimit;               /* SIPC_EXIT_LIMIT: RLIMIT_CPU or
	                           * RLIMIT_FSIZE (<sys/resource.h>) */
};

/* Format an exit classification ("killed by signal 11 (core dumped)").
 * Returns the length snprintf would have produced.  Any thread. */
int sipc_exit_format(const struct sipc_exit *e, char *buf, size_t len);

struct sipc_result {
	enum sipc_outcome outcome;
	int error;                /* 0 for OK; reason code otherwise */
	bool may_have_run;        /* false only when provably never started */
	uint64_t request_id;
	/* Reply (OK) or error message (WORKER_ERROR).  Owned by the result;
	 * valid until sipc_result_release(). */
	const uint8_t *reply;
	size_t reply_len;
	uint32_t worker_error_code; /* code from the worker's error frame */
	/* A reply by descriptor (sipc_worker_reply_fd()): read-only as the
	 * worker sent it, owned by the result (sipc_result_release closes
	 * it; set it to -1 to keep it); -1 when none.  `reply` then holds
	 * nothing. */
	int reply_fd;
	/* Last worker this request was written to (0/0/0 if never sent). */
	uint32_t worker_id;
	uint32_t generation;
	pid_t pid;
	unsigned attempts;        /* how many workers it was written to */
	/* If that worker ended: how, and the tail of its diagnostics
	 * (escaped text, NUL-terminated, owned by the result; may be NULL). */
	struct sipc_exit exit;
	const char *diag_tail;
	/* Where its time went (monotonic clock): submit to its first write
	 * to a worker (the whole wait when never written), and that write
	 * to the outcome (0 when never written; across a move to another
	 * worker after an end it includes the wait between the two). */
	uint64_t queue_us;
	uint64_t run_us;
	/* With request_figures set: the CPU time and the peak resident
	 * memory of the worker's process tree between that write and the
	 * outcome, each only where it is exact: the request was the only
	 * one on its worker the whole time (written while none was in
	 * flight, none written before its reply), it ended by the worker's
	 * reply (OK, WORKER_ERROR), and the source allows it (sipc_call(3)
	 * says which).  `figures` has a SIPC_FIG_* bit for each one
	 * measured; a figure without its bit is 0 and not known. */
	unsigned figures;
	uint64_t cpu_us;
	uint64_t peak_rss_kb;
};

/* struct sipc_result's figures: which ones are measured. */
enum sipc_figure {
	SIPC_FIG_CPU = 1u << 0,       /* cpu_us */
	SIPC_FIG_PEAK_RSS = 1u << 1,  /* peak_rss_kb */
};

/* Free what a result owns (reply, reply_fd, diag_tail) and clear it.
 * Accepts NULL and an already released result. */
void sipc_result_release(struct sipc_result *r);

/* ---------------------------------------------------------- configuration */

enum sipc_environment {
	SIPC_ENV_UNSET = 0,       /* treated as production: fails closed */
	SIPC_ENV_DEVELOPMENT,
	SIPC_ENV_TEST,
	SIPC_ENV_PRODUCTION,
};

/* Isolation guarantees a provider may declare and a configuration may
 * require.  The local adapter declares none of them. */
enum sipc_guarantee {
	/* Each comment says what the start-up probe checks from the host
	 * side (PRODUCTION_BOUNDARY.md, its table and NG1-NG5), which is
	 * less than the name may suggest. */
	SIPC_G_PID_NAMESPACE = 1u << 0,   /* the host's pid is not visible */
	SIPC_G_MOUNT_NAMESPACE = 1u << 1, /* a host file (one bait under the
	                                   * temp dir) cannot be read */
	SIPC_G_NETWORK_ISOLATION = 1u << 2, /* three host endpoints (loopback
	                                     * TCP, abstract, unix socket)
	                                     * cannot be reached */
	SIPC_G_NO_INHERITED_SECRETS = 1u << 3, /* no host descriptor, no host
	                                        * environment variable */
	SIPC_G_RESOURCE_LIMITS = 1u << 4, /* a process count is bounded */
	SIPC_G_SEPARATE_USER = 1u << 5,   /* the worker's uid is not the host's */
	SIPC_G_TREE_CONTAINMENT = 1u << 6,/* a setsid() escapee ends with the
	                                   * worker */
	SIPC_G_SYSCALL_FILTER = 1u << 7,  /* Seccomp 2 with a filter; a
	                                   * nested user namespace refused
	                                   * with the filter's EPERM */
	SIPC_G_LIMITS = 1u << 8,          /* the launch's hard limits, not
	                                   * raisable; /tmp capped; forks
	                                   * bounded by RLIMIT_NPROC */
	SIPC_G_NO_PRIVILEGE = 1u << 9,    /* the worker's host uid and gid are
	                                   * not 0, no capability in any set,
	                                   * no_new_privs, a new user namespace
	                                   * refused */
	SIPC_G_FILESYSTEM_RULES = 1u << 10, /* a write to "/" and /etc of its
	                                     * view is refused (Landlock) */
};
#define SIPC_G_ALL ((1u << 11) - 1)
const char *sipc_guarantee_name(unsigned one_bit);

/*
 * How a worker's process tree is contained (sipc_config.containment asks,
 * sipc_worker_stats.containment says what each worker got).
 *   PID_NAMESPACE   the worker runs under sipc-init, PID 1 of a new PID
 *                   namespace (needs CAP_SYS_ADMIN): when the worker ends
 *                   or is terminated, the kernel kills every process of
 *                   the namespace, setsid() escapees and daemons included;
 *                   the worker sees no host pid.
 *   USER_NAMESPACE  the same inside a new user namespace that maps the
 *                   caller's own uid and gid (no privilege needed where
 *                   the kernel allows unprivileged user namespaces).
 *   PROCESS_GROUP   fallback: the worker leads a process group; a
 *                   descendant that calls setsid() escapes termination,
 *                   unless the worker has a cgroup of its own
 *                   (sipc_config.cgroup), whose cgroup.kill ends it.
 * AUTO (the default) takes the first of the three that works here and
 * says which in the log and in the stats; an explicit mode is required
 * (a worker that cannot get it does not start).
 */
enum sipc_containment {
	SIPC_CONTAIN_AUTO = 0,
	SIPC_CONTAIN_PID_NAMESPACE,
	SIPC_CONTAIN_USER_NAMESPACE,
	SIPC_CONTAIN_PROCESS_GROUP,
};
const char *sipc_containment_name(enum sipc_containment c);

/*
 * cgroup v2 (sipc_config.cgroup).  Where the supervisor may write a
 * cgroup v2 (root, or a subtree delegated to it), it makes one cgroup of
 * its own under the host process's cgroup and, in it, one leaf cgroup
 * per worker generation; the worker (in the namespace modes, its
 * sipc-init) is in it before it runs any code of its own (it moves
 * itself in before its exec, or does not start), so every descendant,
 * setsid() escapees and daemons included, stays in it.  Termination (TERM, grace,
 * KILL) ends with cgroup.kill, which reaches every member in every
 * containment mode; each end of a worker kills what is left of its
 * cgroup and removes it; sipc_destroy() leaves no cgroup behind.  The
 * host process is never moved.
 *   AUTO      use one where it can be made; where it cannot, run without
 *             and say why (log, sipc_stats.cgroup_why).  With a limit
 *             configured it behaves as REQUIRED.
 *   OFF       never (a configured limit is then SIPC_E_CONFIG).
 *   REQUIRED  sipc_create() fails (SIPC_E_CGROUP, errbuf says why) when
 *             none can be made.
 */
enum sipc_cgroup_mode {
	SIPC_CGROUP_AUTO = 0,
	SIPC_CGROUP_OFF,
	SIPC_CGROUP_REQUIRED,
};
const char *sipc_cgroup_mode_name(enum sipc_cgroup_mode m);

/* Resource limits written into each worker's cgroup (sipc_config
 * pids_max, memory_max, cpu_max_percent; sipc_worker_stats.limits). */
enum sipc_limit {
	SIPC_LIMIT_PIDS = 1u << 0,    /* pids.max */
	SIPC_LIMIT_MEMORY = 1u << 1,  /* memory.max (and memory.swap.max 0) */
	SIPC_LIMIT_CPU = 1u << 2,     /* cpu.max */
};

enum sipc_log_level { SIPC_LOG_ERROR, SIPC_LOG_WARN, SIPC_LOG_INFO, SIPC_LOG_DIAG };

/* Log callback.  `msg` is escaped, NUL-terminated, valid for the call.
 * Worker diagnostics arrive with level SIPC_LOG_DIAG and the worker's
 * id/generation/pid; library events use worker_id = UINT32_MAX when no
 * worker is concerned.  Runs on a library thread (a worker's reader,
 * the reaper, or a thread inside sipc_call() reading its own reply;
 * see Threads above) with no library lock held.  sipc_destroy(), sipc_call()
 * and sipc_wait_ready() return -EDEADLK from it (see Threads above). */
typedef void (*sipc_log_fn)(void *arg, enum sipc_log_level level,
                            uint32_t worker_id, uint32_t generation,
                            pid_t pid, const char *msg);

enum sipc_durability {
	SIPC_DURABLE_OFF = 0,     /* write(): survives a process crash only */
	SIPC_DURABLE_GROUP,       /* fdatasync at most every group_commit_ms */
	SIPC_DURABLE_EACH,        /* fdatasync before the record's step */
};

struct sipc_config {
	/* ABI stamp written by sipc_config_init() from the header the caller
	 * was compiled with: sizeof(struct sipc_config) and SIPC_VERSION_HEX.
	 * sipc_create() refuses (SIPC_E_CONFIG, errbuf says which) a struct
	 * without a stamp (not from sipc_config_init()), from a newer header,
	 * or of a size this library does not know.  Never set by hand. */
	uint32_t struct_size;
	uint32_t version;

	/* Environment this configuration is for; UNSET fails closed.  Code
	 * may set any value; of the loaders, only the first configuration
	 * file may choose DEVELOPMENT or TEST over UNSET, and every later
	 * source may only tighten (see sipc_config_load_file()). */
	enum sipc_environment environment;
	/* How many sources sipc_config_load_file() / sipc_config_load_env()
	 * applied to this struct (0 after sipc_config_init()).  Written by
	 * the loaders only; it is how they tell the first file from a later
	 * one.  Not read by sipc_create(). */
	unsigned loaded_sources;
	/* Guarantees required of the provider.  In PRODUCTION (and UNSET)
	 * at least SIPC_G_ALL is required regardless of this field. */
	unsigned required_guarantees;
	/* Provider name: "local" and "sandbox" (bubblewrap) are built in;
	 * a host adds its own with sipc_provider_register()
	 * (sipc_provider.h). */
	const char *provider;

	/* Worker executable (absolute or relative path; no PATH search) and
	 * argv (NULL-terminated; argv[0] defaults to path when NULL). */
	const char *path;
	char *const *argv;
	/* Names of host environment variables passed through (NULL-terminated
	 * list, may be NULL), and explicit "NAME=value" entries added after
	 * them.  Nothing else of the host environment reaches a worker. */
	const char *const *env_allow;
	const char *const *env_set;

	unsigned workers;             /* pool size (default 2, 1..1024) */
	unsigned max_inflight;        /* per worker written, unanswered (16) */
	unsigned max_fds_in_flight;   /* per worker SIPC_REQ_FD requests
	                               * written, unanswered (64); see
	                               * sipc_submit() */
	uint32_t max_payload;         /* bytes per frame payload (16 MiB) */
	unsigned ring_frames;         /* per worker queued frames (256) */
	size_t ring_bytes;            /* per worker queued bytes (64 MiB) */
	size_t mem_ceiling;           /* payloads held: requests queued or in
	                               * flight, replies until delivered
	                               * (256 MiB); see sipc_submit().  Up
	                               * to a quarter of it (8 MiB at most)
	                               * more: freed large request buffers
	                               * kept for reuse (CONTRACT M1) */
	size_t diag_line_max;         /* diagnostics line cap (1024) */
	size_t diag_tail_bytes;       /* kept per worker for reports (4096) */

	unsigned handshake_ms;        /* spawn to HELLO (30000: converters
	                               * start slowly; sipc.conf(5)) */
	unsigned grace_ms;            /* SIGTERM to SIGKILL (5000) */
	unsigned drain_ms;            /* destroy: wait for in-flight (5000) */
	unsigned stall_ms;            /* no progress with work pending (10000) */
	unsigned cancel_grace_ms;     /* deadline to termination (2000) */
	/* Queue budget: a request not yet written to any worker this long
	 * after its submit ends REJECTED / SIPC_E_QUEUE_TIMEOUT (never
	 * run, safe to resubmit elsewhere), apart from its run deadline.
	 * Bounds only the wait before the first write.  0 = none (0). */
	unsigned queue_timeout_ms;
	/* Planned recycling (0 = off): a worker is retired once this many
	 * requests were written to it, or this long after its start.  A
	 * retiring worker takes no new request, finishes those in flight,
	 * then is ended (TERM, grace, KILL) and started again at once:
	 * SIPC_EXIT_RECYCLED, never counted against restart_intensity,
	 * pool_restart_budget or POISON. */
	unsigned max_requests;
	unsigned max_age_ms;
	/* ... or once the resident memory of its process tree is over
	 * this many bytes, read about once a second: its cgroup's
	 * memory.current where it has one with the memory controller,
	 * else the sum of its processes' resident set sizes (/proc). */
	size_t max_rss;
	/* Warm spares (0): this many more workers are started and
	 * handshaken but given no request; when a serving worker retires,
	 * ends or is being stopped, a ready spare takes its place at once
	 * and the one that left becomes the spare once restarted.  The
	 * stats list workers + spares slots. */
	unsigned spares;
	/* 1: measure each request's CPU time and peak memory where they
	 * can be known exactly (struct sipc_result's figures); a few
	 * system calls before and after each such request.  0 (0): not. */
	unsigned request_figures;
	unsigned idempotent_retries;  /* extra attempts for idempotent (2) */

	unsigned restart_base_ms;     /* first backoff (100) */
	unsigned restart_cap_ms;      /* backoff cap (30000) */
	unsigned restart_reset_ms;    /* uptime that resets backoff (10000) */
	unsigned restart_intensity;   /* at most R restarts per slot ... (5) */
	unsigned restart_window_ms;   /* ... in this window (10000) */
	unsigned pool_restart_budget; /* pool-wide restarts per window (20) */
	unsigned cooldown_ms;         /* slot pause past intensity (30000) */

	/* Owner mode (false): for a process whose whole job is supervising
	 * (a container's PID 1, a dedicated service).  The library then owns
	 * SIGCHLD and reaps every adopted orphan; see "Process-wide state"
	 * below sipc_create().  At most one owner-mode supervisor exists at
	 * a time (a second sipc_create() fails with -EBUSY). */
	bool owner;
	/* Tree containment (AUTO) and the sipc-init program the namespace
	 * modes run as PID 1 (NULL: sipc-init in the
	 * LIBEXECDIR the library was built for).  An
	 * init that cannot be executed makes AUTO fall back to a process
	 * group, reported. */
	enum sipc_containment containment;
	const char *init_path;
	unsigned worker_nproc_limit;  /* RLIMIT_NPROC for workers, 0 = none */

	/* Durable state (optional; NULL disables journal and reconcile). */
	const char *state_dir;
	enum sipc_durability durability;
	unsigned group_commit_ms;     /* SIPC_DURABLE_GROUP (10) */

	sipc_log_fn log;
	void *log_arg;

	/* cgroup v2 per worker (AUTO; see enum sipc_cgroup_mode), and the
	 * limits written into each worker's cgroup (0 = unset).  A limit
	 * that cannot be enforced here (no cgroup, or its controller not
	 * available to the supervisor's cgroup) makes sipc_create() fail
	 * with SIPC_E_CGROUP naming the key: a limit is never dropped in
	 * silence.  memory_max also sets memory.swap.max to 0 where that
	 * file exists (the limit is not lifted by swapping). */
	enum sipc_cgroup_mode cgroup;
	unsigned pids_max;            /* tasks per worker tree (pids.max) */
	size_t memory_max;            /* bytes per worker tree (memory.max) */
	unsigned cpu_max_percent;     /* per worker tree, % of one CPU
	                               * (cpu.max "percent*1000 100000") */

	/* The sipc-probe program sipc_create() runs once through the
	 * provider to prove each required guarantee (see sipc_create()).
	 * NULL: sipc-probe beside init_path when that is set, else the one
	 * in the LIBEXECDIR the library was built for.  Missing or not
	 * executable where a probe is due: the creation is refused. */
	const char *probe_path;

	/* Scratch directories (NULL: none).  sipc_create() makes
	 * "sipc-XXXXXX" in this absolute directory, and in it one directory
	 * per worker generation, given to the worker as SIPC_SCRATCH (bound
	 * read-write into the sandbox); a request submitted with
	 * SIPC_REQ_SCRATCH gets "$SIPC_SCRATCH/<id>", made empty before it
	 * is written and removed with its contents once its worker answered
	 * it (a worker's whole directory when it ends, the instance's at
	 * destroy).  Links a worker leaves are removed, never followed. */
	const char *scratch_root;

	/* Gathering (CONTRACT C8): an asynchronous request joins the worker
	 * the previous one went to (or another that already holds
	 * requests) while that worker's queued and written requests, at its
	 * measured time per reply, take at most this many microseconds
	 * (1000; 0: never, every request goes to the least loaded worker,
	 * an idle one first).  Calls never gather. */
	unsigned gather_us;

	/* The sandbox provider's worker identity when the supervisor runs
	 * as root: bwrap is started as this uid and gid (65534 each, never
	 * 0), so the worker's host ids are theirs; the scratch directories
	 * a worker gets are made theirs.  As another user, that user's. */
	unsigned sandbox_uid;
	unsigned sandbox_gid;
	/* More read-only paths of the sandbox's view (NULL: none): absolute,
	 * ':'-separated; each bound read-only at its own path and readable
	 * under the filesystem rules (a converter's fonts, its install
	 * tree, what a #! worker's script runs). */
	const char *sandbox_ro_paths;
	/* The sandbox provider's system-call policy and resource limits
	 * (sipc.conf(5); the local provider applies none of them).
	 * syscalls_refuse: comma-separated names refused besides the
	 * default profile; syscalls_allow: names of the default profile
	 * allowed back (NULL: none).  A name libseccomp does not know, or
	 * one allowed back that the default does not refuse, fails
	 * sipc_create() with SIPC_E_CONFIG naming it.  syscalls_audit: a
	 * refused call is logged and runs (building a profile only;
	 * refused under production). */
	const char *syscalls_refuse;
	const char *syscalls_allow;
	bool syscalls_audit;
	/* Hard limits in the worker's process, soft = hard (0: the default;
	 * SIPC_UNLIMITED: none): address space (4 GiB), file size (1 GiB),
	 * descriptors (256), CPU seconds (600), processes of the worker's
	 * uid in its user namespace (512); and the size of its /tmp
	 * (256 MiB). */
	size_t rlimit_as;
	size_t rlimit_fsize;
	size_t rlimit_nofile;
	size_t rlimit_cpu;
	size_t max_procs;
	size_t tmp_size;
};

/* A limit of struct sipc_config set to none ("unlimited" in a file). */
#define SIPC_UNLIMITED ((size_t)-1)

/* Fill `cfg` with the documented defaults (environment UNSET, provider
 * "local", no path) and stamp it (struct_size, version).  An inline
 * wrapper, so the stamp is the caller's header's and not the library's:
 * sipc_config_init_abi() writes at most `size` bytes.  Any thread. */
void sipc_config_init_abi(struct sipc_config *cfg, size_t size,
                          unsigned version);
static inline void
sipc_config_init(struct sipc_config *cfg)
{
	sipc_config_init_abi(cfg, sizeof(*cfg), SIPC_VERSION_HEX);
}

/* ------------------------------------------------------------ supervisor */

typedef struct sipc_supervisor sipc_supervisor;

/*
 * Create a supervisor: validate `cfg` (copied; the caller may free it
 * afterwards), select the provider (fails closed: SIPC_E_NOENV when the
 * environment is unset, SIPC_E_PRODUCTION when the provider lacks a
 * required guarantee; nothing is spawned), check the worker executable
 * (SIPC_E_EXEC, errbuf names the path and errno text), open the state
 * directory if any (SIPC_E_LOCKED names the holder), take owner mode
 * if cfg->owner (-EBUSY: another owner-mode supervisor exists; or the
 * signalfd / prctl error, with the caller's signal mask as it was),
 * make its cgroup (SIPC_E_CGROUP when cfg->cgroup is REQUIRED or a limit
 * is set and that cannot be done here, errbuf says why), prove each
 * required guarantee (below), start the reaper and the pool.
 *
 * Start-up probes: when any guarantee is required (always in production
 * and unset; in development and test when required_guarantees is not
 * 0), a declaration is not believed.  The probe program (probe_path)
 * is launched once through the provider, on this thread, and each
 * required guarantee is probed from the host side; any not confirmed,
 * a probe program that cannot be executed, does not answer or does not
 * end: SIPC_E_PRODUCTION, errbuf naming each guarantee and the reason.
 * Bounded by handshake_ms + grace_ms + 3 s; the probe is stopped, swept
 * and released before this returns, whatever happened.  Workers become ready asynchronously: see
 * sipc_wait_ready().  `errbuf` (may be NULL) receives a human-readable
 * reason on failure; *ret is untouched then.  `cfg` and everything it
 * points at may be freed when this returns, except cfg->log_arg, used
 * until sipc_destroy() returns.  Any thread; not async-signal-safe.
 *
 * Process-wide state: see the section that follows.
 */
int sipc_create(const struct sipc_config *cfg, char *errbuf, size_t errlen,
                sipc_supervisor **ret);

/*
 * Process-wide state: what the library does to the process that links it
 * (the local provider; workers are ordinary children of this process).
 *
 *   - SIGCHLD.  Outside owner mode (below): not read, not blocked,
 *     disposition not changed.  Workers
 *     are cloned with a pidfd and watched through it (the reaper polls
 *     the pidfds), so a host's SIGCHLD handler, signalfd or SIG_IGN keeps
 *     working for its own children.  Caveat, a kernel fact: execve()
 *     makes the library's direct child an ordinary SIGCHLD child again,
 *     so it raises SIGCHLD in the host when it ends and a host wait(-1)
 *     (or SIG_IGN) can reap it.  In the namespace modes that child is
 *     the worker's sipc-init, which has already reported the worker's
 *     exact wait status over its socket: nothing is lost.  In
 *     process-group mode it is the worker itself: its end is then
 *     SIPC_EXIT_LOST and its group is never signalled after that.
 *   - Signal masks.  Every library thread runs with every signal
 *     blocked, so no process-directed signal is handled on a library
 *     thread; the host's threads' masks are not changed.
 *   - Owner mode (cfg.owner) only.  sipc_create() blocks SIGCHLD in
 *     the calling thread and the reaper thread reads it from one
 *     signalfd; the host must keep SIGCHLD blocked in every other thread
 *     it has or creates (or be single-threaded), otherwise a SIGCHLD
 *     taken by such a thread is lost to the library (an orphan then
 *     stays a zombie until the next SIGCHLD).  The mask is restored if
 *     sipc_create() fails, and left blocked after sipc_destroy().
 *     PR_SET_CHILD_SUBREAPER is set for the whole process (not when it
 *     is PID 1, which adopts anyway) and cleared at sipc_destroy() unless
 *     the host had set it before.  On each SIGCHLD the reaper reaps, by
 *     pid with WNOHANG, every ended child of this process that is not a
 *     worker (workers are reaped through their pidfds) and is not in
 *     the host's process group
 *     (getpgrp()): adopted orphans of workers (in their groups) and
 *     setsid() daemons of anyone.  A host child that stays in the
 *     host's process group is left for the host to wait for; one that
 *     leaves it (setsid(), setpgid()) may be reaped by the library.
 *     sipc_destroy() waits (at most grace_ms + 1 s) until no process
 *     is left in the last workers' process groups and no adopted child
 *     shown ended is held back by a thread still running, reaping each;
 *     orphans that end after sipc_destroy() are the host's to reap.
 *   - Children.  Workers (in the namespace modes, their sipc-init; in
 *     owner mode also adopted orphans) are children of this process.
 *     The library reaps its workers by pidfd; it never waits for -1 and
 *     never signals a process it did not start.
 *   - Cgroups (cfg.cgroup, AUTO by default).  Where it may, the library
 *     makes directories below the host process's own cgroup v2: one per
 *     supervisor ("sipc.<pid>.<n>.<pidns>") and one per worker
 *     generation in it,
 *     and removes them (each worker's at its end, the rest at
 *     sipc_destroy(); empty ones a crashed process left, at the next
 *     sipc_create()).  The host process is never moved.  Only when a
 *     limit is configured, it may enable that limit's controller in the
 *     host's own cgroup.subtree_control, and leaves it enabled (other
 *     children of that cgroup may rely on it by then).
 *   - Descriptors.  Every descriptor the library opens is close-on-exec
 *     from its open on (the state directory's lock file included).
 *     Workers get only fd 0, 1, 2 and 3, whatever the host has open.
 *   - Not touched: other signals' dispositions and masks, SIGPIPE
 *     (sockets are written with MSG_NOSIGNAL), the environment (read
 *     only: cfg.env_allow at sipc_create(), SIPC_* by
 *     sipc_config_load_env()), the working directory, umask, rlimits
 *     (cfg.worker_nproc_limit is applied to workers only).
 *
 * A host should not, while a supervisor exists:
 *   - call wait(), waitpid(-1 or a negative group, ...) or waitid(P_ALL
 *     or P_PGID, ...), or set SIGCHLD to SIG_IGN, in process-group mode:
 *     that can take a worker's status from the library (the worker is
 *     then reported as SIPC_EXIT_LOST and its group is left alone);
 *     waiting for its own children by pid is always fine;
 *   - signal a worker or its process group itself, or clear
 *     PR_SET_CHILD_SUBREAPER while an owner-mode supervisor exists;
 *   - use a supervisor in the child of a fork() (only the forking thread
 *     exists there; call nothing but exec or _exit).
 */

/*
 * Wait until at least `n` workers have completed their handshake, or the
 * deadline (ms from now) passes.  Returns 0; or, when no worker is
 * running and the last start failed, at once (otherwise at the deadline)
 * why it failed: SIPC_E_EXEC (cannot execute), SIPC_E_VERSION (worker
 * speaks another protocol version), SIPC_E_PRODUCTION (outside
 * development and test, the provider launched a worker without an end
 * descriptor, CONTRACT PV), SIPC_E_HANDSHAKE (ended or stalled before
 * its HELLO, or its launch failed for another reason; the worker's
 * last_exit in the stats has the errno); or -ETIMEDOUT.
 * SIPC_E_SHUTDOWN when sipc_destroy()
 * begins meanwhile (at once, not at the deadline).  -EINVAL for a NULL
 * supervisor or `n` above the pool size (cfg.workers), at once.  The
 * count is a snapshot: a worker may die right after.  Any host thread;
 * -EDEADLK from a library thread (a callback).
 */
int sipc_wait_ready(sipc_supervisor *s, unsigned n, unsigned timeout_ms);

enum sipc_req_flags {
	SIPC_REQ_IDEMPOTENT = 1u << 0, /* may be retried after an ambiguous end */
	SIPC_REQ_NOWAIT = 1u << 1,     /* reject at once if queues are full */
	SIPC_REQ_LEND = 1u << 2,       /* sipc_submit: the payload is lent,
	                                * not copied (see sipc_submit) */
	SIPC_REQ_SCRATCH = 1u << 3,    /* an empty directory of its own on
	                                * the worker it is written to
	                                * (cfg.scratch_root; -EINVAL without) */
	SIPC_REQ_FD = 1u << 4,         /* the document is `fd`, not inline
	                                * bytes (see sipc_submit) */
};

/* Completion callback: exactly once per accepted submit.  Runs on a
 * library thread (the worker's reader, the reaper, a worker's writer for
 * a request it did not send because its journal record could not be
 * written, or the submitting thread for immediate rejections, including
 * a request it was writing itself to an idle worker whose journal record
 * could not be written) with no
 * library lock held.  `res` itself is valid only during the call, but
 * the callback owns what it points at: either call
 * sipc_result_release(res) before returning, or copy the struct and
 * release the copy later (any thread).  It may submit new requests (such
 * a submit never blocks: full queues give SIPC_E_FULL at once);
 * sipc_call(), sipc_wait_ready() and sipc_destroy() return -EDEADLK from
 * it, for any supervisor. */
typedef void (*sipc_done_fn)(void *arg, struct sipc_result *res);

struct sipc_request {
	const void *payload;        /* caller keeps ownership (Ownership,
	                             * top of this file) */
	size_t len;
	unsigned timeout_ms;        /* wall-clock deadline from submit; 0 = none */
	unsigned flags;             /* enum sipc_req_flags */
	const char *idempotency_key;/* optional, journalled for reconcile */
	unsigned queue_timeout_ms;  /* queue budget from submit; 0 = the
	                             * supervisor's cfg.queue_timeout_ms */
	int fd;                     /* SIPC_REQ_FD: the document, a regular
	                             * file (a sealed memfd); else unused */
};

/*
 * Submit asynchronously.  On success the request has an id (ret_id, may
 * be NULL) and `done` will be called exactly once.  Backpressure: when
 * the queues are full it blocks until room or the request's deadline
 * (then `done` gets REJECTED/SIPC_E_FULL), or with SIPC_REQ_NOWAIT
 * returns SIPC_E_FULL at once and `done` is never called.  Memory:
 * requests are admitted only while min(max_payload, mem_ceiling -
 * max_payload) bytes of mem_ceiling stay free for replies, and not while
 * a reply waits for room; a reply counts from its frame header until its
 * callback returns, and one that does not fit is not read (the worker
 * waits) until room comes back.  Invalid
 * arguments (NULL, payload over max_payload) return an error and `done`
 * is never called; so does SIPC_E_SHUTDOWN once sipc_destroy() has
 * begun.  `req` and what it points at may be freed when this returns;
 * `arg` must stay valid until `done` has run.  When the outcome is known
 * at once (REJECTED after waiting for room, or SIPC_E_JOURNAL when this
 * thread was writing the request itself to an idle worker and its
 * journal record could not be written), `done` runs on this thread
 * before sipc_submit() returns, under a callback's rules.  Any thread,
 * including completion callbacks.
 *
 * SIPC_REQ_LEND: the payload is not copied.  The library reads it where
 * it is, from any of its threads, until `done` begins; it must stay
 * valid and unchanged until then, and may be freed or reused in `done`.
 * For that, the outcome waits for any library thread still writing the
 * request's frame: a TIMEOUT, or the end of a worker, that comes while
 * its frame is being written is delivered once the frame is finished or
 * the channel has ended (a worker that stops reading is ended by the
 * stall rule), and then `done` may run on the reaper thread.  Calls
 * ignore the flag (a sipc_call() payload is read in place anyway).  The
 * bytes still count against cfg.mem_ceiling, as a copy would.
 *
 * SIPC_REQ_FD: the document is req->fd, a regular file the worker maps
 * read-only (a memfd sealed with F_SEAL_SHRINK | F_SEAL_WRITE is the
 * safe choice: a file shrunk under the mapping faults the worker), of
 * any size; payload and len must be NULL and 0 (-EINVAL).  The library
 * keeps a read-only duplicate (a descriptor open for writing is
 * reopened read-only through /proc/self/fd; -EBADF, -EINVAL for one
 * that is not a regular file, -errno when it cannot be reopened), so
 * the host may close its own when this returns; the duplicate is
 * closed exactly once, when the request is freed after its outcome,
 * whatever that is.  It travels with the frame (SCM_RIGHTS), no byte
 * of it is copied.  A worker whose HELLO did not offer descriptors
 * gets none: the request ends REJECTED / SIPC_E_NOFD, never sent.  A
 * worker holds at most cfg.max_fds_in_flight such requests written and
 * unanswered; one more taken for it ends REJECTED / SIPC_E_FULL, never
 * sent (safe to resubmit).  Unknown flag bits return -EINVAL.
 */
int sipc_submit(sipc_supervisor *s, const struct sipc_request *req,
                sipc_done_fn done, void *arg, uint64_t *ret_id);

/*
 * Synchronous call: submit and wait for the outcome.  Returns 0 and fills
 * `ret` (release it with sipc_result_release) whenever the request got an
 * outcome (including REJECTED/TIMEOUT/UNKNOWN; REJECTED/SIPC_E_SHUTDOWN
 * once sipc_destroy() has begun); returns an error only for invalid
 * arguments, and -EDEADLK from a library thread (a completion or log
 * callback of any supervisor: the outcome could need that very thread).
 * Any host thread.
 */
int sipc_call(sipc_supervisor *s, const struct sipc_request *req,
              struct sipc_result *ret);

/*
 * Give up on request `id` (sipc_submit()'s *ret_id).  Exactly one outcome
 * still reaches its callback, delivered before this returns 0:
 *   not yet written to a worker: REJECTED / SIPC_E_CANCELLED, provably
 *     never run (safe to resubmit);
 *   written: UNKNOWN / SIPC_E_CANCELLED with may_have_run, never retried
 *     (even SIPC_REQ_IDEMPOTENT).  The worker is sent a CANCEL; one that
 *     still holds the request cancel_grace_ms later is ended, as after a
 *     deadline (SIPC_TERM_DEADLINE).  A reply that comes meanwhile is
 *     dropped.
 * SIPC_E_NOTFOUND when the request already has its outcome (a reply,
 * a deadline or an end that came first) or no such id was submitted;
 * SIPC_E_SHUTDOWN once sipc_destroy() has begun.  The callback may run on
 * this thread, under a callback's rules.  Any thread, including
 * completion callbacks.
 */
int sipc_cancel(sipc_supervisor *s, uint64_t id);

enum sipc_worker_state {
	SIPC_WS_IDLE = 0,     /* slot empty (before spawn, backoff; exec
	                       * failures retry here with start-up backoff) */
	SIPC_WS_STARTING,     /* spawned, waiting for handshake */
	SIPC_WS_READY,        /* serving */
	SIPC_WS_DRAINING,     /* out of service; finishing / being stopped */
	SIPC_WS_STOPPING,     /* TERM sent, waiting for exit / grace */
	SIPC_WS_COOLDOWN,     /* restart intensity exceeded */
	SIPC_WS_FAILED,       /* will not be restarted (destroy in progress) */
};
const char *sipc_worker_state_name(enum sipc_worker_state s);

struct sipc_worker_stats {
	uint32_t worker_id;
	uint32_t generation;
	pid_t pid;
	enum sipc_worker_state state;
	unsigned inflight;        /* written, unanswered */
	unsigned queued;          /* in this worker's ring */
	uint64_t bytes_in, bytes_out;
	uint64_t frames_in, frames_out;
	uint64_t completed;
	uint64_t protocol_violations;
	uint64_t restarts;
	uint64_t recycles;        /* planned ends (SIPC_EXIT_RECYCLED) */
	bool spare;               /* a warm spare now: given no request */
	bool retiring;            /* planned recycling begun: takes no new
	                           * request, ends once none is in flight */
	struct sipc_exit last_exit;
	/* what the current (or last) generation got; AUTO before a start */
	enum sipc_containment containment;
	/* The current (or last) generation ran in a cgroup of its own, with
	 * these limits written (enum sipc_limit bits: every configured
	 * limit, or the worker does not start).  false with cgroup_error
	 * the negative error when the supervisor has a cgroup but this
	 * worker's could not be made (only possible without limits). */
	bool cgroup;
	unsigned limits;
	int cgroup_error;
};

struct sipc_stats {
	unsigned nworkers;
	struct sipc_worker_stats *workers;  /* nworkers entries */
	uint64_t submitted, completed_ok, worker_errors, rejected, timeouts,
	    unknown, requeued, retried, protocol_violations, restarts;
	size_t mem_held;          /* payload bytes held: requests queued or in
	                           * flight, replies being read or delivered */
	size_t mem_ceiling;
	unsigned pending;         /* requests without an outcome yet */
	/* With a state_dir: 0 while the journal is healthy; once a record
	 * could not be written or synced, the negative error that broke it
	 * (for good: every later submit ends REJECTED / SIPC_E_JOURNAL
	 * until a new supervisor opens the directory; logged once at
	 * SIPC_LOG_ERROR).  Always 0 without a state_dir. */
	int journal_error;
	/* cgroup v2: the supervisor's cgroup directory, "" when it has none,
	 * and then why ("off", no cgroup2 mount, mkdir refused, ...). */
	char cgroup_path[256];
	char cgroup_why[160];
	/* Waits on the reaper thread that ran out of their bound and went
	 * on without what they waited for (a namespace whose teardown
	 * hangs, a process that would not die, an init that never
	 * reported); each is logged at SIPC_LOG_WARN. */
	uint64_t bounds_expired;
	/* struct sipc_result's queue_us and run_us summed over every
	 * outcome so far (their count: completed_ok + worker_errors +
	 * rejected + timeouts + unknown). */
	uint64_t queue_us_sum, run_us_sum;
	/* Their cpu_us and peak_rss_kb summed over the outcomes that had
	 * them (SIPC_FIG_CPU, SIPC_FIG_PEAK_RSS), and how many had each. */
	uint64_t cpu_us_sum, peak_rss_kb_sum, cpu_known, peak_rss_known;
	/* Planned recycles by reason (not in restarts). */
	uint64_t recycled_requests, recycled_age, recycled_rss;
	/* Times a ready spare took a leaving worker's place. */
	uint64_t spare_takeovers;
};

/*
 * Write the pool's metrics to `f` in the OpenMetrics text format (ending
 * "# EOF"): counters of outcomes by kind, submits, worker ends by exit
 * kind, recycles by reason, restarts; gauges of workers by state,
 * requests queued, in flight and pending, payload bytes held; histograms
 * of results' queue_us and run_us (in seconds; run: written requests
 * only); summaries (count and sum) of the measured cpu_us and
 * peak_rss_kb (in seconds and bytes).  0, SIPC_E_SHUTDOWN once
 * sipc_destroy() has begun, -EINVAL, or -EIO when `f` reports an
 * error.  Any thread, including callbacks.
 */
int sipc_stats_openmetrics(sipc_supervisor *s, FILE *f);

/* Snapshot of counters.  Allocates ret->workers; free with
 * sipc_stats_release().  SIPC_E_SHUTDOWN once sipc_destroy() has begun.
 * Any thread, including callbacks. */
int sipc_stats_get(sipc_supervisor *s, struct sipc_stats *ret);
/* Free st->workers and clear it (workers NULL, nworkers 0).  Accepts
 * NULL and an already released snapshot.  Any thread. */
void sipc_stats_release(struct sipc_stats *st);

/*
 * Stop accepting, let in-flight work finish up to drain_ms, fail what is
 * left (queued: REJECTED/SHUTDOWN; written: UNKNOWN/SHUTDOWN or
 * TIMEOUT), terminate every worker tree (TERM, grace, KILL), reap, join
 * every thread, close every descriptor, free everything.  Returns 0
 * (also for NULL).  Calls racing it are safe (see "Racing sipc_destroy()"
 * at the top): it waits for calls inside the library, and later ones get
 * SIPC_E_SHUTDOWN.  Calling it again after it returned is a
 * use-after-free like free().  From a library thread (a completion or
 * log callback of any supervisor) it returns -EDEADLK and does nothing:
 * the supervisor stays intact.  Any host thread.
 */
int sipc_destroy(sipc_supervisor *s);
/*
 * End the pool now, giving every pending request its true outcome:
 * no new request is taken; each one not yet written to a worker ends
 * REJECTED/SIPC_E_SHUTDOWN at once (never sent: safe to resubmit); each
 * written one is sent CANCEL, and ends with the worker's reply if one
 * comes within cancel_grace_ms, else UNKNOWN/SIPC_E_SHUTDOWN (REJECTED
 * when provably never started).  Then every worker is sent TERM at
 * once, KILL after grace_ms, and its tree ended, as sipc_destroy()
 * does.  Returns within cancel_grace_ms (only while a written request
 * is unanswered) + grace_ms + the time to reap and join, and 0 (also for
 * NULL).  Callbacks of the REJECTED requests run on the calling thread,
 * under a callback's rules.  Threads and races as sipc_destroy().
 */
int sipc_destroy_now(sipc_supervisor *s);

/* ---- configuration files ---- */

/*
 * Strict loaders for a configuration file ("key = value" lines) and for
 * SIPC_<KEY> environment variables; the format is in CONTRACT.md.  A
 * loaded configuration's strings and arrays are owned by a store, which
 * must outlive every use of the configuration (sipc_create() copies what
 * it needs, so the store may be freed after it returns).
 */
typedef struct sipc_config_store sipc_config_store;

/*
 * Apply the settings in file `path` on top of *cfg (start from
 * sipc_config_init()).  *store is created when NULL and reused otherwise,
 * so a file and the environment can share one store.  Checks syntax and
 * each value's range; cross-field rules are checked by sipc_create().
 * Returns 0; SIPC_E_CONFIG with "path:line: key: reason" in errbuf (may
 * be NULL); -errno if the file cannot be read; -ENOMEM.  On failure
 * *cfg and *store are unchanged (nothing is partially applied).
 *
 * Fail closed, tighten only: code may set any environment, and the FIRST
 * file loaded into a struct whose environment is unset may say
 * development or test.  Every later source (a second file, the
 * environment loader, another call) may only tighten: an environment
 * that is production or still unset (unset counts as production) cannot
 * become development or test, and no guarantee already required can be
 * dropped; trying is SIPC_E_CONFIG naming the line.  "First" is counted
 * in cfg->loaded_sources, whatever store is passed.  Any thread.
 */
int sipc_config_load_file(const char *path, struct sipc_config *cfg,
                          sipc_config_store **store, char *errbuf,
                          size_t errlen);

/*
 * The same for the SIPC_* variables in envp (NULL-terminated "NAME=value"
 * list; NULL = environ, which must not change meanwhile).  Only known
 * names are read.  Call it after sipc_config_load_file(): environment
 * values override file values, but may only tighten, always: an
 * environment that is production or unset stays at that level
 * (SIPC_ENVIRONMENT=development over an unset environment is refused;
 * say development in code or in the first file), and required
 * guarantees can be added, never dropped (SIPC_E_CONFIG otherwise).
 * Errors read "environment: SIPC_KEY: reason".  Any thread.
 */
int sipc_config_load_env(char *const *envp, struct sipc_config *cfg,
                         sipc_config_store **store, char *errbuf,
                         size_t errlen);

/* Free a store and every string it owns.  Accepts NULL. */
void sipc_config_store_free(sipc_config_store *st);

/* ------------------------------------------------------- reconciliation */

/*
 * After a crash of the process that hosted a supervisor with a state_dir,
 * the next supervisor on that directory lists the previous instances'
 * requests that were never resolved.  Each says what can be proven:
 *   NEVER_SENT    accepted, never written to a worker: safe to resubmit.
 *   MAY_HAVE_RUN  written to a worker, no outcome journalled: unknown,
 *                 the host decides (by its idempotency key).
 *   COMPLETED     the outcome was journalled (outcome, error) but the host
 *                 may not have received or persisted it before the crash.
 * Resolving one journals that fact, so a crash during reconciliation
 * loses nothing: what was resolved stays resolved, the rest is listed
 * again.
 */
enum sipc_unresolved_state {
	SIPC_UNRESOLVED_NEVER_SENT,
	SIPC_UNRESOLVED_MAY_HAVE_RUN,
	SIPC_UNRESOLVED_COMPLETED,
};

struct sipc_unresolved {
	uint64_t request_id;      /* id in its (previous) instance */
	uint8_t instance[16];     /* the instance that accepted it */
	char key[256];            /* idempotency key, NUL-terminated ("" if none) */
	uint64_t payload_digest;  /* FNV-1a 64 of the payload (match, not security) */
	uint32_t payload_len;
	enum sipc_unresolved_state state;
	enum sipc_outcome outcome; /* COMPLETED only */
	int error;                 /* COMPLETED only */
};

/* List the previous instances' unresolved requests (*ret_n may be 0 and
 * *ret NULL).  Free the list with sipc_reconcile_free().
 * SIPC_E_SHUTDOWN once sipc_destroy() has begun.  Any thread. */
int sipc_reconcile_list(sipc_supervisor *s, struct sipc_unresolved **ret,
                        size_t *ret_n);
void sipc_reconcile_free(struct sipc_unresolved *u);
/* Mark one listed request resolved (journalled).  SIPC_E_NOTFOUND when it
 * is already resolved or unknown; SIPC_E_SHUTDOWN once sipc_destroy() has
 * begun.  `u` is read during the call only.  Any thread. */
int sipc_reconcile_resolve(sipc_supervisor *s, const struct sipc_unresolved *u);

/*
 * Workers of previous instances that the journal says may still run (an
 * ownership record without its end), and what sipc_create() did about
 * each before this instance started its own workers.  Each record names
 * the provider that launched the worker and holds the identity that
 * provider journalled; that provider's leftover op judges it (for
 * "local": a process exists now with the recorded pid, start time, boot
 * id and process group, pinned by a pidfd before the check):
 *   TERMINATED   identity proven and terminated (local: TERM, grace_ms,
 *                KILL, its group too): it has exited.
 *   NOT_PROVEN   nothing matches the record now (gone, or its identity
 *                names something else): nothing was signalled.
 *   FAILED       the check or the termination failed (`error`): it may
 *                still run.  Its record is kept, so the next instance
 *                tries again.
 *   NO_PROVIDER  the provider it names is not available in this process
 *                (not built in, not registered): nothing was done; not
 *                an error for sipc_create().  Its record is kept for an
 *                instance that has the provider.
 */
enum sipc_leftover_verdict {
	SIPC_LEFTOVER_TERMINATED,
	SIPC_LEFTOVER_NOT_PROVEN,
	SIPC_LEFTOVER_FAILED,
	SIPC_LEFTOVER_NO_PROVIDER,
};

struct sipc_leftover {
	uint8_t instance[16];     /* the instance that spawned it */
	uint32_t worker_id;       /* its slot and generation there */
	uint32_t generation;
	/* Local identities only (provider "local"), as recorded; 0 for
	 * any other provider, whose identity is opaque. */
	pid_t pid;
	pid_t pgid;
	uint64_t starttime;       /* clock ticks after boot */
	enum sipc_leftover_verdict verdict;
	int error;                /* FAILED only: a negative error code */
	char provider[32];        /* the provider that launched it */
};

/* The verdicts above, in the order they were reached (*ret_n may be 0
 * and *ret NULL).  *ret is a copy owned by the caller: free it with
 * sipc_reconcile_leftovers_free().  SIPC_E_CONFIG without a state_dir,
 * SIPC_E_SHUTDOWN once sipc_destroy() has begun, -ENOMEM.  Any thread. */
int sipc_reconcile_leftovers(sipc_supervisor *s, struct sipc_leftover **ret,
                             size_t *ret_n);
void sipc_reconcile_leftovers_free(struct sipc_leftover *l);

#ifdef __cplusplus
}
#endif
#endif /* SIPC_H */

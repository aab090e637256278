/*
 * sipctest.h - helpers shared by the test binaries that drive a real
 * supervisor (lifecycle, termination, restart, contract, backpressure,
 * hostile, supervisor, reconcile): a log capture, configuration and
 * start-up, "\0CMD" command requests, stats polling with the common
 * predicates, an async outcome box, decoy processes, resource baselines
 * and resident memory.  Generic process helpers live in testlib.h.
 *
 * Threads: the CUnit thread calls everything here except st_log_fn()
 * and st_outbox_done(), which the library calls on its own threads; they
 * touch only mutex-guarded state (the log capture's lock, a box's mu).
 */
#ifndef SIPC_SIPCTEST_H
#define SIPC_SIPCTEST_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sipc.h"
#include "testlib.h"

/* Sanitizer shadow memory and quarantines inflate resident memory in
 * proportion to what the process touches: tests check RSS in plain
 * builds only (ST_CHECK_RSS).  Decided per translation unit. */
#if defined(__SANITIZE_ADDRESS__)
#define ST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ST_UNDER_ASAN 1
#endif
#endif
#ifndef ST_UNDER_ASAN
#define ST_UNDER_ASAN 0
#endif
#if defined(__SANITIZE_THREAD__)
#define ST_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ST_UNDER_TSAN 1
#endif
#endif
#ifndef ST_UNDER_TSAN
#define ST_UNDER_TSAN 0
#endif
#define ST_CHECK_RSS (!ST_UNDER_ASAN && !ST_UNDER_TSAN)

/* ------------------------------------------------------------ log capture */

/* A sipc_log_fn that appends each message and a newline to one capture
 * buffer (32 KiB; what does not fit is dropped). */
void st_log_fn(void *arg, enum sipc_log_level lvl, uint32_t wid,
               uint32_t gen, pid_t pid, const char *msg);
/* Empty the capture (st_start() does it before each create). */
void st_log_reset(void);
/* Has any captured message contained `needle`? */
bool st_log_has(const char *needle);
/* Print the capture to stderr (a failing test's evidence). */
void st_log_print(void);
/* The same as a tl_wait_until() condition; arg is the needle. */
bool st_log_has_cb(void *arg);

/* ------------------------------------------------------- configuration */

/* The provider tests run on: $SIPC_TEST_PROVIDER, "local" when unset.
 * st_sandboxed(): not the local one, so workers see no host pid, file
 * or socket; a test of local-only mechanics (process groups, host pids,
 * files shared with the worker) skips there with its reason. */
const char *st_provider(void);
bool st_sandboxed(void);
/* Under a sandboxed provider: tl_skip("local-only ...: why"), true. */
bool st_skip_sandboxed(const char *why);

/*
 * sipc_config_init() plus the test environment, the test provider, the
 * fixture's path (copied into one static buffer that only the next
 * st_cfg_init() overwrites), argv and the worker count.
 */
void st_cfg_init(struct sipc_config *c, const char *fixture,
                 char *const *argv, unsigned workers);
/*
 * st_cfg_init() plus short timings (grace and drain 300 ms, handshake
 * 3 s, cancel grace 200 ms, restart backoff 20..200 ms) and st_log_fn as
 * the log callback.
 */
/* env_set for a runtime fixture that writes ACCEPT frames instead of
 * offering a start counter (CONTRACT A5; fixtures/fixture.h): for tests
 * that watch ACCEPTs arrive (frames_in). */
extern const char *const st_env_accept_frames[];
void st_cfg_base(struct sipc_config *c, const char *fixture,
                 char *const *argv, unsigned workers);

/*
 * Reset the log capture, sipc_create() (printing the error text on
 * failure), then, if `ready` > 0, wait up to `wait_ms` for that many
 * ready workers.  Either failure is a fatal assertion; a supervisor
 * whose workers did not get ready is destroyed first.
 */
sipc_supervisor *st_start(const struct sipc_config *c, unsigned ready,
                          int wait_ms);

/* ------------------------------------------------------------ requests */

/* Synchronous call with a "\0CMD" command payload (cmd NULL: "data");
 * sipc_call() failing is a fatal assertion.  The caller releases *r. */
void st_call_cmd(sipc_supervisor *s, const char *cmd, unsigned timeout_ms,
                 unsigned flags, struct sipc_result *r);

/* Async outcomes: exactly one per submit, counted per index.  Tests
 * declare a box static with .mu = PTHREAD_MUTEX_INITIALIZER. */
#define ST_OUTBOX_MAX 512
struct st_outbox {
	pthread_mutex_t mu;
	unsigned calls[ST_OUTBOX_MAX];
	struct sipc_result res[ST_OUTBOX_MAX];
	unsigned total;
};
struct st_outslot { struct st_outbox *box; unsigned i; };

/* sipc_done_fn for an st_outslot: keeps the first result of its slot. */
void st_outbox_done(void *arg, struct sipc_result *res);
/* Release every kept result (the box is not reset). */
void st_outbox_release(struct st_outbox *b);
/* Forget every count and result (release them first). */
void st_outbox_reset(struct st_outbox *b);
/* Callbacks so far, over all slots. */
unsigned st_outbox_total(struct st_outbox *b);
/* Wait up to `ms` for at least `n` callbacks. */
bool st_outbox_wait(struct st_outbox *b, unsigned n, int ms);

/* Asynchronous "\0CMD" command; its outcome lands in slot `o`.
 * sipc_submit() failing is a fatal assertion. */
void st_submit_cmd(sipc_supervisor *s, const char *cmd, unsigned timeout_ms,
                   struct st_outslot *o);
/* The same with request flags and a queue budget (0: the pool's);
 * returns the request's id. */
uint64_t st_submit_cmd_opts(sipc_supervisor *s, const char *cmd,
                            unsigned timeout_ms, unsigned flags,
                            unsigned queue_ms, struct st_outslot *o);

/* ------------------------------------------------------------ stats */

/* Poll stats until pred holds or `ms` pass; pred sees one snapshot at a
 * time. */
typedef bool (*st_stat_pred)(const struct sipc_stats *, void *);
bool st_stats_wait(sipc_supervisor *s, st_stat_pred fn, void *arg, int ms);

/* A copy of worker slot `i`'s counters (all zero if unavailable). */
struct sipc_worker_stats st_worker_stats(sipc_supervisor *s, unsigned i);

/* The pool-wide counters of a snapshot, its workers array already
 * released (all zero if unavailable). */
struct sipc_stats st_pool_stats(sipc_supervisor *s);

/* Slot's last exit is of `kind`. */
struct st_exit_want { unsigned slot; enum sipc_exit_kind kind; };
bool st_pred_exit_kind(const struct sipc_stats *st, void *arg);

/* Slot 0's last exit is of `kind` for `reason`. */
struct st_term_want { enum sipc_exit_kind kind; enum sipc_term_reason reason; };
bool st_pred_term(const struct sipc_stats *st, void *arg);

/* Slot runs generation >= gen and is READY. */
struct st_gen_want { unsigned slot, gen; };
bool st_pred_gen_ready(const struct sipc_stats *st, void *arg);
/* Slot 0 came back as a new generation and is READY (arg unused). */
bool st_pred_respawned(const struct sipc_stats *st, void *arg);
/* The pool's one worker holds exactly one request (arg unused). */
bool st_pred_one_inflight(const struct sipc_stats *st, void *arg);
/* Nothing pending and nothing held against the ceiling (arg unused). */
bool st_pred_settled(const struct sipc_stats *st, void *arg);

/* ------------------------------------------------------------ processes */

/* State letter, parent and process group of `pid` from /proc/PID/stat;
 * 0, or -1 (outputs untouched) when it cannot be read.  Any output may
 * be NULL. */
int st_proc_stat(pid_t pid, char *ret_state, pid_t *ret_ppid,
                 pid_t *ret_pgrp);

/* The "kid=PID" line the pgkid fixture writes on its diagnostics
 * descriptor, read within `ms`; -1 when none came. */
pid_t st_read_kid(int fd, int ms);

/* tl_wait_until() conditions: the pid_t at arg is no longer alive (gone
 * or a zombie); it is gone, reaped (no such process, not even a
 * zombie); it is a zombie; no child of this process is a zombie (arg
 * unused). */
bool st_pid_dead(void *arg);
/* The process that reads a worker's channel: `pid` itself, or, when it
 * runs under sipc-init in a namespace (or bubblewrap's init), that
 * process's one child. */
pid_t st_reader_pid(pid_t pid);
bool st_pid_gone(void *arg);
bool st_pid_zombie(void *arg);
bool st_no_zombie_children(void *arg);

/*
 * Two `sleep` processes the library must never signal: one in this
 * process's group, one in a group of its own, one in a session of its
 * own.  st_decoys_check() asserts all are alive and not even stopped;
 * st_decoys_stop() checks, then kills and reaps them.
 */
struct st_decoys { pid_t same_group, own_group, own_session; };
void st_decoys_start(struct st_decoys *d);
void st_decoys_check(const struct st_decoys *d);
void st_decoys_stop(struct st_decoys *d);

/* What the process holds before a test; checked again after destroy. */
struct st_base {
	int fds, threads, children;
	long rss_kb;
};
struct st_base st_baseline(void);
/* Back to the baseline within `ms`, and no zombie children. */
void st_check_nothing_left(const struct st_base *b, int ms);
/* Unblock SIGCHLD in the calling thread: an owner-mode sipc_create()
 * blocks it there and leaves it so after destroy. */
void st_unblock_sigchld(void);

/* A field of /proc/self/status in KiB (key "VmRSS:"), or -1. */
long st_status_kb(const char *key);

/* No core files from crashing fixtures (soft RLIMIT_CORE 0); for main(). */
void st_no_core_files(void);

/* Copy a file, mode 0755 (an executable fixture).  0 or -errno. */
int st_copy_file(const char *from, const char *to);

/* Can a child of this process unshare() these namespaces (CLONE_NEW*)?
 * Probed in a forked child, so this process is untouched.  0 when it
 * can, else -errno (EPERM without root).  Tests that need namespaces
 * call tl_skip() when it fails. */
int st_can_unshare(int flags);

/* Tests that force containment = pid_namespace: true (and the test is
 * skipped, with the kernel's reason) when a PID namespace cannot be made
 * here.  The probe is the one the library's own start meets: a child
 * unsharing CLONE_NEWPID | CLONE_NEWNS, the flags src/os/clone.c
 * clones the namespace modes with (refused without CAP_SYS_ADMIN in the
 * user namespace, i.e. as an unprivileged user), never a uid test. */
bool st_skip_no_pidns(void);

#endif

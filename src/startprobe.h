/*
 * startprobe.h - the guarantees a provider declares, proven at
 * sipc_create() by running sipc-probe once through it.  The bait the
 * host sets up and the verdict per guarantee are also what the provider
 * conformance suite judges with: one judge per guarantee (the run:
 * startprobe.c; the bait and the judges: probejudge.c).
 */
#ifndef SIPC__STARTPROBE_H
#define SIPC__STARTPROBE_H

#include <stddef.h>

#include "sipc_provider.h"

/*
 * Launch the probe program through provider `p` (its state `state`,
 * made by its create op), prove each guarantee of `required` from the
 * host side, then stop, sweep and release the probe.  Bounded: the
 * whole run ends within handshake_ms + grace_ms + SIPC__PROBE_SLACK_MS
 * of cfg, whatever the probe does (requests until handshake_ms + 2 s,
 * the end after a forced stop within grace_ms + 1 s).  Returns 0 when every required
 * guarantee was confirmed; SIPC_E_PRODUCTION with each guarantee not
 * confirmed and the reason in errbuf otherwise (a probe program that
 * cannot be executed, does not answer or hangs confirms nothing).
 * scratch_dir (NULL: none): the probe's scratch directory, given to its
 * launch as a worker's is (SIPC_SCRATCH), so filesystem_rules is judged
 * writing there too.
 * sipc_create()'s thread, before the reaper starts: the ops' per-handle
 * calls are then the only ones on this state.
 */
#define SIPC__PROBE_SLACK_MS 3000
int sipc__startprobe_run(const struct sipc_provider_ops *p, void *state,
                         const struct sipc_config *cfg, unsigned required,
                         const char *scratch_dir, char *errbuf, size_t errlen);

/* The bait and the judges. */

/*
 * What the host sets up before the probe is launched: the truth each
 * reply is judged against.  A directory (0755) under $TMPDIR or /tmp
 * named after a random token, holding "secret" (0644, the token as its
 * content); secret_fd open on it without close-on-exec, to be held
 * across the launch; listeners on 127.0.0.1:port, on the abstract
 * unix socket named by the token and on "sock" (0777) in the directory
 * (under /tmp when $TMPDIR would make that path too long).  sipc__bait_make: 0 or a negative
 * errno, everything made so far dropped on failure.  sipc__bait_drop
 * closes and removes whatever is left (idempotent).  Caller's thread;
 * a bait is not shared.
 */
struct sipc__bait {
	char dir[256], file[300], sock[300], token[48];
	int secret_fd;
	int tcp_fd, abs_fd, unix_fd, port;
};
int sipc__bait_make(struct sipc__bait *b);
void sipc__bait_drop(struct sipc__bait *b);

/*
 * One request to a running sipc-probe (its grammar: src/probe/), the
 * reply's payload as NUL-terminated text in out.  0, or a negative
 * error when no REPLY came (nothing is then confirmed).
 */
typedef int (*sipc__probe_ask_fn)(void *ctx, const char *req, char *out,
                                  size_t cap);
#define SIPC__PROBE_REPLY_MAX (1u << 20)   /* "environ" included */

/* How a probe launched with bait `b` is judged. */
struct sipc__judge {
	sipc__probe_ask_fn ask;
	void *ctx;
	const struct sipc__bait *b;
	char *const *envp;       /* the launch's environment (NULL: none) */
	unsigned fork_limit;     /* resource_limits: the pids limit the
	                            worker must hit, 1..SIPC__FORK_PROBE_MAX */
	pid_t pid;               /* the launch's display_pid: the host reads
	                            the worker's ids there */
	const char *scratch;     /* the launch's scratch directory, or NULL */
	const char *limits;      /* limits: what the launch sets, "AS:FSIZE:
	                            NOFILE:CPU:NPROC" (each a number or "-") */
	const char *tmp_size;    /* limits: /tmp's cap in bytes ("": none) */
	const char *allow;       /* syscall_filter: syscalls_allow (NULL:
	                            none); with unshare in it, only clone
	                            is judged */
};
#define SIPC__FORK_PROBE_MAX 1023    /* the probe forks at most 1024 */

/*
 * The verdict on one guarantee `bit` (not tree containment: that one is
 * judged after the worker's stop and sweep, by the start-up run only).
 * Returns 1 confirmed, 0 not confirmed (why says which either way), or
 * a negative error: no answer, or a reply outside the probe's grammar
 * (SIPC_E_PROTOCOL), which confirms nothing.  sipc__judge_fds and
 * sipc__judge_env are the two halves of no_inherited_secrets (the
 * descriptor one first).  Caller's thread, with the probe's channel.
 */
int sipc__judge(unsigned bit, const struct sipc__judge *j, char *why,
                size_t len);
int sipc__judge_fds(const struct sipc__judge *j, char *why, size_t len);
int sipc__judge_env(const struct sipc__judge *j, char *why, size_t len);
/* The "errno=E" of a probe reply as text ("no error given" without). */
const char *sipc__probe_reply_err(const char *text);

#endif

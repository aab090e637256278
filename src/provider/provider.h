/*
 * provider/provider.h - what src/provider/ exports: the provider registry, the local and sandbox adapters, the start-up probes.
 */
#ifndef SIPC_SRC_PROVIDER_H
#define SIPC_SRC_PROVIDER_H

#include "os/os.h"

struct sipc_supervisor;
struct sipc__slot;
struct sipc__req;
struct sipc__table;
struct sipc__event;
struct sipc__callread;
struct sipc__wbatch;
struct sipc__diag;
struct sipc__usage;
struct sipc__journal;
struct sipc__rx;
struct sipc_provider_ops;
struct sipc_provider_chan;

/* ---- provider */
#include <stdbool.h>
#include <stddef.h>

#include "sipc_provider.h"

/* Built in (provider/local.c). */
extern const struct sipc_provider_ops sipc__provider_local;

/* The provider called `name`: a built-in, else a registered one; NULL
 * when there is none.  Any thread. */
const struct sipc_provider_ops *sipc__provider_find(const char *name);

/* The guarantees cfg requires: its own, plus SIPC_G_ALL outside
 * development and test.  Pure; any thread. */
unsigned sipc__provider_required(const struct sipc_config *cfg);

/*
 * Select the provider named in cfg and check it against the
 * configuration's environment, before anything is made.  Fails closed:
 * SIPC_E_CONFIG for an unknown name, SIPC_E_NOENV when the environment
 * is unset, SIPC_E_PRODUCTION (each missing guarantee named in errbuf)
 * when the provider does not declare a required guarantee.  Any
 * thread.
 */
int sipc__provider_select(const struct sipc_config *cfg, char *errbuf,
                          size_t errlen,
                          const struct sipc_provider_ops **ret);

/*
 * After the leftover verdicts of sipc_create() (right after the
 * provider's state was made when there is no state directory, hence no
 * verdict): a built-in provider's state with a cgroup ends what crashed
 * supervisors left in theirs (sipc__cg_end_dead: its rules,
 * journal_settled and `say`).  The state of a registered provider is
 * its own: nothing is done.  The number of cgroups killed, or -errno.
 * sipc_create()'s thread.
 */
int sipc__provider_end_dead(const struct sipc_provider_ops *p, void *state,
                            bool journal_settled, sipc__cg_dead_fn *say,
                            void *arg);

/* ---- startprobe */
#include <stddef.h>


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

/* ---- sandbox */
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>


extern const struct sipc_provider_ops sipc__provider_sandbox;

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

/* The bwrap this process uses: SIPC__BWRAP_DEFAULT, checked once by
 * sipc__bwrap_trusted (never looked up on $PATH).  0 with *ret set, or
 * that check's error.  (provider/sandbox_argv.c) */
#define SIPC__BWRAP_DEFAULT "/usr/bin/bwrap"
int sipc__sandbox_bwrap(const char **ret);
int sipc__bwrap_trusted(const char *path);
/* Tests only: another path in place of the default, set before the
 * first lookup of a process. */
extern const char *sipc__bwrap_test_path;

/* Room for the fixed arguments, the host's top-level links, two binds
 * and sipc-init's own arguments (added to the worker's); each file of a
 * minimal view adds three. */
#define SIPC__SBX_ARGV_FIXED 80

/*
 * What a worker sees of the host's files (provider/sandbox_argv.c): its program (a
 * #! script: the script file and its interpreter), sipc-init, their
 * interpreter and libraries (os/os.h), the loader's cache and the
 * host's ro_paths, each bound read-only at its own path; or, when those
 * cannot be told (a library not found), all of /usr and the two
 * programs' directories, with `note` saying why.
 */
struct sipc__sbx_view {
	char path[PATH_MAX], init[PATH_MAX]; /* made for (as given) */
	struct sipc__elfdeps files;   /* n == 0: the whole-/usr view */
	char note[96];                /* "" for a minimal view */
	char *ro_paths;               /* the host's (sandbox_ro_paths) or NULL */
	bool landlock;                /* the worker gets the filesystem rules
	                               * (set by the provider: the kernel has
	                               * Landlock) */
};

/* Make v for worker `path` and sipc-init `init`, reading their ELF
 * files (nothing runs).  0 (minimal, or the /usr view with a note), or
 * -ENOMEM.  Free with sipc__sbx_view_free.  Any thread. */
int sipc__sbx_view_make(struct sipc__sbx_view *v, const char *init,
                        const char *path, const char *ro_paths);
/* A worker whose arguments name another executable by absolute path (a
 * wrapper such as sipc-exec running a converter) runs it, and the data
 * files it reads are named by no ELF header: v becomes the whole-/usr
 * view, its note naming the program.  Such a program must live under
 * /usr (or beside the worker) to be seen.  _widens() says whether it
 * would (the program, or NULL), changing nothing.  Any thread. */
const char *sipc__sbx_view_widens(const struct sipc__sbx_view *v,
                                  char *const *argv);
void sipc__sbx_view_widen(struct sipc__sbx_view *v, char *const *argv);
/* v (another program's launch: a start-up probe) becomes base's view
 * plus its own files: base's files added, or, when either is the
 * whole-/usr view, that view with base's program directory among the
 * read-only paths.  0 or -errno.  Any thread. */
int sipc__sbx_view_join(struct sipc__sbx_view *v,
                        const struct sipc__sbx_view *base);
void sipc__sbx_view_free(struct sipc__sbx_view *v);

/* bwrap's command line for one worker, and the strings it points to. */
/* What sipc-init is told to set in the worker's process, and the cap
 * of its /tmp, as bwrap's arguments: "as:fsize:nofile:cpu:nproc"
 * (SIPC__INIT_LIMITS, "-" unlimited) and bytes. */
struct sipc__sbx_policy {
	bool set;                     /* false: the defaults */
	char limits[128];
	char tmp_size[24];            /* "" : /tmp not capped */
	/* the configuration's lists (owned by the sandbox's state), NULL
	 * for none, and audit mode */
	const char *refuse, *allow;
	bool audit;
};

/* The defaults (sipc.conf(5)): address space 4 GiB, file size 1 GiB,
 * 256 descriptors, 600 s of CPU, 512 processes of the worker's uid in
 * its user namespace, /tmp 256 MiB, the default system-call profile.  In
 * the sanitizer builds the address space is unlimited (their shadow
 * memory reserves terabytes). */
void sipc__sbx_policy_default(struct sipc__sbx_policy *ret);

/* Seccomp_filters of the calling process (/proc/self/status): the
 * filters any worker inherits before sipc-init adds its own; 0 where
 * the line is missing or unreadable. */
unsigned sipc__sbx_host_filters(void);

/* The configuration's limits over the defaults (0: the default,
 * SIPC_UNLIMITED: none); refuse, allow and audit are the caller's to
 * set. */
void sipc__sbx_policy_from_config(const struct sipc_config *cfg,
                                  struct sipc__sbx_policy *ret);

/* Does the libseccomp sipc-init was built with know every name of the
 * comma-separated list?  Runs "init --check-syscalls list".  0; or
 * SIPC_E_CONFIG with the first unknown name in errbuf; or SIPC_E_EXEC
 * when init cannot tell (not run, no answer). */
int sipc__sbx_syscalls_check(const char *init, const char *list,
                             char *errbuf, size_t errlen);

struct sipc__sbx_argv {
	const char **v;               /* NULL-terminated; allocated */
	size_t n, cap;
	char *ro;                     /* ro_paths, cut at each ':' */
	char *ll_ro, *ll_rw;          /* the rules' lists, '\n'-separated */
	size_t ll_ro_len, ll_rw_len;
	int ll_err;
	/* set by the caller before the build; an empty one: the defaults */
	struct sipc__sbx_policy pol;
	char wdir[PATH_MAX], idir[PATH_MAX], wpath[PATH_MAX], ipath[PATH_MAX];
	char link[4][PATH_MAX];
};

/*
 * Build it (provider/sandbox_argv.c): the namespaces, the read-only view (view's
 * files, or /usr with the host's top-level links and the worker's and
 * sipc-init's directories; the host's top-level links either way),
 * fresh /proc, /dev and /tmp, the worker's scratch directory read-write
 * at its own path (when `scratch` is not NULL), then "-- sipc-init
 * WORKER ARGV0 [ARGS...]", both programs resolved.  With view->landlock,
 * the filesystem rules for sipc-init: read beneath every read-only bind,
 * /proc and /dev; write beneath scratch, /tmp and the harmless devices.
 * 0, or -errno (a path that does not resolve); nothing is then held.
 * The caller frees with sipc__sbx_argv_free; the strings are argv's,
 * a's, view's or scratch (which must outlive a->v).
 */
int sipc__sbx_argv_build(struct sipc__sbx_argv *a, const char *bwrap,
                         const struct sipc__sbx_view *view,
                         const char *scratch, char *const *argv);
void sipc__sbx_argv_free(struct sipc__sbx_argv *a);

/* Terminate the sandbox `id` names, left by a dead supervisor, if it is
 * proven (same boot; its init alive with the recorded start time and
 * PID namespace): TERM to its init, KILL after grace_ms.  1 proven and
 * ended, 0 not proven (left alone), or -errno.  Blocks up to grace_ms
 * plus a bounded wait.  Any thread. */
int sipc__sandbox_leftover(const struct sipc__sbx_id *id, unsigned grace_ms);

/* The identity as journalled (sipc_provider_id bytes, versioned) and
 * back: decode is -EINVAL for bytes that are not a sandbox identity. */
void sipc__sbx_id_encode(const struct sipc__sbx_id *k,
                         struct sipc_provider_id *ret);
int sipc__sbx_id_decode(const struct sipc_provider_id *id,
                        struct sipc__sbx_id *ret);

/* The cgroup part of a state made by the provider's create (os/os.h);
 * NULL for NULL. */
struct sipc__cg_state;
const struct sipc__cg_state *sipc__sandbox_cg_state(const void *state);

/* The ids a root supervisor's sandbox workers run as (cfg's
 * sandbox_uid/gid; NULL cfg: 65534): true with them set, false when the
 * supervisor is not root (its workers keep its own ids). */
bool sipc__sandbox_worker_ids(const struct sipc_config *cfg, uid_t *ret_uid,
                              gid_t *ret_gid);

/* Can uid and gid (with no other group) reach and execute path (every
 * directory above it searchable, the file readable and executable, by
 * mode bits)?  0, -EACCES with why naming the file or directory, or
 * another -errno.  Any thread.  (provider/sandbox_argv.c) */
int sipc__sbx_reachable(const char *path, uid_t uid, gid_t gid, char *why,
                        size_t wlen);

/* Tests only (the probes shown able to fail): what a launch leaves out
 * while the provider still declares it. */
enum {
	SIPC__SBX_SKIP_LANDLOCK = 1u << 0, /* no filesystem rules */
	SIPC__SBX_SKIP_SETID = 1u << 1,    /* a root supervisor's bwrap stays
	                                    * root */
	SIPC__SBX_SKIP_NETNS = 1u << 2,    /* the host's network namespace */
	SIPC__SBX_SKIP_TMPFS = 1u << 3,    /* the host's /tmp, not an empty
	                                    * one */
	SIPC__SBX_SKIP_FILTER = 1u << 5,   /* no system-call filter (nor
	                                      the privileges it drops) */
	SIPC__SBX_SKIP_LIMITS = 1u << 6,   /* no resource limits, /tmp not
	                                    * capped */
	SIPC__SBX_SKIP_SCRATCH_RULE = 1u << 4, /* rules without the scratch
	                                        * directory's write */
};
extern unsigned sipc__sbx_test_skip;

/* The identity of a started sandbox (a handle of sipc__provider_sandbox). */
const struct sipc__sbx_id *sipc__sandbox_id(const void *handle);

#endif /* SIPC_SRC_PROVIDER_H */

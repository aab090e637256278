/*
 * sandbox.h - the sandbox provider (bubblewrap; sandbox.c).
 *
 * Threads: the reaper thread calls the provider's ops; the rest is for
 * tests and selection, any thread.
 */
#ifndef SIPC_SANDBOX_H
#define SIPC_SANDBOX_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "elfdeps.h"
#include "ident.h"
#include "provider.h"

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
 * that check's error.  (sbxargv.c) */
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
 * What a worker sees of the host's files (sbxargv.c): its program (a
 * #! script: the script file and its interpreter), sipc-init, their
 * interpreter and libraries (elfdeps.h), the loader's cache and the
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
 * Build it (sbxargv.c): the namespaces, the read-only view (view's
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

/* The cgroup part of a state made by the provider's create (cgroup.h);
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
 * another -errno.  Any thread.  (sbxargv.c) */
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

#endif

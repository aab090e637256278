/*
 * sandbox.h - the sandbox provider (bubblewrap; sandbox.c).
 *
 * Threads: the reaper thread calls the provider's ops; the rest is for
 * tests and selection, any thread.
 */
#ifndef SIPC_SANDBOX_H
#define SIPC_SANDBOX_H

#include <limits.h>
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
 * What a worker sees of the host's files (sbxargv.c): its program,
 * sipc-init, their interpreter and libraries (elfdeps.h) and the
 * loader's cache, each bound read-only at its own path; or, when those
 * cannot be told (a #! script, a library not found), all of /usr and
 * the two programs' directories, with `note` saying why.
 */
struct sipc__sbx_view {
	char path[PATH_MAX], init[PATH_MAX]; /* made for (as given) */
	struct sipc__elfdeps files;   /* n == 0: the whole-/usr view */
	char note[96];                /* "" for a minimal view */
};

/* Make v for worker `path` and sipc-init `init`, reading their ELF
 * files (nothing runs).  0 (minimal, or the /usr view with a note), or
 * -ENOMEM.  Free with sipc__sbx_view_free.  Any thread. */
int sipc__sbx_view_make(struct sipc__sbx_view *v, const char *init,
                        const char *path);
/* A worker whose arguments name another executable by absolute path (a
 * wrapper such as sipc-exec running a converter) runs it, and the data
 * files it reads are named by no ELF header: v becomes the whole-/usr
 * view, its note naming the program.  Such a program must live under
 * /usr (or beside the worker) to be seen.  _widens() says whether it
 * would (the program, or NULL), changing nothing.  Any thread. */
const char *sipc__sbx_view_widens(const struct sipc__sbx_view *v,
                                  char *const *argv);
void sipc__sbx_view_widen(struct sipc__sbx_view *v, char *const *argv);
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
 * WORKER ARGV0 [ARGS...]", both programs resolved.  0, or -errno (a path
 * that does not resolve); a->v is then NULL.  The caller frees a->v; the
 * strings are argv's, a's, view's or scratch (which must outlive a->v).
 */
int sipc__sbx_argv_build(struct sipc__sbx_argv *a, const char *bwrap,
                         const struct sipc__sbx_view *view,
                         const char *scratch, char *const *argv);

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

/* The identity of a started sandbox (a handle of sipc__provider_sandbox). */
const struct sipc__sbx_id *sipc__sandbox_id(const void *handle);

#endif

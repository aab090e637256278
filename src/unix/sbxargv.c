/*
 * sbxargv.c - the sandbox provider's command line: which bwrap, and
 * what it is told (sandbox.h).  The view a worker gets is all here: by
 * default only the files its program and sipc-init need to start
 * (elfdeps.h), each bound read-only at its own path; all of /usr when
 * they cannot be told (a script, a library not found), said in the
 * launch's note.
 *
 * Threads: the reaper thread (through sandbox.c) and tests; the bwrap
 * lookup is done once (pthread_once) and read-only after.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "elfdeps.h"
#include "init_proto.h"
#include "sandbox.h"

static pthread_once_t bwrap_once = PTHREAD_ONCE_INIT;
static char bwrap_path[PATH_MAX];
static int bwrap_err;

/* Is path a tool this process may run as its sandbox: absolute, a
 * regular executable file owned by root or by this uid, and neither it
 * nor any directory above it writable by group or others (a directory
 * with the sticky bit, like /tmp, is no exception)?  0, -ENOENT (or the
 * stat's errno) when it is not there, -EINVAL for a relative path,
 * -EPERM when it is there but not to be trusted. */
int
sipc__bwrap_trusted(const char *path)
{
	char dir[PATH_MAX], *slash;
	struct stat sb;
	uid_t me = geteuid();
	size_t n;

	if (path == NULL || path[0] != '/')
		return -EINVAL;
	if ((n = strlen(path)) >= sizeof(dir))
		return -ENAMETOOLONG;
	if (stat(path, &sb) < 0)
		return -errno;
	if (!S_ISREG(sb.st_mode) || access(path, X_OK) < 0)
		return -EACCES;
	memcpy(dir, path, n + 1);
	for (;;) {
		if ((sb.st_uid != 0 && sb.st_uid != me) ||
		    (sb.st_mode & (S_IWGRP | S_IWOTH)) != 0)
			return -EPERM;
		if (strcmp(dir, "/") == 0)
			return 0;
		slash = strrchr(dir, '/');
		if (slash == dir)
			slash[1] = '\0';
		else
			*slash = '\0';
		if (stat(dir, &sb) < 0)
			return -errno;
	}
}

/* The fixed absolute path, checked once (never a $PATH lookup): the
 * sandbox tool must not change under a running supervisor. */
const char *sipc__bwrap_test_path;

static void
bwrap_find(void)
{
	const char *want = sipc__bwrap_test_path ? sipc__bwrap_test_path :
	    SIPC__BWRAP_DEFAULT;

	/* The file itself and its own directories are checked, and run by
	 * that path: a link is resolved once, here, and never again. */
	if (want[0] != '/')
		bwrap_err = EINVAL;
	else if (realpath(want, bwrap_path) == NULL)
		bwrap_err = errno;
	else
		bwrap_err = -sipc__bwrap_trusted(bwrap_path);
	if (bwrap_err != 0)
		bwrap_path[0] = '\0';
}

int
sipc__sandbox_bwrap(const char **ret)
{
	(void)pthread_once(&bwrap_once, bwrap_find);
	if (bwrap_err != 0)
		return -bwrap_err;
	*ret = bwrap_path;
	return 0;
}

static void
av_add(struct sipc__sbx_argv *a, const char *s)
{
	if (a->n < a->cap - 1)
		a->v[a->n++] = s;
}

static void
av_add3(struct sipc__sbx_argv *a, const char *opt, const char *x, const char *y)
{
	av_add(a, opt);
	av_add(a, x);
	av_add(a, y);
}

/* The host's top-level directories that a program's loader and shells
 * find through: replicated as links where the host has links (merged
 * /usr); where it has directories, bound read-only in the whole-/usr
 * view, left out of a minimal one (its files are bound one by one). */
static void
av_toplevel(struct sipc__sbx_argv *a, bool dirs)
{
	static const char *const top[] = { "/lib", "/lib64", "/bin", "/sbin" };
	struct stat st;
	ssize_t n;

	for (size_t i = 0; i < sizeof(top) / sizeof(top[0]); i++) {
		if (lstat(top[i], &st) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			n = readlink(top[i], a->link[i], sizeof(a->link[i]) - 1);
			if (n <= 0)
				continue;
			a->link[i][n] = '\0';
			av_add3(a, "--symlink", a->link[i], top[i]);
		} else if (S_ISDIR(st.st_mode) && dirs) {
			av_add3(a, "--ro-bind", top[i], top[i]);
		}
	}
}

/* dir = the directory of path and ret_path = path, both resolved (the
 * sandbox sees them at the same place, whatever the host's cwd). */
static int
real_dir(const char *path, char *dir, char *ret_path)
{
	char *slash;

	if (realpath(path, dir) == NULL)
		return -errno;
	memcpy(ret_path, dir, PATH_MAX);
	if ((slash = strrchr(dir, '/')) != NULL && slash != dir)
		*slash = '\0';
	return 0;
}

/* The loader's cache, when the host has one: without it the loader
 * searches only its built-in directories, and a library found through
 * /etc/ld.so.conf (under /usr/local/lib, say) would not load. */
#define LD_CACHE "/etc/ld.so.cache"

int
sipc__sbx_view_make(struct sipc__sbx_view *v, const char *init,
                    const char *path)
{
	char why[PATH_MAX + 64];
	int rc;

	memset(v, 0, sizeof(*v));
	snprintf(v->path, sizeof(v->path), "%s", path);
	snprintf(v->init, sizeof(v->init), "%s", init);
	if ((rc = sipc__elfdeps_add(&v->files, path, why, sizeof(why))) == 0 &&
	    (rc = sipc__elfdeps_add(&v->files, init, why, sizeof(why))) == 0 &&
	    access(LD_CACHE, R_OK) == 0)
		rc = sipc__elfdeps_add_file(&v->files, LD_CACHE, why,
		    sizeof(why));
	if (rc == -ENOMEM)
		return rc;
	if (rc < 0) {
		sipc__elfdeps_free(&v->files);
		snprintf(v->note, sizeof(v->note), "view: all of /usr (%.*s)",
		    75, why);
	}
	return 0;
}

const char *
sipc__sbx_view_widens(const struct sipc__sbx_view *v, char *const *argv)
{
	struct stat st;

	if (argv == NULL || argv[0] == NULL || v->files.n == 0)
		return NULL;
	for (size_t i = 1; argv[i] != NULL; i++)
		if (argv[i][0] == '/' && strcmp(argv[i], v->path) != 0 &&
		    stat(argv[i], &st) == 0 && S_ISREG(st.st_mode) &&
		    access(argv[i], X_OK) == 0)
			return argv[i];
	return NULL;
}

void
sipc__sbx_view_widen(struct sipc__sbx_view *v, char *const *argv)
{
	const char *prog = sipc__sbx_view_widens(v, argv);

	if (prog == NULL)
		return;
	sipc__elfdeps_free(&v->files);
	snprintf(v->note, sizeof(v->note), "view: all of /usr (its arguments "
	    "run %.*s)", 50, prog);
}

void
sipc__sbx_view_free(struct sipc__sbx_view *v)
{
	sipc__elfdeps_free(&v->files);
}

/* The view: every file of the minimal one at its own path, or /usr. */
static void
av_view(struct sipc__sbx_argv *a, const struct sipc__sbx_view *v)
{
	bool whole = v->files.n == 0;

	if (whole)
		av_add3(a, "--ro-bind", "/usr", "/usr");
	av_toplevel(a, whole);
	av_add(a, "--proc");
	av_add(a, "/proc");
	av_add(a, "--dev");
	av_add(a, "/dev");
	/* bounded (bubblewrap >= 0.5: --size applies to the next tmpfs) */
	if (a->pol.tmp_size[0] != '\0') {
		av_add(a, "--size");
		av_add(a, a->pol.tmp_size);
	}
	av_add(a, "--tmpfs");
	av_add(a, "/tmp");
	if (!whole) {
		for (size_t i = 0; i < v->files.n; i++)
			av_add3(a, "--ro-bind", v->files.path[i],
			    v->files.path[i]);
		return;
	}
	av_add3(a, "--ro-bind", a->wdir, a->wdir);
	av_add3(a, "--ro-bind", a->idir, a->idir);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SBX_AS "-"
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SBX_AS "-"
#endif
#endif
#ifndef SBX_AS
#define SBX_AS "4294967296"
#endif

void
sipc__sbx_policy_default(struct sipc__sbx_policy *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->set = true;
	snprintf(ret->limits, sizeof(ret->limits), "%s:%llu:%u:%u:%u", SBX_AS,
	    1ULL << 30, 256u, 600u, 512u);
	snprintf(ret->tmp_size, sizeof(ret->tmp_size), "%llu", 256ULL << 20);
}

/* One field of SIPC__INIT_LIMITS: v, "-" for none, or the default. */
static int
lim_field(char *buf, size_t len, size_t v, const char *dflt)
{
	if (v == SIPC_UNLIMITED)
		return snprintf(buf, len, "-");
	if (v == 0)
		return snprintf(buf, len, "%s", dflt);
	return snprintf(buf, len, "%zu", v);
}

void
sipc__sbx_policy_from_config(const struct sipc_config *cfg,
                             struct sipc__sbx_policy *ret)
{
	/* max_procs unset: worker_nproc_limit, when set, is the same limit
	 * (CONTRACT D7) */
	const size_t v[] = { cfg->rlimit_as, cfg->rlimit_fsize,
	    cfg->rlimit_nofile, cfg->rlimit_cpu, cfg->max_procs != 0 ?
	    cfg->max_procs : cfg->worker_nproc_limit };
	const char *const dflt[] = { SBX_AS, "1073741824", "256", "600",
	    "512" };
	size_t off = 0;

	sipc__sbx_policy_default(ret);
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		if (i > 0)
			ret->limits[off++] = ':';
		off += (size_t)lim_field(ret->limits + off,
		    sizeof(ret->limits) - off, v[i], dflt[i]);
	}
	if (cfg->tmp_size == SIPC_UNLIMITED)
		ret->tmp_size[0] = '\0';
	else if (cfg->tmp_size != 0)
		snprintf(ret->tmp_size, sizeof(ret->tmp_size), "%zu",
		    cfg->tmp_size);
}

int
sipc__sbx_syscalls_check(const char *init, const char *list, char *errbuf,
                         size_t errlen)
{
	char *const argv[] = { (char *)init, "--check-syscalls", (char *)list,
	    NULL };
	char *const envp[] = { NULL };
	posix_spawn_file_actions_t fa;
	char out[128];
	size_t got = 0;
	ssize_t n;
	int p[2], rc;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	if ((rc = posix_spawn_file_actions_init(&fa)) != 0) {
		close(p[0]);
		close(p[1]);
		return -rc;
	}
	(void)posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	rc = posix_spawn(&pid, init, &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	while (rc == 0 && got < sizeof(out) - 1 &&
	    ((n = read(p[0], out + got, sizeof(out) - 1 - got)) > 0 ||
	    (n < 0 && errno == EINTR)))
		got += n > 0 ? (size_t)n : 0;
	close(p[0]);
	/* Reaped here; an owner-mode reaper that took it first leaves the
	 * answer in its output all the same. */
	if (rc == 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	out[got] = '\0';
	if (rc == 0 && strcmp(out, "ok\n") == 0)
		return 0;
	if (rc == 0 && strncmp(out, "unknown ", 8) == 0) {
		out[strcspn(out, "\n")] = '\0';
		snprintf(errbuf, errlen, "syscalls_refuse: %s is not a system "
		    "call libseccomp knows", out + 8);
		return SIPC_E_CONFIG;
	}
	snprintf(errbuf, errlen, "syscalls_refuse: %s could not check the "
	    "names (%s)", init, rc != 0 ? strerror(rc) : "no answer");
	return SIPC_E_EXEC;
}

/* Order matters to bwrap: the empty /tmp comes before the binds, so a
 * worker under /tmp is still seen. */
int
sipc__sbx_argv_build(struct sipc__sbx_argv *a, const char *bwrap,
                     const struct sipc__sbx_view *view, const char *scratch,
                     char *const *argv)
{
	size_t nargs = 0;
	int rc;

	while (argv[nargs] != NULL)
		nargs++;
	if (!a->pol.set)
		sipc__sbx_policy_default(&a->pol);
	a->n = 0;
	a->cap = SIPC__SBX_ARGV_FIXED + nargs + 4 + 3 * view->files.n;
	if ((a->v = calloc(a->cap, sizeof(*a->v))) == NULL)
		return -ENOMEM;
	if ((rc = real_dir(view->path, a->wdir, a->wpath)) < 0 ||
	    (rc = real_dir(view->init, a->idir, a->ipath)) < 0) {
		free(a->v);
		a->v = NULL;
		return rc;
	}
	av_add(a, bwrap);
	av_add(a, "--unshare-all");
	av_add(a, "--die-with-parent");
	av_add(a, "--new-session");
	av_add(a, "--as-pid-1");
	av_view(a, view);
	/* after /tmp's tmpfs: a scratch directory under /tmp is seen */
	if (scratch != NULL)
		av_add3(a, "--bind", scratch, scratch);
	av_add(a, "--chdir");
	av_add(a, "/");
	/* bwrap sets PWD=/ after --chdir, whatever --unsetenv says
	 * (bubblewrap 0.8): this marker, which carries nothing of the
	 * host's, has sipc-init drop both, so the worker gets the launch
	 * environment alone (CONTRACT SB2). */
	av_add(a, "--setenv");
	av_add(a, SIPC__INIT_NO_PWD);
	av_add(a, "1");
	/* The worker runs under sipc-init's system-call filter. */
	av_add(a, "--setenv");
	av_add(a, SIPC__INIT_FILTER);
	av_add(a, "1");
	av_add(a, "--setenv");
	av_add(a, SIPC__INIT_LIMITS);
	av_add(a, a->pol.limits);
	/* names are not secret: bwrap's command line may show them */
	if (a->pol.refuse != NULL && a->pol.refuse[0] != '\0')
		av_add3(a, "--setenv", SIPC__INIT_REFUSE, a->pol.refuse);
	if (a->pol.allow != NULL && a->pol.allow[0] != '\0')
		av_add3(a, "--setenv", SIPC__INIT_ALLOW, a->pol.allow);
	if (a->pol.audit)
		av_add3(a, "--setenv", SIPC__INIT_AUDIT, "1");
	av_add(a, "--");
	av_add(a, a->ipath);
	av_add(a, a->wpath);
	for (size_t i = 0; i < nargs; i++)
		av_add(a, argv[i]);
	a->v[a->n] = NULL;
	return 0;
}

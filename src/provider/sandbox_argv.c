/*
 * provider/sandbox_argv.c - the sandbox provider's command line: which bwrap, and
 * what it is told (provider/provider.h).  The view a worker gets is all here: by
 * default only the files its program (a #! script: the script and its
 * interpreter) and sipc-init need to start (os/os.h) and the host's
 * sandbox_ro_paths, each bound read-only at its own path; all of /usr
 * when they cannot be told (a library not found), said in the launch's
 * note.  With them, the Landlock rules sipc-init installs (the same
 * paths), and the flags for an unprivileged user namespace.
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

#include "os/os.h"
#include "init/init_proto.h"
#include "provider/provider.h"

unsigned sipc__sbx_test_skip;

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

/* A #! script's interpreter (its first word, absolute) into interp:
 * 0, or -ENOEXEC when path is not such a script. */
static int
script_interp(const char *path, char *interp, size_t len)
{
	char line[PATH_MAX + 2];
	size_t n, i = 2;
	FILE *f;

	if ((f = fopen(path, "re")) == NULL)
		return -errno;
	n = fread(line, 1, sizeof(line) - 1, f);
	fclose(f);
	line[n] = '\0';
	if (n < 3 || line[0] != '#' || line[1] != '!')
		return -ENOEXEC;
	while (line[i] == ' ' || line[i] == '\t')
		i++;
	n = strcspn(line + i, " \t\n");
	if (line[i] != '/' || n >= len)
		return -ENOEXEC;
	memcpy(interp, line + i, n);
	interp[n] = '\0';
	return 0;
}

/* The program's files: an ELF program's closure, or a #! script itself
 * and its interpreter's closure (not the script's directory: what else
 * it runs or reads the host declares, sandbox_ro_paths). */
static int
prog_add(struct sipc__elfdeps *d, const char *path, char *why, size_t wlen)
{
	char interp[PATH_MAX];
	int rc = sipc__elfdeps_add(d, path, why, wlen);

	if (rc != -ENOEXEC || script_interp(path, interp, sizeof(interp)) < 0)
		return rc;
	if ((rc = sipc__elfdeps_add_file(d, path, why, wlen)) < 0)
		return rc;
	return sipc__elfdeps_add(d, interp, why, wlen);
}

/* A declared read-only path that is an ELF program (what a #! script
 * runs) brings the libraries it loads: without them it could not start.
 * Only -ENOMEM is an error (anything else is a data file or a tree). */
static int
ro_progs_add(struct sipc__sbx_view *v, char *why, size_t wlen)
{
	char path[PATH_MAX];
	const char *p = v->ro_paths, *colon;
	struct stat st;
	size_t n;

	while (p != NULL && *p != '\0') {
		colon = strchr(p, ':');
		n = colon != NULL ? (size_t)(colon - p) : strlen(p);
		if (n < sizeof(path)) {
			memcpy(path, p, n);
			path[n] = '\0';
			if (stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
			    (st.st_mode & 0111) != 0 &&
			    sipc__elfdeps_add(&v->files, path, why, wlen) ==
			    -ENOMEM)
				return -ENOMEM;
		}
		p = colon != NULL ? colon + 1 : NULL;
	}
	return 0;
}

int
sipc__sbx_view_make(struct sipc__sbx_view *v, const char *init,
                    const char *path, const char *ro_paths)
{
	char why[PATH_MAX + 64];
	int rc;

	memset(v, 0, sizeof(*v));
	snprintf(v->path, sizeof(v->path), "%s", path);
	snprintf(v->init, sizeof(v->init), "%s", init);
	if (ro_paths != NULL && ro_paths[0] != '\0' &&
	    (v->ro_paths = strdup(ro_paths)) == NULL)
		return -ENOMEM;
	if ((rc = prog_add(&v->files, path, why, sizeof(why))) == 0 &&
	    (rc = sipc__elfdeps_add(&v->files, init, why, sizeof(why))) == 0 &&
	    access(LD_CACHE, R_OK) == 0)
		rc = sipc__elfdeps_add_file(&v->files, LD_CACHE, why,
		    sizeof(why));
	if (rc == 0)
		rc = ro_progs_add(v, why, sizeof(why));
	if (rc == -ENOMEM) {
		sipc__sbx_view_free(v);
		return rc;
	}
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

/* May uid (in gid, no other group) do `want` (1 search/execute, 4 read,
 * as permission bits) on st?  Mode bits only: what setgroups(0) leaves. */
static bool
id_may(const struct stat *st, uid_t uid, gid_t gid, unsigned want)
{
	unsigned bits = st->st_uid == uid ? (st->st_mode >> 6) & 7 :
	    st->st_gid == gid ? (st->st_mode >> 3) & 7 : st->st_mode & 7;

	return (bits & want) == want;
}

/* Why st (at path) refused uid and gid, into why: "<what><path> (mode,
 * owner) <refusal> by uid U gid G".  -EACCES. */
static int
id_refused(char *why, size_t wlen, const char *what, const char *path,
           const struct stat *st, const char *refusal, uid_t uid, gid_t gid)
{
	snprintf(why, wlen, "%s%.200s (mode %o, uid %u) %s by uid %u gid %u",
	    what, path, (unsigned)st->st_mode & 07777, (unsigned)st->st_uid,
	    refusal, (unsigned)uid, (unsigned)gid);
	return -EACCES;
}

int
sipc__sbx_reachable(const char *path, uid_t uid, gid_t gid, char *why,
                    size_t wlen)
{
	char real[PATH_MAX], *slash;
	struct stat st;

	if (realpath(path, real) == NULL)
		return -errno;
	if (stat(real, &st) < 0)
		return -errno;
	if (!id_may(&st, uid, gid, 5))
		return id_refused(why, wlen, "", real, &st,
		    "is not readable and executable", uid, gid);
	while ((slash = strrchr(real, '/')) != NULL && slash != real) {
		*slash = '\0';
		if (stat(real, &st) < 0)
			return -errno;
		if (!id_may(&st, uid, gid, 1))
			return id_refused(why, wlen, "directory ", real, &st,
			    "cannot be searched", uid, gid);
	}
	return 0;
}

/* ro_paths += ":" + the directory of path (resolved). */
static int
ro_add_dir(struct sipc__sbx_view *v, const char *path)
{
	char dir[PATH_MAX], file[PATH_MAX], *n;
	int rc;

	if ((rc = real_dir(path, dir, file)) < 0)
		return rc;
	if (asprintf(&n, "%s%s%s", v->ro_paths ? v->ro_paths : "",
	    v->ro_paths ? ":" : "", dir) < 0)
		return -ENOMEM;
	free(v->ro_paths);
	v->ro_paths = n;
	return 0;
}

int
sipc__sbx_view_join(struct sipc__sbx_view *v, const struct sipc__sbx_view *base)
{
	char why[PATH_MAX + 64];
	int rc;

	if (v->files.n > 0 && base->files.n > 0) {
		for (size_t i = 0; i < base->files.n; i++)
			if ((rc = sipc__elfdeps_add_file(&v->files,
			    base->files.path[i], why, sizeof(why))) < 0)
				return rc;
		return 0;
	}
	if (v->files.n > 0) {
		sipc__elfdeps_free(&v->files);
		snprintf(v->note, sizeof(v->note), "%s", base->note);
	}
	return ro_add_dir(v, base->path);
}

void
sipc__sbx_view_free(struct sipc__sbx_view *v)
{
	sipc__elfdeps_free(&v->files);
	free(v->ro_paths);
	v->ro_paths = NULL;
}

/* Append path and a '\n' to one of the rule lists (sipc-init's
 * SIPC__INIT_LL_*=...); an allocation failure is kept in a->ll_err. */
static void
ll_add(struct sipc__sbx_argv *a, char **buf, size_t *len, const char *path)
{
	size_t n = strlen(path), cap = *len + n + 2;
	char *nb;

	if (a->ll_err != 0)
		return;
	if ((nb = realloc(*buf, cap)) == NULL) {
		a->ll_err = -ENOMEM;
		return;
	}
	*buf = nb;
	memcpy(nb + *len, path, n);
	nb[*len + n] = '\n';
	nb[*len + n + 1] = '\0';
	*len += n + 1;
}

static void
ro_bind(struct sipc__sbx_argv *a, const char *path)
{
	av_add3(a, "--ro-bind", path, path);
	ll_add(a, &a->ll_ro, &a->ll_ro_len, path);
}

/* What the rules let a worker write beside its scratch directory: the
 * empty /tmp, POSIX shared memory and the devices bwrap's /dev has. */
static const char *const ll_writable[] = { "/tmp", "/dev/shm", "/dev/null",
    "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty" };

/* The view: every file of the minimal one at its own path, or /usr;
 * then the host's read-only paths (sandbox_ro_paths). */
static void
av_view(struct sipc__sbx_argv *a, const struct sipc__sbx_view *v)
{
	bool whole = v->files.n == 0;
	char *p, *colon;

	if (whole)
		ro_bind(a, "/usr");
	av_toplevel(a, whole);
	av_add(a, "--proc");
	av_add(a, "/proc");
	av_add(a, "--dev");
	av_add(a, "/dev");
	if (sipc__sbx_test_skip & SIPC__SBX_SKIP_TMPFS)
		av_add3(a, "--bind", "/tmp", "/tmp");
	else {
		/* bounded (bubblewrap >= 0.5: --size applies to the next
		 * tmpfs) */
		if (a->pol.tmp_size[0] != '\0' &&
		    !(sipc__sbx_test_skip & SIPC__SBX_SKIP_LIMITS)) {
			av_add(a, "--size");
			av_add(a, a->pol.tmp_size);
		}
		av_add(a, "--tmpfs");
		av_add(a, "/tmp");
	}
	ll_add(a, &a->ll_ro, &a->ll_ro_len, "/proc");
	ll_add(a, &a->ll_ro, &a->ll_ro_len, "/dev");
	for (size_t i = 0; i < sizeof(ll_writable) / sizeof(*ll_writable); i++)
		ll_add(a, &a->ll_rw, &a->ll_rw_len, ll_writable[i]);
	if (!whole) {
		for (size_t i = 0; i < v->files.n; i++)
			ro_bind(a, v->files.path[i]);
	} else {
		ro_bind(a, a->wdir);
		ro_bind(a, a->idir);
	}
	for (p = a->ro; p != NULL && *p != '\0'; p = colon) {
		if ((colon = strchr(p, ':')) != NULL)
			*colon++ = '\0';
		if (!sipc__elfdeps_has(&v->files, p))
			ro_bind(a, p);
	}
}

void
sipc__sbx_argv_free(struct sipc__sbx_argv *a)
{
	free(a->v);
	free(a->ro);
	free(a->ll_ro);
	free(a->ll_rw);
	a->v = NULL;
	a->ro = a->ll_ro = a->ll_rw = NULL;
}

/* The rules for sipc-init (Landlock), as bwrap --setenv values. */
static void
av_rules(struct sipc__sbx_argv *a, const char *scratch)
{
	if (scratch != NULL &&
	    !(sipc__sbx_test_skip & SIPC__SBX_SKIP_SCRATCH_RULE))
		ll_add(a, &a->ll_rw, &a->ll_rw_len, scratch);
	if (a->ll_err != 0)
		return;
	av_add(a, "--setenv");
	av_add(a, SIPC__INIT_LL_RO);
	av_add(a, a->ll_ro);
	av_add(a, "--setenv");
	av_add(a, SIPC__INIT_LL_RW);
	av_add(a, a->ll_rw);
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
	struct sipc__sbx_policy pol;
	size_t nargs = 0, nro = 0;
	int rc;

	while (argv[nargs] != NULL)
		nargs++;
	/* the caller's policy survives the reset (an unset one: the
	 * defaults) */
	pol = a->pol;
	memset(a, 0, sizeof(*a));
	a->pol = pol;
	if (!a->pol.set)
		sipc__sbx_policy_default(&a->pol);
	if (view->ro_paths != NULL) {
		if ((a->ro = strdup(view->ro_paths)) == NULL)
			return -ENOMEM;
		for (const char *p = a->ro; *p != '\0'; p++)
			nro += *p == ':';
		nro++;
	}
	a->cap = SIPC__SBX_ARGV_FIXED + nargs + 4 + 3 * (view->files.n + nro);
	if ((a->v = calloc(a->cap, sizeof(*a->v))) == NULL) {
		sipc__sbx_argv_free(a);
		return -ENOMEM;
	}
	if ((rc = real_dir(view->path, a->wdir, a->wpath)) < 0 ||
	    (rc = real_dir(view->init, a->idir, a->ipath)) < 0) {
		sipc__sbx_argv_free(a);
		return rc;
	}
	av_add(a, bwrap);
	if (sipc__sbx_test_skip & SIPC__SBX_SKIP_NETNS) {
		av_add(a, "--unshare-ipc");
		av_add(a, "--unshare-pid");
		av_add(a, "--unshare-uts");
		av_add(a, "--unshare-cgroup-try");
	} else {
		av_add(a, "--unshare-all");
	}
	/* A user namespace always (as root the caller has dropped to the
	 * sandbox's uid, so bwrap makes one anyway), and none nested in
	 * it: the worker cannot make one (bwrap 0.8's --disable-userns). */
	av_add(a, "--unshare-user");
	av_add(a, "--disable-userns");
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
	if (!(sipc__sbx_test_skip & SIPC__SBX_SKIP_FILTER))
		av_add3(a, "--setenv", SIPC__INIT_FILTER, "1");
	if (!(sipc__sbx_test_skip & SIPC__SBX_SKIP_LIMITS))
		av_add3(a, "--setenv", SIPC__INIT_LIMITS, a->pol.limits);
	/* names are not secret: bwrap's command line may show them */
	if (a->pol.refuse != NULL && a->pol.refuse[0] != '\0')
		av_add3(a, "--setenv", SIPC__INIT_REFUSE, a->pol.refuse);
	if (a->pol.allow != NULL && a->pol.allow[0] != '\0')
		av_add3(a, "--setenv", SIPC__INIT_ALLOW, a->pol.allow);
	if (a->pol.audit)
		av_add3(a, "--setenv", SIPC__INIT_AUDIT, "1");
	if (view->landlock && !(sipc__sbx_test_skip & SIPC__SBX_SKIP_LANDLOCK))
		av_rules(a, scratch);
	if (a->ll_err != 0) {
		rc = a->ll_err;
		sipc__sbx_argv_free(a);
		return rc;
	}
	av_add(a, "--");
	av_add(a, a->ipath);
	av_add(a, a->wpath);
	for (size_t i = 0; i < nargs; i++)
		av_add(a, argv[i]);
	a->v[a->n] = NULL;
	return 0;
}

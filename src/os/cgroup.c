/*
 * cgroup.c - cgroup v2 per supervisor and per worker generation; see
 * os/os.h for the layout and the rules.
 *
 * Where the hierarchy is: the cgroup2 line of /proc/self/mountinfo (on a
 * pure v2 machine /sys/fs/cgroup, on a hybrid one often
 * /sys/fs/cgroup/unified), and the host process's own cgroup from the
 * "0::" line of /proc/self/cgroup, relative to that mount's root.
 *
 * Why a worker cgroup is removed only once it is empty: rmdir of a
 * populated cgroup fails (EBUSY), and a SIGKILLed member leaves it a
 * moment after cgroup.kill, not at once.  The wait is bounded
 * (SIPC__CG_EMPTY_MS, woken by cgroup.events changes); what is still
 * populated then is swept again at sipc__cg_close().  A worker's end
 * waits without blocking instead (os/worker_end.c: cgroup.events polled
 * through sipc__cgw_events_open), then removes with no wait left.
 *
 * The interface files are read and written through os/cgroup_file.c; what a
 * crashed supervisor left (the sweep at open, the journal mark, the kill
 * after the verdicts) is os/cgroup_sweep.c's.
 *
 * Threads: see os/os.h.  No locks: a struct sipc__cgw belongs to one
 * worker handle (reaper thread), a struct sipc__cg is read-only while
 * workers exist.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sipc_provider.h"
#include "os/os.h"

struct sipc__cg {
	int dirfd;                    /* the supervisor's cgroup directory */
	unsigned limits;              /* enum sipc_limit bits configured */
	struct sipc__cg_limits lim;
	char path[PATH_MAX];
	char journal[PATH_MAX];       /* its mark (sipc__cg_mark_journal);
	                               * "" without a state directory */
};

struct sipc__cgw {
	struct sipc__cg *cg;
	int fd;                       /* the worker cgroup's directory */
	char name[32];                /* entry in cg->dirfd */
};

/* Names process-wide unique supervisor cgroups (with the pid). */
static atomic_uint cg_seq;

static const struct {
	unsigned bit;
	const char *ctrl, *key;
} limit_ctrl[] = {
	{ SIPC_LIMIT_PIDS, "pids", "pids_max" },
	{ SIPC_LIMIT_MEMORY, "memory", "memory_max" },
	{ SIPC_LIMIT_CPU, "cpu", "cpu_max_percent" },
};
#define NLIMITS (sizeof(limit_ctrl) / sizeof(limit_ctrl[0]))

/* ------------------------------------------------------------ words */

/* Is `word` one of the blank-separated words of `list`? */
static bool
has_word(const char *list, const char *word)
{
	size_t n = strlen(word);
	const char *p = list;

	while ((p = strstr(p, word)) != NULL) {
		if ((p == list || p[-1] == ' ' || p[-1] == '\n') &&
		    (p[n] == '\0' || p[n] == ' ' || p[n] == '\n'))
			return true;
		p += n;
	}
	return false;
}


/* -------------------------------------------------------- discovery */

/* Undo mountinfo's octal escapes (\040 for a blank) in place. */
static void
unescape(char *s)
{
	char *o = s;

	for (; *s != '\0'; s++, o++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
			    (s[3] - '0'));
			s += 3;
		} else {
			*o = *s;
		}
	}
	*o = '\0';
}

/* The host process's cgroup v2 path ("0::" line), e.g. "/" or
 * "/system.slice/x.service".  0 or -ENOENT (no v2 membership). */
static int
own_cgroup(char *ret, size_t len)
{
	char line[PATH_MAX + 8];
	FILE *f;
	int rc = -ENOENT;

	if ((f = fopen("/proc/self/cgroup", "re")) == NULL)
		return -errno;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "0::", 3) != 0)
			continue;
		line[strcspn(line, "\n")] = '\0';
		if (snprintf(ret, len, "%s", line + 3) < (int)len)
			rc = 0;
		break;
	}
	fclose(f);
	return rc;
}

/* Mount point + own path below that mount's root, for a cgroup2 mount
 * whose root contains our cgroup. */
static bool
mount_line_dir(char *line, const char *own, char *ret, size_t len)
{
	char *f[32], *save = NULL, *tok;
	size_t n = 0, rl;

	for (tok = strtok_r(line, " \n", &save); tok != NULL && n < 32;
	    tok = strtok_r(NULL, " \n", &save))
		f[n++] = tok;
	/* id parent maj:min root mountpoint opts [optional...] - fstype */
	for (size_t i = 6; i + 1 < n; i++) {
		if (strcmp(f[i], "-") != 0)
			continue;
		if (strcmp(f[i + 1], "cgroup2") != 0)
			return false;
		unescape(f[3]);
		unescape(f[4]);
		rl = strcmp(f[3], "/") == 0 ? 0 : strlen(f[3]);
		if (strncmp(own, f[3], rl) != 0 ||
		    (own[rl] != '/' && own[rl] != '\0'))
			return false;
		return snprintf(ret, len, "%s%s", f[4],
		    strcmp(own + rl, "/") == 0 ? "" : own + rl) < (int)len;
	}
	return false;
}

/* Directory of the host process's own cgroup v2.  0, or -errno with why. */
static int
find_own_dir(char *ret, size_t len, char *why, size_t whylen)
{
	char own[PATH_MAX], line[2 * PATH_MAX];
	bool found = false;
	FILE *f;
	int rc;

	if ((rc = own_cgroup(own, sizeof(own))) < 0) {
		snprintf(why, whylen, "not a member of a cgroup v2 hierarchy "
		    "(/proc/self/cgroup has no 0:: line)");
		return rc;
	}
	if ((f = fopen("/proc/self/mountinfo", "re")) == NULL) {
		rc = -errno;
		snprintf(why, whylen, "/proc/self/mountinfo: %s", strerror(-rc));
		return rc;
	}
	while (!found && fgets(line, sizeof(line), f) != NULL)
		found = mount_line_dir(line, own, ret, len);
	fclose(f);
	if (!found) {
		snprintf(why, whylen, "no cgroup2 mount shows cgroup %s", own);
		return -ENOENT;
	}
	return 0;
}

/* ------------------------------------------------------- controllers */

static unsigned
limit_bits(const struct sipc__cg_limits *lim)
{
	return (lim->pids_max ? SIPC_LIMIT_PIDS : 0) |
	    (lim->memory_max ? SIPC_LIMIT_MEMORY : 0) |
	    (lim->cpu_max_percent ? SIPC_LIMIT_CPU : 0);
}

/* Make every controller the limits need available to dir's children:
 * present in its cgroup.controllers, then listed in (or written to) its
 * cgroup.subtree_control. */
static int
enable_controllers(int dirfd, const char *dir, unsigned bits, char *why,
                   size_t whylen)
{
	char have[SIPC__CG_FILE_CAP], on[SIPC__CG_FILE_CAP], plus[32];
	ssize_t n;
	int rc;

	if (bits == 0)
		return 0;
	if ((n = sipc__cg_read_at(dirfd, "cgroup.controllers", have,
	    sizeof(have))) < 0 ||
	    (n = sipc__cg_read_at(dirfd, "cgroup.subtree_control", on,
	    sizeof(on))) < 0) {
		snprintf(why, whylen, "%s: cannot read its controllers: %s",
		    dir, strerror((int)-n));
		return (int)n;
	}
	have[strcspn(have, "\n")] = '\0';
	for (size_t i = 0; i < NLIMITS; i++) {
		if (!(bits & limit_ctrl[i].bit) || has_word(on, limit_ctrl[i].ctrl))
			continue;
		if (!has_word(have, limit_ctrl[i].ctrl)) {
			snprintf(why, whylen, "%s: the %s controller is not "
			    "available in cgroup v2 at %s (cgroup.controllers: "
			    "\"%s\")", limit_ctrl[i].key, limit_ctrl[i].ctrl,
			    dir, have);
			return -EOPNOTSUPP;
		}
		snprintf(plus, sizeof(plus), "+%s", limit_ctrl[i].ctrl);
		if ((rc = sipc__cg_write_at(dirfd, "cgroup.subtree_control",
		    plus)) < 0) {
			snprintf(why, whylen, "%s: cannot enable the %s "
			    "controller in %s/cgroup.subtree_control: %s%s",
			    limit_ctrl[i].key, limit_ctrl[i].ctrl, dir,
			    strerror(-rc), rc == -EBUSY ? " (a cgroup that "
			    "holds processes cannot delegate controllers)" : "");
			return rc;
		}
	}
	return 0;
}

/* ------------------------------------------------------------- open */

/* mkdir the supervisor's cgroup under `parent` and open it.  A name
 * taken by a crashed earlier process with our pid is skipped. */
static int
make_sup(struct sipc__cg *cg, const char *parent, char *why, size_t whylen)
{
	int rc, tries = 0;

	do {
		if (snprintf(cg->path, sizeof(cg->path), "%s/sipc.%d.%u.%lu",
		    parent, (int)getpid(), atomic_fetch_add(&cg_seq, 1),
		    sipc__cg_own_pidns()) >=
		    (int)sizeof(cg->path)) {
			snprintf(why, whylen, "%s: path too long", parent);
			return -ENAMETOOLONG;
		}
		rc = mkdir(cg->path, 0755) < 0 ? -errno : 0;
	} while (rc == -EEXIST && ++tries < 64);
	if (rc < 0) {
		snprintf(why, whylen, "mkdir %s: %s", cg->path, strerror(-rc));
		cg->path[0] = '\0';           /* not ours to remove */
		return rc;
	}
	if ((cg->dirfd = open(cg->path, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) < 0) {
		rc = -errno;
		snprintf(why, whylen, "%s: %s", cg->path, strerror(-rc));
		(void)rmdir(cg->path);
		return rc;
	}
	/* Without cgroup.kill (Linux < 5.14) a worker's tree could not be
	 * ended through its cgroup: do not pretend. */
	if (faccessat(cg->dirfd, "cgroup.kill", W_OK, 0) < 0) {
		rc = -errno;
		snprintf(why, whylen, "%s/cgroup.kill: %s (needs Linux 5.14)",
		    cg->path, strerror(-rc));
		return rc;
	}
	return enable_controllers(cg->dirfd, cg->path, cg->limits, why, whylen);
}

static int
free_sup(struct sipc__cg *cg)
{
	int rc = 0;

	if (cg->dirfd >= 0)
		close(cg->dirfd);
	if (cg->path[0] != '\0' && rmdir(cg->path) < 0)
		rc = -errno;
	free(cg);
	return rc;
}

/* Say which configured limit (if any) cannot be enforced, unless the
 * reason already starts with its key. */
static void
name_first_limit(unsigned bits, char *why, size_t whylen)
{
	char tmp[512];

	for (size_t i = 0; i < NLIMITS; i++) {
		if (!(bits & limit_ctrl[i].bit))
			continue;
		if (strncmp(why, limit_ctrl[i].key, strlen(limit_ctrl[i].key)))
			continue;
		return;
	}
	for (size_t i = 0; i < NLIMITS; i++)
		if (bits & limit_ctrl[i].bit) {
			snprintf(tmp, sizeof(tmp), "%s is set, but no cgroup "
			    "can be made here: %s", limit_ctrl[i].key, why);
			snprintf(why, whylen, "%s", tmp);
			return;
		}
}

int
sipc__cg_open(enum sipc_cgroup_mode mode, const struct sipc__cg_limits *lim,
              struct sipc__cg **ret, char *why, size_t whylen)
{
	unsigned bits = limit_bits(lim);
	bool need = mode == SIPC_CGROUP_REQUIRED || bits != 0;
	char parent[PATH_MAX];
	struct sipc__cg *cg = NULL;
	int pfd = -1, rc;

	if (mode == SIPC_CGROUP_OFF) {
		snprintf(why, whylen, "off");
		*ret = NULL;
		return 0;
	}
	if ((rc = find_own_dir(parent, sizeof(parent), why, whylen)) < 0)
		goto none;
	if ((pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		rc = -errno;
		snprintf(why, whylen, "%s: %s", parent, strerror(-rc));
		goto none;
	}
	sipc__cg_sweep_stale(pfd);
	rc = enable_controllers(pfd, parent, bits, why, whylen);
	close(pfd);
	if (rc < 0)
		goto none;
	if ((cg = calloc(1, sizeof(*cg))) == NULL) {
		rc = -ENOMEM;
		snprintf(why, whylen, "out of memory");
		goto none;
	}
	cg->dirfd = -1;
	cg->lim = *lim;
	cg->limits = bits;
	if ((rc = make_sup(cg, parent, why, whylen)) < 0) {
		(void)free_sup(cg);
		goto none;
	}
	snprintf(why, whylen, "%s", cg->path);
	*ret = cg;
	return 0;
none:
	if (!need) {
		*ret = NULL;
		return 0;
	}
	name_first_limit(bits, why, whylen);
	return SIPC_E_CGROUP;
}

const char *
sipc__cg_path(const struct sipc__cg *cg)
{
	return cg->path;
}

unsigned
sipc__cg_limits(const struct sipc__cg *cg)
{
	return cg->limits;
}

int
sipc__cg_state_init(const struct sipc_config *cfg, struct sipc__cg_state *st,
                    char *errbuf, size_t errlen)
{
	const struct sipc__cg_limits lim = { cfg->pids_max, cfg->memory_max,
	    cfg->cpu_max_percent };
	int rc;

	st->cg = NULL;
	rc = sipc__cg_open(cfg->cgroup, &lim, &st->cg, st->why,
	    sizeof(st->why));
	if (rc < 0)
		snprintf(errbuf, errlen, "cgroup: %s", st->why);
	else    /* best effort: unmarked, any later instance may end it */
		(void)sipc__cg_mark_journal(st->cg, cfg->state_dir);
	return rc;
}

void
sipc__cg_state_fini(struct sipc__cg_state *st)
{
	/* A cgroup that cannot be removed stays, empty (every worker
	 * ended): nothing runs in it, and the host sees it by name. */
	(void)sipc__cg_close(st->cg);
	st->cg = NULL;
}

int
sipc__cg_state_create(const struct sipc_config *cfg, void **ret_state,
                      char *errbuf, size_t errlen)
{
	struct sipc__cg_state *st;
	int rc;

	if ((st = calloc(1, sizeof(*st))) == NULL)
		return -ENOMEM;
	if ((rc = sipc__cg_state_init(cfg, st, errbuf, errlen)) < 0) {
		free(st);
		return rc;
	}
	*ret_state = st;
	return 0;
}

void
sipc__cg_state_destroy(void *state)
{
	if (state == NULL)
		return;
	sipc__cg_state_fini(state);
	free(state);
}

void
sipc__cg_state_info(void *state, struct sipc_provider_info *ret)
{
	const struct sipc__cg_state *st = state;

	memset(ret, 0, sizeof(*ret));
	ret->cgroup = st->cg != NULL;
	ret->limits = st->cg != NULL ? sipc__cg_limits(st->cg) : 0;
	snprintf(ret->text, sizeof(ret->text), "%s", st->why);
}

/* ------------------------------------------------------- worker cgroups */


/* Kill, wait for empty, rmdir the child `name` of dirfd. */
static int
remove_child(int dirfd, int fd, const char *name, int ms)
{
	int rc;

	(void)sipc__cg_write_at(fd, "cgroup.kill", "1");
	if ((rc = sipc__cg_wait_empty(fd, ms)) < 0)
		return rc;
	return unlinkat(dirfd, name, AT_REMOVEDIR) < 0 ? -errno : 0;
}

static int
write_limits(int fd, const struct sipc__cg_limits *lim)
{
	char v[48];
	int rc;

	if (lim->pids_max) {
		snprintf(v, sizeof(v), "%u", lim->pids_max);
		if ((rc = sipc__cg_write_at(fd, "pids.max", v)) < 0)
			return rc;
	}
	if (lim->memory_max) {
		snprintf(v, sizeof(v), "%zu", lim->memory_max);
		if ((rc = sipc__cg_write_at(fd, "memory.max", v)) < 0)
			return rc;
		/* no swap file where swap is not accounted: nothing to do */
		if ((rc = sipc__cg_write_at(fd, "memory.swap.max", "0")) < 0 &&
		    rc != -ENOENT)
			return rc;
	}
	if (lim->cpu_max_percent) {
		snprintf(v, sizeof(v), "%llu 100000",
		    (unsigned long long)lim->cpu_max_percent * 1000);
		if ((rc = sipc__cg_write_at(fd, "cpu.max", v)) < 0)
			return rc;
	}
	return 0;
}

int
sipc__cgw_create(struct sipc__cg *cg, uint32_t slot, uint32_t gen,
                 struct sipc__cgw **ret)
{
	struct sipc__cgw *w;
	int rc;

	if ((w = calloc(1, sizeof(*w))) == NULL)
		return -ENOMEM;
	w->cg = cg;
	snprintf(w->name, sizeof(w->name), "w%u.g%u", slot, gen);
	if (mkdirat(cg->dirfd, w->name, 0755) < 0) {
		rc = -errno;
		free(w);
		return rc;
	}
	if ((w->fd = openat(cg->dirfd, w->name, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) < 0) {
		rc = -errno;
		goto fail;
	}
	if ((rc = write_limits(w->fd, &cg->lim)) < 0)
		goto fail;
	*ret = w;
	return 0;
fail:
	if (w->fd >= 0)
		close(w->fd);
	(void)unlinkat(cg->dirfd, w->name, AT_REMOVEDIR);
	free(w);
	return rc;
}

int
sipc__cgw_fd(const struct sipc__cgw *w)
{
	return w->fd;
}

int
sipc__cgw_kill(struct sipc__cgw *w)
{
	return sipc__cg_write_at(w->fd, "cgroup.kill", "1");
}

uint64_t
sipc__cgw_oom_kills(const struct sipc__cgw *w)
{
	uint64_t v = 0;

	if (sipc__cg_read_key(w->fd, "memory.events", "oom_kill", &v) < 0)
		return 0;
	return v;
}

void
sipc__cgw_note_oom(const struct sipc__cgw *w, struct sipc_exit *e)
{
	if (w != NULL && e->kind == SIPC_EXIT_SIGNAL && e->signo == SIGKILL &&
	    sipc__cgw_oom_kills(w) > 0)
		e->kind = SIPC_EXIT_OOM;
}

int
sipc__cgw_remove_within(struct sipc__cgw *w, int ms)
{
	int rc;

	if (w == NULL)
		return 0;
	rc = remove_child(w->cg->dirfd, w->fd, w->name, ms);
	close(w->fd);
	free(w);
	return rc;
}

int
sipc__cgw_remove(struct sipc__cgw *w)
{
	return sipc__cgw_remove_within(w, SIPC__CG_EMPTY_MS);
}

int
sipc__cgw_events_open(const struct sipc__cgw *w)
{
	int fd = openat(w->fd, "cgroup.events", O_RDONLY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* ------------------------------------------------------- dead owners */

/* The rules and the walk are os/cgroup_sweep.c's: these pass it what it needs of
 * the supervisor's cgroup. */
int
sipc__cg_mark_journal(struct sipc__cg *cg, const char *state_dir)
{
	if (cg == NULL || state_dir == NULL)
		return 0;
	return sipc__cg_stale_mark(cg->dirfd, state_dir, cg->journal);
}

int
sipc__cg_end_dead(const struct sipc__cg *cg, bool journal_settled,
                  sipc__cg_dead_fn *say, void *arg)
{
	if (cg == NULL)
		return 0;
	return sipc__cg_stale_end(cg->dirfd, cg->path,
	    journal_settled ? cg->journal : NULL, say, arg);
}

/* ------------------------------------------------------------- close */

int
sipc__cg_close(struct sipc__cg *cg)
{
	struct dirent *de;
	DIR *d;
	int fd;

	if (cg == NULL)
		return 0;
	/* worker cgroups that did not empty in time at their end; a walk
	 * of its own (not a dup(), which would lack close-on-exec until
	 * fdopendir() set it: a host's fork() + exec() then would take the
	 * directory with it) */
	if ((fd = openat(cg->dirfd, ".", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) >= 0 && (d = fdopendir(fd)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			int cfd;

			if (de->d_type != DT_DIR || de->d_name[0] == '.')
				continue;
			if ((cfd = openat(cg->dirfd, de->d_name, O_RDONLY |
			    O_DIRECTORY | O_CLOEXEC)) < 0)
				continue;
			(void)remove_child(cg->dirfd, cfd, de->d_name,
			    SIPC__CG_EMPTY_MS);
			close(cfd);
		}
		closedir(d);
	} else if (fd >= 0) {
		close(fd);
	}
	return free_sup(cg);
}

/*
 * ident.c - process identity from /proc, identity proof, and termination
 * of proven leftover workers (see os/os.h for the contract).
 *
 * Threads: any; no library state and no locks.  Every descriptor opened
 * here is closed before return.
 *
 * Why the order in terminate matters: a pid names a process only until
 * that process is reaped; afterwards the number may be handed to a
 * stranger.  A pidfd opened before the proof pins the exact process it
 * was opened for, so "open pidfd, then verify via /proc, then check the
 * pidfd still names a live-or-zombie process" proves the /proc facts were
 * read from the pinned process, and every later pidfd signal reaches it
 * or nothing.  The group id needs the same care: it stays reserved while
 * the leader (whose pid it is) is unreaped, so the group is signalled by
 * number only right after seeing the leader unreaped.
 */
#include "os/os.h"

#include "base/base.h"
#include "journal/journal.h"
#include "wire/wire.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <time.h>
#include <unistd.h>

#include <bsd/stdlib.h>

#define STAT_FIELD_PGID 5
#define STAT_FIELD_CMINFLT 11
#define STAT_FIELD_UTIME 14
#define STAT_FIELD_CSTIME 17
#define STAT_FIELD_STARTTIME 22
/* Bound on group members pinned during one termination. */
#define MAX_MEMBERS 1024
/* Wait after SIGKILL before giving up on seeing the leader exit. */
#define KILL_WAIT_MS 5000

_Static_assert(SIPC__LOCAL_ID_LEN == SIPC__JREC_V1_ID_LEN,
    "a version 1 WORKER record starts with a local identity");

void
sipc__ident_to_id(const struct sipc__ident *k, struct sipc_provider_id *ret)
{
	memset(ret, 0, sizeof(*ret));
	sipc__le32_put(ret->bytes, (uint32_t)k->pid);
	sipc__le32_put(ret->bytes + 4, (uint32_t)k->pgid);
	sipc__le64_put(ret->bytes + 8, k->starttime);
	memcpy(ret->bytes + 16, k->boot_id, SIPC__BOOT_ID_LEN);
	ret->len = SIPC__LOCAL_ID_LEN;
}

int
sipc__ident_from_id(const struct sipc_provider_id *id, struct sipc__ident *ret)
{
	if (id->len != SIPC__LOCAL_ID_LEN)
		return -EINVAL;
	memset(ret, 0, sizeof(*ret));
	ret->pid = (pid_t)sipc__le32_get(id->bytes);
	ret->pgid = (pid_t)sipc__le32_get(id->bytes + 4);
	ret->starttime = sipc__le64_get(id->bytes + 8);
	memcpy(ret->boot_id, id->bytes + 16, SIPC__BOOT_ID_LEN);
	return 0;
}

/* Read a small /proc file into buf (NUL-terminated).  -errno on error. */
static int
read_small(const char *path, char *buf, size_t len)
{
	size_t off = 0;
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (off < len - 1) {
		n = read(fd, buf + off, len - 1 - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			close(fd);
			return (int)n;
		}
		if (n == 0)
			break;
		off += (size_t)n;
	}
	close(fd);
	buf[off] = '\0';
	return 0;
}

int
sipc__proc_stat_parse(const char *text, struct sipc__proc_stat *ret)
{
	struct sipc__proc_stat st = { 0 };
	const char *p = strrchr(text, ')');
	char *end;
	int field;

	/* Fields after the command name start at 3 (state). */
	if (p == NULL || p[1] != ' ' || p[2] == '\0' || p[3] != ' ')
		return -EINVAL;
	st.state = p[2];
	p += 3;
	for (field = 4; field <= STAT_FIELD_STARTTIME; field++) {
		long long v;

		if (*p != ' ')
			return -EINVAL;
		p++;
		errno = 0;
		if (field == STAT_FIELD_STARTTIME) {
			if (*p < '0' || *p > '9')
				return -EINVAL;
			st.starttime = strtoull(p, &end, 10);
		} else {
			v = strtoll(p, &end, 10);
			if (field == 4)
				st.ppid = (pid_t)v;
			else if (field == STAT_FIELD_PGID)
				st.pgid = (pid_t)v;
			else if (field == STAT_FIELD_CMINFLT)
				st.cminflt = (uint64_t)v;
			else if (field >= STAT_FIELD_UTIME &&
			    field <= STAT_FIELD_CSTIME)
				st.ticks += (uint64_t)v;
		}
		if (end == p || errno != 0)
			return -EINVAL;
		p = end;
	}
	*ret = st;
	return 0;
}

int
sipc__proc_stat(pid_t pid, struct sipc__proc_stat *ret)
{
	char path[64], buf[2048];
	int r;

	if (pid <= 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	r = read_small(path, buf, sizeof(buf));
	if (r == -ENOENT)
		return -ESRCH;
	if (r < 0)
		return r;
	return sipc__proc_stat_parse(buf, ret);
}

int
sipc__proc_status(pid_t pid, char *buf, size_t len,
                  const char *const *keys, const char **vals, unsigned n)
{
	char path[64];
	const char *p;
	unsigned i;
	int r;

	if (pid <= 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((r = read_small(path, buf, len)) < 0)
		return r;
	for (i = 0; i < n; i++)
		vals[i] = NULL;
	for (p = buf; p != NULL && *p != '\0'; p = strchr(p, '\n'),
	    p = p != NULL ? p + 1 : NULL)
		for (i = 0; i < n; i++)
			if (vals[i] == NULL &&
			    strncmp(p, keys[i], strlen(keys[i])) == 0)
				vals[i] = p + strlen(keys[i]);
	return 0;
}

int
sipc__proc_starttime(pid_t pid, uint64_t *ret)
{
	struct sipc__proc_stat st;
	int r;

	if ((r = sipc__proc_stat(pid, &st)) < 0)
		return r;
	*ret = st.starttime;
	return 0;
}

int
sipc__boot_id(char ret[SIPC__BOOT_ID_LEN + 1])
{
	char buf[64];
	int r;

	r = read_small("/proc/sys/kernel/random/boot_id", buf, sizeof(buf));
	if (r < 0)
		return r;
	if (strlen(buf) < SIPC__BOOT_ID_LEN || (buf[SIPC__BOOT_ID_LEN] != '\n' &&
	    buf[SIPC__BOOT_ID_LEN] != '\0'))
		return -EINVAL;
	memcpy(ret, buf, SIPC__BOOT_ID_LEN);
	ret[SIPC__BOOT_ID_LEN] = '\0';
	return 0;
}

int
sipc__ident_of(pid_t pid, struct sipc__ident *ret)
{
	struct sipc__ident id;
	struct sipc__proc_stat st;
	int r;

	memset(&id, 0, sizeof(id));
	if ((r = sipc__proc_stat(pid, &st)) < 0)
		return r;
	if ((r = sipc__boot_id(id.boot_id)) < 0)
		return r;
	id.pid = pid;
	id.pgid = st.pgid;
	id.starttime = st.starttime;
	*ret = id;
	return 0;
}

int
sipc__ident_verify(const struct sipc__ident *rec)
{
	char boot[SIPC__BOOT_ID_LEN + 1];
	struct sipc__proc_stat st;
	int r;

	if (rec == NULL || rec->pid <= 0)
		return -EINVAL;
	if ((r = sipc__boot_id(boot)) < 0)
		return r;
	if (strncmp(boot, rec->boot_id, sizeof(boot)) != 0)
		return 0;
	r = sipc__proc_stat(rec->pid, &st);
	if (r == -ESRCH)
		return 0;
	if (r < 0)
		return r;
	return st.starttime == rec->starttime && st.pgid == rec->pgid;
}

/* ------------------------------------------------------------ terminate */

struct member {
	int fd;
	pid_t pid;
	uint64_t starttime;
	bool exited;
};

struct pinset {
	struct member *v;
	size_t n;
};

/* Does the pidfd still name an unreaped (running or zombie) process? */
static bool
pinned_alive(int pidfd)
{
	return pidfd_send_signal(pidfd, 0, NULL, 0) == 0;
}

static bool
pinset_has(const struct pinset *ps, pid_t pid, uint64_t starttime)
{
	for (size_t i = 0; i < ps->n; i++)
		if (ps->v[i].pid == pid && ps->v[i].starttime == starttime)
			return true;
	return false;
}

/*
 * Pin `pid` if it is provably a member of group `pgid`: pidfd first, then
 * its stat, then the pidfd still alive (so the stat was the pinned
 * process's) and the leader still unreaped (so the group id was not
 * reusable when the stat was read).  Returns 1 pinned, 0 skipped, -1
 * when the leader is gone (stop scanning), -ENOMEM.
 */
static int
pin_member(struct pinset *ps, int lfd, pid_t pid, pid_t pgid)
{
	struct sipc__proc_stat st;
	struct member *nv;
	int fd;

	if ((fd = pidfd_open(pid, 0)) < 0)
		return 0;
	if (sipc__proc_stat(pid, &st) < 0 || st.pgid != pgid ||
	    !pinned_alive(fd) || pinset_has(ps, pid, st.starttime)) {
		close(fd);
		return 0;
	}
	if (!pinned_alive(lfd)) {
		close(fd);
		return -1;
	}
	if (ps->n >= MAX_MEMBERS ||
	    (nv = reallocarray(ps->v, ps->n + 1, sizeof(*nv))) == NULL) {
		close(fd);
		return -ENOMEM;
	}
	ps->v = nv;
	ps->v[ps->n++] = (struct member){ fd, pid, st.starttime, false };
	return 1;
}

/* Scan /proc for processes in group `rec->pgid` and pin them. */
static void
pin_group(struct pinset *ps, int lfd, const struct sipc__ident *rec)
{
	struct dirent *e;
	DIR *d;

	if ((d = opendir("/proc")) == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		struct sipc__proc_stat st;
		char *end;
		long v;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		v = strtol(e->d_name, &end, 10);
		if (*end != '\0' || v == rec->pid)
			continue;
		/* Cheap filter before pinning. */
		if (sipc__proc_stat((pid_t)v, &st) < 0 || st.pgid != rec->pgid)
			continue;
		if (pin_member(ps, lfd, (pid_t)v, rec->pgid) < 0)
			break;
	}
	closedir(d);
}

/* One signalling round: group by number (only while the leader is seen
 * unreaped), leader by pidfd, pinned members by pidfd. */
static void
signal_round(struct pinset *ps, int lfd, const struct sipc__ident *rec,
    bool group, int sig)
{
	if (group) {
		pin_group(ps, lfd, rec);
		if (pinned_alive(lfd))
			(void)kill(-rec->pgid, sig);
	}
	(void)pidfd_send_signal(lfd, sig, NULL, 0);
	for (size_t i = 0; i < ps->n; i++)
		if (!ps->v[i].exited)
			(void)pidfd_send_signal(ps->v[i].fd, sig, NULL, 0);
}

/* Wait until the leader and every pinned member have exited (their pidfds
 * turn readable) or `ms` pass.  Returns true when the leader exited. */
static bool
wait_exits(struct pinset *ps, int lfd, bool *leader_exited, unsigned ms)
{
	int64_t end = sipc__now_ms() + ms;
	struct pollfd *pfd;
	size_t *map;

	pfd = reallocarray(NULL, ps->n + 1, sizeof(*pfd));
	map = reallocarray(NULL, ps->n + 1, sizeof(*map));
	if (pfd == NULL || map == NULL) {
		/* Degrade to waiting for the leader alone. */
		free(map);
		free(pfd);
		struct pollfd one = { lfd, POLLIN, 0 };
		if (!*leader_exited && poll(&one, 1, (int)ms) > 0)
			*leader_exited = true;
		return *leader_exited;
	}
	for (;;) {
		int64_t left = end - sipc__now_ms();
		size_t np = 0;
		int r;

		if (!*leader_exited) {
			pfd[np] = (struct pollfd){ lfd, POLLIN, 0 };
			map[np++] = SIZE_MAX;
		}
		for (size_t i = 0; i < ps->n; i++)
			if (!ps->v[i].exited) {
				pfd[np] = (struct pollfd){ ps->v[i].fd, POLLIN, 0 };
				map[np++] = i;
			}
		if (np == 0 || left <= 0)
			break;
		r = poll(pfd, np, (int)left);
		if (r < 0 && errno != EINTR)
			break;
		for (size_t k = 0; r > 0 && k < np; k++) {
			if (pfd[k].revents == 0)
				continue;
			if (map[k] == SIZE_MAX)
				*leader_exited = true;
			else
				ps->v[map[k]].exited = true;
		}
	}
	free(map);
	free(pfd);
	return *leader_exited;
}

int
sipc__ident_terminate(const struct sipc__ident *rec, unsigned grace_ms)
{
	struct pinset ps = { NULL, 0 };
	bool group, leader_exited = false;
	int lfd, r;

	if (rec == NULL || rec->pid <= 0)
		return -EINVAL;
	if ((lfd = pidfd_open(rec->pid, 0)) < 0)
		return errno == ESRCH ? 0 : -errno;
	/* Verify after pinning, then check the pin still holds: the facts
	 * were read from the pinned process. */
	r = sipc__ident_verify(rec);
	if (r == 1 && !pinned_alive(lfd))
		r = 0;
	if (r != 1)
		goto out;
	group = rec->pgid == rec->pid;
	signal_round(&ps, lfd, rec, group, SIGTERM);
	(void)wait_exits(&ps, lfd, &leader_exited, grace_ms);
	signal_round(&ps, lfd, rec, group, SIGKILL);
	r = wait_exits(&ps, lfd, &leader_exited, KILL_WAIT_MS) ? 1 : -ETIMEDOUT;
out:
	for (size_t i = 0; i < ps.n; i++)
		close(ps.v[i].fd);
	free(ps.v);
	close(lfd);
	return r;
}

/* ------------------------------------------------------------ usage */

#define TREE_MAX 4096

/* Push the children of every thread of `pid` (a process that forks
 * from another thread lists them there). */
static void
push_children(pid_t pid, pid_t *stack, unsigned *n)
{
	char path[64], buf[4096], *p, *end;
	struct dirent *de;
	ssize_t len;
	long v;
	DIR *d;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	if ((d = opendir(path)) == NULL)
		return;
	while ((de = readdir(d)) != NULL && *n < TREE_MAX) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/children",
		    (int)pid, de->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = '\0';
		for (p = buf; *n < TREE_MAX; p = end) {
			v = strtol(p, &end, 10);
			if (end == p)
				break;
			if (v > 0)
				stack[(*n)++] = (pid_t)v;
		}
	}
	closedir(d);
}

/*
 * Visit `root` and its descendants, at most TREE_MAX, each after its
 * parent: visit(pid, is_root, arg) returns 0 to go on to pid's
 * children, 1 to pass over it (gone meanwhile), or -errno to end the
 * walk with that.  0 or the -errno that ended it.
 */
static int
tree_walk(pid_t root, int (*visit)(pid_t, bool, void *), void *arg)
{
	pid_t *stack;
	unsigned n = 0, seen = 0;
	int rc = 0;

	if ((stack = malloc(TREE_MAX * sizeof(*stack))) == NULL)
		return -ENOMEM;
	stack[n++] = root;
	while (n > 0 && seen++ < TREE_MAX) {
		pid_t p = stack[--n];

		if ((rc = visit(p, p == root, arg)) < 0)
			break;
		if (rc == 0)
			push_children(p, stack, &n);
		rc = 0;
	}
	free(stack);
	return rc;
}

struct rss_walk {
	uint64_t total, page;
};

/* tree_walk()'s visit for sipc__tree_rss(). */
static int
rss_visit(pid_t p, bool is_root, void *arg)
{
	struct rss_walk *rw = arg;
	unsigned long long size, res;
	char path[64];
	FILE *f;
	int rc;

	snprintf(path, sizeof(path), "/proc/%d/statm", (int)p);
	if ((f = fopen(path, "re")) == NULL ||
	    fscanf(f, "%llu %llu", &size, &res) != 2) {
		rc = f == NULL ? -errno : -EIO;
		if (f != NULL)
			fclose(f);
		return is_root ? rc : 1;
	}
	fclose(f);
	rw->total += (uint64_t)res * rw->page;
	return 0;
}

int
sipc__tree_rss(pid_t root, uint64_t *ret_bytes)
{
	struct rss_walk rw = { .total = 0,
	    .page = (uint64_t)sysconf(_SC_PAGESIZE) };
	int rc;

	if ((rc = tree_walk(root, rss_visit, &rw)) == 0)
		*ret_bytes = rw.total;
	return rc;
}

struct pids_walk {
	pid_t *ret;
	unsigned max, k;
};

/* tree_walk()'s visit for sipc__tree_pids(). */
static int
pids_visit(pid_t p, bool is_root, void *arg)
{
	struct pids_walk *pw = arg;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d", (int)p);
	if (access(path, F_OK) < 0)
		return is_root ? -errno : 1;
	if (pw->k == pw->max)
		return -E2BIG;
	pw->ret[pw->k++] = p;
	return 0;
}

int
sipc__tree_pids(pid_t root, pid_t *ret, unsigned max)
{
	struct pids_walk pw = { .ret = ret, .max = max, .k = 0 };
	int rc;

	if ((rc = tree_walk(root, pids_visit, &pw)) < 0)
		return rc;
	return (int)pw.k;
}

/* The Uid: and Gid: lines of /proc/<pid>/status (real, effective,
 * saved, filesystem) into ret[0..3] and ret[4..7]. */
static int
status_ids(pid_t pid, unsigned long ret[8])
{
	static const char *const keys[2] = { "Uid:", "Gid:" };
	const char *vals[2];
	char buf[4096];
	int i, r;

	if ((r = sipc__proc_status(pid, buf, sizeof(buf), keys, vals, 2)) < 0)
		return r;
	for (i = 0; i < 2; i++)
		if (vals[i] == NULL || sscanf(vals[i], "%lu %lu %lu %lu",
		    &ret[4 * i], &ret[4 * i + 1], &ret[4 * i + 2],
		    &ret[4 * i + 3]) != 4)
			return -EPROTO;
	return 0;
}

int
sipc__proc_worker_ids(pid_t pid, unsigned long ret[8])
{
	char path[96], buf[64];
	long child = 0;
	ssize_t n;
	int fd;

	if (pid <= 0)
		return -EINVAL;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid,
	    (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		/* exactly one child: sipc-init's worker */
		if (n > 0 && strchr(buf, ' ') == strrchr(buf, ' ') &&
		    sscanf(buf, "%ld", &child) == 1 && child > 0)
			pid = (pid_t)child;
	}
	return status_ids(pid, ret);
}

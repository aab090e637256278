/*
 * usage.c - a worker tree's CPU time, peak and resident memory (see
 * os/os.h for the sources and what is exact).
 *
 * Why /proc needs a closed tree (`closed`: every orphan of it reaped
 * inside it, by the sipc-init of a namespace mode): an orphan that is
 * reparented to a reaper outside the tree is no longer seen by the walk,
 * nor in any member's cutime/cstime, so its CPU time and its memory
 * would be missing from a figure that looks complete.
 *
 * Why the tree must be the same processes at both readings for /proc:
 * a process that left it meanwhile (exited and waited for outside the
 * tree, or orphaned to a reaper outside it) takes its CPU time with it,
 * and one that came and is still running adds time from before the
 * request only if it was already there; with the same pids both times
 * (and their start times unchanged, which a reused pid would not keep
 * within a request) every tick is in a process read twice, or in the
 * cutime/cstime of one.  A cgroup counts every process that ran in it,
 * so it needs no such check.
 *
 * Threads: any; no state, no locks; every descriptor opened is closed
 * before return.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sipc.h"
#include "os/os.h"

/* A tree's sums of two fields of its processes' /proc/PID/stat
 * (sipc__proc_stat()): utime + stime + cutime + cstime, and cminflt
 * (the minor faults of the children each waited for, which grows with
 * every child waited for that ran at all). */
struct pstat {
	uint64_t ticks, cminflt;
};

/* VmHWM of /proc/PID/status in KiB.  0 or -errno. */
static int
proc_hwm_kb(pid_t pid, uint64_t *ret)
{
	static const char *const key = "VmHWM:";
	const char *val;
	char buf[4096];
	int r;

	if ((r = sipc__proc_status(pid, buf, sizeof(buf), &key, &val, 1)) < 0)
		return r;
	if (val == NULL)
		return -ENOENT;
	*ret = strtoull(val, NULL, 10);
	return 0;
}

/* Reset the peak resident memory of `pid` to its resident memory now
 * (clear_refs "5", Linux 4.0).  0 or -errno. */
static int
proc_hwm_reset(pid_t pid)
{
	char path[64];
	int fd, rc = 0;

	snprintf(path, sizeof(path), "/proc/%d/clear_refs", (int)pid);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
		return -errno;
	if (write(fd, "5", 1) != 1)
		rc = -errno;
	close(fd);
	return rc;
}

/* Reset every process's peak to its resident memory now, and keep that
 * (VmHWM just after the reset).  False when one could not be. */
static bool
peak_reset(struct sipc__usage *u)
{
	unsigned i;

	for (i = 0; i < u->npids; i++)
		if (proc_hwm_reset(u->pids[i]) < 0 ||
		    proc_hwm_kb(u->pids[i], &u->hwm_kb[i]) < 0)
			return false;
	return true;
}

/* The tree's peak since peak_reset(begin), the same processes: the sum
 * of their peaks, when at most one of them rose above what it held at
 * the reset (the others' peaks are what they held then, and never
 * more).  False when two or more grew (their peaks need not have come
 * at the same time) or one cannot be read. */
static bool
peak_read(const struct sipc__usage *begin, struct sipc__usage *ret)
{
	unsigned i, grew = 0;
	uint64_t kb, sum = 0;

	for (i = 0; i < begin->npids; i++) {
		if (proc_hwm_kb(begin->pids[i], &kb) < 0)
			return false;
		grew += kb > begin->hwm_kb[i];
		sum += kb;
	}
	if (grew > 1)
		return false;
	ret->peak_kb = sum;
	return true;
}

static int
pid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/* The tree's pids, sorted, into u; the CPU ticks and cminflt of all of
 * them into *ret; their start times folded into u->sig.  0 or -errno
 * (-E2BIG: too many). */
static int
tree_read(pid_t pid, struct sipc__usage *u, struct pstat *ret)
{
	struct sipc__proc_stat one;
	unsigned i;
	int n, rc;

	memset(ret, 0, sizeof(*ret));
	if ((n = sipc__tree_pids(pid, u->pids, SIPC__USAGE_TREE_MAX)) < 0)
		return n;
	u->npids = (unsigned)n;
	qsort(u->pids, u->npids, sizeof(u->pids[0]), pid_cmp);
	u->sig = 0;
	for (i = 0; i < u->npids; i++) {
		if ((rc = sipc__proc_stat(u->pids[i], &one)) < 0)
			return rc;     /* one left meanwhile: not the same */
		ret->ticks += one.ticks;
		ret->cminflt += one.cminflt;
		u->sig = u->sig * 1000003u + one.starttime;
	}
	return 0;
}

static uint64_t
ticks_us(uint64_t ticks)
{
	long hz = sysconf(_SC_CLK_TCK);

	return ticks * 1000000u / (uint64_t)(hz > 0 ? hz : 100);
}

void
sipc__usage_begin(int cg_fd, pid_t pid, bool closed,
                  struct sipc__usage *ret)
{
	struct pstat t;
	bool tree;

	memset(ret, 0, sizeof(*ret));
	ret->closed = closed;
	tree = tree_read(pid, ret, &t) == 0;
	if (cg_fd >= 0 && sipc__cg_read_key(cg_fd, "cpu.stat", "usage_usec",
	    &ret->cpu_us) == 0) {
		ret->cpu_cgroup = true;
		ret->known |= SIPC_FIG_CPU;
	} else if (tree && closed) {
		ret->cpu_us = t.ticks;
		ret->known |= SIPC_FIG_CPU;
	}
	if (!tree) {
		ret->npids = 0;
		return;
	}
	ret->cminflt = t.cminflt;
	if (closed && peak_reset(ret))
		ret->known |= SIPC_FIG_PEAK_RSS;
}

void
sipc__usage_end(int cg_fd, pid_t pid, const struct sipc__usage *begin,
                struct sipc__usage *ret)
{
	struct pstat t;
	uint64_t v;
	bool same;

	memset(ret, 0, sizeof(*ret));
	same = begin->npids > 0 && tree_read(pid, ret, &t) == 0 &&
	    ret->npids == begin->npids && ret->sig == begin->sig &&
	    memcmp(ret->pids, begin->pids,
	    ret->npids * sizeof(ret->pids[0])) == 0;
	if (begin->known & SIPC_FIG_CPU) {
		if (begin->cpu_cgroup) {
			if (cg_fd >= 0 && sipc__cg_read_key(cg_fd, "cpu.stat",
			    "usage_usec", &v) == 0 && v >= begin->cpu_us) {
				ret->cpu_us = v - begin->cpu_us;
				ret->cpu_cgroup = true;
				ret->known |= SIPC_FIG_CPU;
			}
		} else if (same && t.ticks >= begin->cpu_us) {
			ret->cpu_us = ticks_us(t.ticks - begin->cpu_us);
			ret->known |= SIPC_FIG_CPU;
		}
	}
	/* A child that came and went (waited for: cminflt grew) had a
	 * peak of its own that no process's VmHWM holds. */
	if ((begin->known & SIPC_FIG_PEAK_RSS) && same &&
	    t.cminflt == begin->cminflt && peak_read(begin, ret))
		ret->known |= SIPC_FIG_PEAK_RSS;
}

int
sipc__tree_mem(int cg_fd, pid_t pid, uint64_t *ret_bytes,
               enum sipc__mem_src *ret_src)
{
	char buf[64];
	char *end;
	unsigned long long v;
	int rc;

	if (cg_fd >= 0 && sipc__cg_read_at(cg_fd, "memory.current", buf,
	    sizeof(buf)) > 0) {
		v = strtoull(buf, &end, 10);
		if (end != buf) {
			*ret_bytes = v;
			*ret_src = SIPC__MEM_CGROUP;
			return 0;
		}
	}
	if ((rc = sipc__tree_rss(pid, ret_bytes)) == 0)
		*ret_src = SIPC__MEM_PROC;
	return rc;
}

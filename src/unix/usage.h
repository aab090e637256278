/*
 * usage.h - what a worker's process tree has used: its CPU time and,
 * for one request, its peak resident memory (the per-request figures of
 * struct sipc_result), and its resident memory now (max_rss).
 *
 * Sources, the exact one first:
 *   CPU time   the worker cgroup's cpu.stat usage_usec (every process
 *              that ever ran in it, in microseconds); without a cgroup,
 *              /proc/PID/stat utime + stime + cutime + cstime summed over
 *              the tree (clock ticks: 10 ms at USER_HZ 100; a process's
 *              waited-for children are in its cutime/cstime), known when
 *              the tree is closed (below) and the same processes at
 *              both readings
 *   peak       /proc/PID/status VmHWM of each process after a reset of
 *              it through /proc/PID/clear_refs ("5"): their sum, known
 *              only when the tree is closed, the same processes at both
 *              readings, none of them waited for a child in between
 *              (cminflt unchanged: that child's peak is nobody's VmHWM),
 *              and at most one of them rose above what it held at the
 *              reset (the peaks of two that grew need not have come at
 *              the same time, so their sum is not the tree's peak).  A
 *              cgroup's memory.peak is not read: it needs the memory
 *              controller in cgroup v2, which this code is not tested
 *              with.
 *   resident   the worker cgroup's memory.current where the file exists
 *              (the memory controller is enabled there), else the sum of
 *              the tree's resident set sizes (sipc__tree_rss(), ident.h)
 *
 * The tree is `pid` and its descendants (ident.h's walk).  cg_fd: a
 * descriptor of the worker's cgroup directory, or -1.
 *
 * Threads: any; no state, no locks.  Each call costs system calls (a
 * few for a cgroup file, about ten per process for /proc): never on a
 * path the host did not ask for.
 */
#ifndef SIPC_USAGE_H
#define SIPC_USAGE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define SIPC__USAGE_TREE_MAX 64   /* processes a reading remembers */

/* One reading.  known: SIPC_FIG_* bits (sipc.h) of what it holds. */
struct sipc__usage {
	unsigned known;
	bool closed;                  /* as given to sipc__usage_begin() */
	bool cpu_cgroup;              /* cpu_us from the cgroup */
	uint64_t cminflt;             /* the tree's, for the peak's check */
	uint64_t cpu_us;
	uint64_t peak_kb;             /* at the end reading only */
	/* The tree as the reading found it: its pids, sorted, and their
	 * start times folded into one number (npids 0: not read) */
	unsigned npids;
	pid_t pids[SIPC__USAGE_TREE_MAX];
	uint64_t sig;
	uint64_t hwm_kb[SIPC__USAGE_TREE_MAX]; /* begin: each one's peak
	                                        * just after its reset */
};

/* Before a request: the CPU time so far, and each process's peak reset
 * to its resident memory now.  closed: every orphan of the tree is
 * reaped inside it (its root is an init of a PID namespace); without
 * it only the cgroup's figures can be known. */
void sipc__usage_begin(int cg_fd, pid_t pid, bool closed,
                       struct sipc__usage *ret);
/* After it: ret->cpu_us the CPU time since `begin`, ret->peak_kb the
 * peak since; ret->known says which of the two are exact (the same
 * source at both readings; for /proc, the same processes, and for the
 * peak at most one of them grown). */
void sipc__usage_end(int cg_fd, pid_t pid, const struct sipc__usage *begin,
                     struct sipc__usage *ret);

/* Where sipc__tree_mem() read: the cgroup, or /proc. */
enum sipc__mem_src { SIPC__MEM_CGROUP = 0, SIPC__MEM_PROC = 1 };
/* The tree's resident memory now, in bytes: memory.current of cg_fd
 * when it can be read, else sipc__tree_rss(pid).  0 or -errno;
 * *ret_src says which was read. */
int sipc__tree_mem(int cg_fd, pid_t pid, uint64_t *ret_bytes,
                   enum sipc__mem_src *ret_src);

#endif

/*
 * raw_spawn_contained.c - baseline: 256 workers started at once in the
 * same containment as the library's default, without the library.
 *
 *   raw_spawn_contained [--quick] INIT WORKER
 *
 * Per worker, the steps of the local adapter (src/provider/local.c,
 * clone.c, os/worker_end.c) in PID-namespace mode:
 *   - a socketpair for the protocol, a pipe for diagnostics, a
 *     socketpair for sipc-init's reports, /dev/null (all close-on-exec);
 *   - where a cgroup v2 can be written here, a leaf cgroup below one
 *     parent cgroup of this run (mkdir, opened), as a supervisor with
 *     cgroup = auto has it;
 *   - clone(CLONE_VM | CLONE_VFORK | CLONE_PIDFD | CLONE_NEWPID |
 *     CLONE_NEWNS), exit signal 0; the child moves itself into its leaf
 *     (writes "0" to cgroup.procs), arms its parent-death signal, makes
 *     / private and mounts the new namespace's /proc, leads a group,
 *     resets every disposition, moves its descriptors to 0-4, marks the
 *     rest close-on-exec, unblocks and executes INIT with WORKER, which
 *     sipc-init executes in turn;
 * then, for every worker, sipc-init's STARTED report and the worker's
 * HELLO frame on the protocol socket.  "Ready" is the HELLO read.  All
 * 256 are cloned first, then every report and HELLO is read as it comes
 * (one epoll), so the starts compete for the CPUs as a pool's do.
 * Timed from the first worker's first step (the parent cgroup's mkdir
 * included) to the last HELLO.
 *
 * A second way (`noexec`) saves one exec: the cloned child is not a
 * vfork of the caller but a copy of it (clone3, fork-style, born in its
 * leaf with CLONE_INTO_CGROUP) that does sipc-init's work itself: it
 * mounts /proc, starts the worker (vfork + exec), reports STARTED, and
 * stays PID 1: it reaps every orphan, and exits when the worker has
 * exited (reporting its status) or when the report socket hangs up.  A
 * copy costs the caller's page tables, so its price grows with the
 * supervisor's memory; this process is small (its RSS is printed).
 *
 * Prints per way W (`same`, `noexec`) and round:
 *   metric raw_spawn_contained_256_<W>_ready_r<k>  ms
 * and the median of the rounds:
 *   metric raw_spawn_contained_256_<W>_ready       ms
 *   metric raw_spawn_contained_256_<W>_cpu_per_worker  us (getrusage of
 *          this process over the start, divided by 256; median)
 *   metric raw_spawn_contained_256_<W>_clone_us    us (mean time one
 *          clone call holds the caller: the vfork child's steps and the
 *          exec of sipc-init, for `same`), and for `same` its parts
 *          (means, they add up to it): _step_clone_us (to the child's
 *          first step), _step_cgroup_us (its move into the leaf),
 *          _step_mount_us (parent-death signal, / private, /proc),
 *          _step_hygiene_us (group, dispositions, descriptors),
 *          _step_exec_us (execve of sipc-init until the caller goes on)
 *   metric raw_spawn_contained_256_<W>_clones_done  ms (the last clone
 *          returned) and _started_last (the last STARTED report read)
 * and a note saying whether a cgroup was made.  Runs as root or where a
 * PID namespace may be made (unprivileged: not available, a note).
 *
 * The steps are spawn_contained.h's, which sipc_bench's
 * spawn_contained section shares.
 *
 * Threads: one.
 */
#include "spawn_contained.h"

static const char *const step_name[NSTEP] = { "step_clone_us",
    "step_cgroup_us", "step_mount_us", "step_hygiene_us", "step_exec_us" };

static void
emit(const char *way, const char *what, double v, const char *unit)
{
	char name[160];

	snprintf(name, sizeof(name), "raw_spawn_contained_256_%s_%s", way,
	    what);
	bench_metric(name, v, unit);
}

int
main(int argc, char **argv)
{
	static const char *const ways[2] = { "same", "noexec" };
	unsigned rounds, r;
	struct fig f[8];
	double v[5 + NSTEP][8];
	char why[256], name[32];
	int a = 1, rc, quick = bench_quick(argc, argv);

	if (a < argc && strcmp(argv[a], "--quick") == 0)
		a++;
	if (argc - a != 2) {
		fprintf(stderr, "usage: raw_spawn_contained [--quick] INIT "
		    "WORKER\n");
		return 2;
	}
	rounds = quick ? 1 : 5;
	if (sc_setup(argv[a], argv[a + 1]) < 0)
		return 1;
	cg_parent_make(99);
	if (cg_parent[0] != '\0') {
		printf("note raw_spawn_contained: a leaf cgroup per worker "
		    "below %s\n", cg_parent);
		close_fd(&cg_parent_fd);
		(void)rmdir(cg_parent);
	} else {
		printf("note raw_spawn_contained: no cgroup v2 writable here; "
		    "workers get none (as the library's would not)\n");
	}
	for (int wy = 0; wy < 2; wy++) {
		/* Rounds alternate with nothing else: every round of a way
		 * runs back to back, the median is kept. */
		for (r = 0; r < rounds; r++) {
			if ((rc = sc_round(wy == 1, r, &f[r], why,
			    sizeof(why))) < 0) {
				printf("note raw_spawn_contained %s %s: %s\n",
				    ways[wy], rc == -2 ? "not available here" :
				    "failed", why);
				fflush(stdout);
				if (wy == 0)
					return rc == -2 ? 0 : 1;
				goto next;
			}
			snprintf(name, sizeof(name), "ready_r%u", r + 1);
			emit(ways[wy], name, f[r].ready, "ms");
			v[0][r] = f[r].ready;
			v[1][r] = f[r].cpu;
			v[2][r] = f[r].clone_us;
			v[3][r] = f[r].clones_done;
			v[4][r] = f[r].started_last;
			for (int s = 0; s < NSTEP; s++)
				v[5 + s][r] = f[r].step[s];
		}
		emit(ways[wy], "ready", bench_median(v[0], rounds), "ms");
		emit(ways[wy], "cpu_per_worker", bench_median(v[1], rounds), "us");
		emit(ways[wy], "clone_us", bench_median(v[2], rounds), "us");
		emit(ways[wy], "clones_done", bench_median(v[3], rounds), "ms");
		emit(ways[wy], "started_last", bench_median(v[4], rounds), "ms");
		for (int s = 0; s < NSTEP && wy == 0 && SC_SHARED_VM; s++)
			emit(ways[wy], step_name[s], bench_median(v[5 + s],
			    rounds), "us");
next:;
	}
	bench_metric("raw_spawn_contained_rss", (double)bench_rss_kb(0), "kB");
	return 0;
}

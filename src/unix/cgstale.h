/*
 * cgstale.h - the cgroups a crashed supervisor left: swept at open,
 * marked with the journal of the instance that made them, ended after
 * the leftover verdicts.  The rules are cgroup.h's
 * (sipc__cg_mark_journal, sipc__cg_end_dead) and cgstale.c's; these
 * calls take the supervisor cgroup's directory, path and journal mark
 * instead of the struct sipc__cg that cgroup.c keeps to itself.
 *
 * Threads: the thread that creates the supervisor (sipc_create(), no
 * worker exists yet).  No shared state.
 */
#ifndef SIPC_CGSTALE_H
#define SIPC_CGSTALE_H

/* Told for each dead owner's cgroup killed (sipc__cg_end_dead). */
typedef void sipc__cg_dead_fn(void *arg, const char *path, unsigned procs,
                              int err);

/* This process's PID namespace (the inode of /proc/self/ns/pid), the
 * last part of a supervisor cgroup's name, or 0 when it cannot be read
 * (then nothing is swept or ended). */
unsigned long sipc__cg_own_pidns(void);

/* rmdir the supervisor cgroups under the directory pfd whose owner is
 * gone (this PID namespace's names only), with their worker cgroups:
 * only those the kernel lets go (empty).  Nothing is killed. */
void sipc__cg_sweep_stale(int pfd);

/* Resolve state_dir (a directory not made yet as its resolved parent and
 * name) into journal (PATH_MAX bytes) and set it as the journal mark of
 * the supervisor cgroup at dirfd.  0; -ENOENT when it cannot be
 * resolved (journal is then ""); or -errno from the kernel (then
 * unmarked). */
int sipc__cg_stale_mark(int dirfd, const char *state_dir, char *journal);

/* Kill, wait for and remove what the dead owners beside the supervisor
 * cgroup at dirfd (its absolute path: path) left, per
 * sipc__cg_end_dead(); journal: that cgroup's mark ("" none), or NULL
 * when no marked cgroup is to be ended this time.  How many were
 * killed, or -errno when the parent cannot be opened. */
int sipc__cg_stale_end(int dirfd, const char *path, const char *journal,
                       sipc__cg_dead_fn *say, void *arg);

#endif

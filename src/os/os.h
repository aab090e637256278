/*
 * os/os.h - what src/os/ exports: the platform: clone and pidfds, process identity, cgroups, owner mode, a worker launch under sipc-init and its end, scratch directories, usage figures.
 */
#ifndef SIPC_SRC_OS_H
#define SIPC_SRC_OS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include "sipc.h"
#include "base/base.h"

struct sipc_supervisor;
struct sipc__slot;
struct sipc__req;
struct sipc__table;
struct sipc__event;
struct sipc__callread;
struct sipc__wbatch;
struct sipc__diag;
struct sipc__usage;
struct sipc__journal;
struct sipc__rx;
struct sipc_provider_ops;
struct sipc_provider_chan;

/* ---- clone */
#include <signal.h>
#include <stdbool.h>
#include <sys/types.h>

enum sipc__spawn_flags {
	SIPC__SPAWN_SETPGRP = 1u << 0,  /* own process group (leader) */
	SIPC__SPAWN_NEWPID = 1u << 1,   /* PID 1 of a new PID namespace, in a
	                                 * mount namespace of its own (for a
	                                 * /proc that shows only its pids) */
	SIPC__SPAWN_NEWUSER = 1u << 2,  /* ... inside a new user namespace
	                                 * mapping the caller's uid/gid */
	SIPC__SPAWN_CGROUP = 1u << 3,   /* in cgroup_fd's cgroup v2 before
	                                 * it runs anything of its own: born
	                                 * there (clone3, CLONE_INTO_CGROUP)
	                                 * or moved there by its first system
	                                 * call (shared-memory spawn: it
	                                 * writes "0" to its cgroup.procs,
	                                 * or fails); no child it forks ever
	                                 * lives outside it */
	SIPC__SPAWN_SETID = 1u << 4,    /* as uid and gid (no supplementary
	                                 * groups) before anything else of
	                                 * its own: a root caller's child that
	                                 * must not be root */
};

struct sipc__spawn {
	const char *path;
	char *const *argv;
	char *const *envp;
	/* Descriptors the child finds at 0, 1, 2, 3 and 4 (-1: none; 0 must
	 * be given).  Every source must be >= SIPC__SPAWN_FD_FLOOR so no
	 * dup2() target clobbers another source.  Everything else is
	 * closed in the child. */
	int fds[5];
	unsigned flags;               /* enum sipc__spawn_flags */
	unsigned nproc_limit;         /* RLIMIT_NPROC in the child, 0 = none */
	int cgroup_fd;                /* SIPC__SPAWN_CGROUP: its directory */
	uid_t uid;                    /* SIPC__SPAWN_SETID */
	gid_t gid;
};

#define SIPC__SPAWN_FD_FLOOR 10

/* A child cloned by sipc__spawn_start: it has exec'd (report 0) or
 * exited after its report. */
struct sipc__spawned {
	pid_t pid;
	int pidfd;                    /* close-on-exec */
	int report;                   /* 0 exec'd; > 0 exec's errno; < 0 a
	                               * step before exec failed (-errno) */
};

/*
 * Start the child.  Both clones are vforks (CLONE_VFORK): the call
 * returns once the child has begun its execve() or has exited, with its
 * report in *ret (no descriptor to wait on, so no host child forked
 * meanwhile can hold the caller).  The loading of the program and the
 * dynamic linker still run in parallel, so a caller can start many and
 * then collect them.  In a new user namespace the child writes its own
 * one-line uid and gid maps first.
 * Returns 0 with *ret filled, or -errno when the clone failed
 * (EPERM/EINVAL/ENOSPC/EUSERS for a namespace the caller may not
 * create) or cgroup_fd's cgroup.procs cannot be opened for writing;
 * nothing is left behind on
 * failure.  sp and what it points to are read only during the call (the
 * child has its own copy).  The caller's descriptors are untouched.
 */
int sipc__spawn_start(const struct sipc__spawn *sp, struct sipc__spawned *ret);

/*
 * What a started child reported.  Returns 0 (pid and pidfd stay the
 * caller's); SIPC_E_EXEC with *ret_errno set when the child could not
 * exec; -errno when a step before exec failed (it could not move itself
 * into its cgroup, SIPC__SPAWN_CGROUP on the shared-memory spawn, as
 * clone3 would have failed with CLONE_INTO_CGROUP; or could not write
 * its id maps).  On failure the child (which has exited) is reaped,
 * bounded, and its pidfd closed.
 */
int sipc__spawn_finish(struct sipc__spawned *sd, int *ret_errno);

/* Start the child and wait until it has exec'd (start, then finish):
 * 0 with its pid and pidfd, or as those two fail. */
int sipc__spawn(const struct sipc__spawn *sp, pid_t *ret_pid, int *ret_pidfd,
                int *ret_errno);

/* Move fd to >= SIPC__SPAWN_FD_FLOOR, close-on-exec; closes the old one.
 * Returns the new descriptor or -errno (fd closed either way). */
int sipc__fd_high(int fd);

/*
 * Has the child behind pidfd ended?  1: it has, *ret filled, still
 * unreaped (WNOWAIT: its pid and group id stay pinned); 0: running;
 * -ECHILD: someone else reaped it (it is lost); other -errno.
 */
int sipc__pidfd_observe(int pidfd, siginfo_t *ret);
/* Reap the child behind pidfd (blocking; EINTR retried).  0 or -errno.
 * Only for a child known to have exited (observed, WNOWAIT). */
int sipc__pidfd_reap(int pidfd);
/* Reap the child behind pidfd once it has exited, waiting at most ms:
 * 0, -ETIMEDOUT (left unreaped; counted as an expired bound, base/base.h),
 * or -errno.  For a child just killed or known to be exiting, whose
 * exit may still hang (a PID namespace member that cannot die). */
int sipc__pidfd_reap_within(int pidfd, int ms);
/* The bound for that: a killed process is normally gone in
 * milliseconds. */
#define SIPC__REAP_MS 5000

/* ---- ident */
#include <stdint.h>
#include <sys/types.h>

#include "sipc_provider.h"

#define SIPC__BOOT_ID_LEN 36 /* "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */

/* What the journal records about a worker (an ownership record). */
struct sipc__ident {
	pid_t pid;
	pid_t pgid;
	uint64_t starttime;              /* /proc/<pid>/stat field 22 */
	char boot_id[SIPC__BOOT_ID_LEN + 1];
	uint8_t instance[16];            /* supervisor instance that spawned it */
	uint32_t slot;
	uint32_t generation;
};

/*
 * The local provider's opaque identity (struct sipc_provider_id): pid
 * u32, pgid u32, starttime u64 (little-endian), boot_id[36], exactly the
 * leading bytes of a version 1 WORKER journal record
 * (SIPC__JREC_V1_ID_LEN), so an old journal's leftovers are still
 * proven.  from_id: 0, or -EINVAL when `id` is not that length (the
 * boot id comes out NUL-terminated; instance, slot and generation are
 * zeroed).
 */
#define SIPC__LOCAL_ID_LEN (4 + 4 + 8 + SIPC__BOOT_ID_LEN)
void sipc__ident_to_id(const struct sipc__ident *k,
                       struct sipc_provider_id *ret);
int sipc__ident_from_id(const struct sipc_provider_id *id,
                        struct sipc__ident *ret);

/* Facts parsed from one read of /proc/<pid>/stat. */
struct sipc__proc_stat {
	char state;                      /* 'R', 'S', 'Z', ... */
	pid_t ppid;
	pid_t pgid;
	uint64_t starttime;
	uint64_t cminflt;                /* 11: minor faults of waited children */
	uint64_t ticks;                  /* 14 to 17: utime + stime + cutime + cstime */
};

/*
 * Parse the text of a /proc/<pid>/stat line.  The command name (field 2)
 * may contain spaces and ')' so parsing starts after the LAST ')'.
 * Returns 0, or -EINVAL for text that is not a stat line.  Pure.
 */
int sipc__proc_stat_parse(const char *text, struct sipc__proc_stat *ret);

/* Read and parse /proc/<pid>/stat.  -ESRCH when there is no such pid. */
int sipc__proc_stat(pid_t pid, struct sipc__proc_stat *ret);

/*
 * Read /proc/<pid>/status once into buf (len bytes); for each of
 * keys[0..n) ("VmHWM:", with its colon) point vals[i] at the text after
 * it on the line that begins with it, or NULL when none does.  0 or
 * -errno (the file's open or read).
 */
int sipc__proc_status(pid_t pid, char *buf, size_t len,
                      const char *const *keys, const char **vals,
                      unsigned n);

/* Start time of `pid` (field 22 of /proc/<pid>/stat).  -ESRCH if gone. */
int sipc__proc_starttime(pid_t pid, uint64_t *ret);

/* Current boot id (36 characters + NUL) from
 * /proc/sys/kernel/random/boot_id. */
int sipc__boot_id(char ret[SIPC__BOOT_ID_LEN + 1]);

/*
 * Fill `ret` with the identity of live process `pid` as of now (pid,
 * pgid, start time, boot id); instance, slot and generation are zeroed
 * for the caller to set.  -ESRCH if gone.
 */
int sipc__ident_of(pid_t pid, struct sipc__ident *ret);

/*
 * Is `rec` proven to name a process that exists now?  1 when a process
 * with rec->pid exists, was started at rec->starttime, in the boot
 * rec->boot_id, and is in process group rec->pgid; 0 when not proven
 * (gone, pid reused, another boot, group changed); negative on error
 * reading /proc.  A zombie that matches counts as proven: it still pins
 * its pid and group id, so signalling them is still safe (and harmless).
 * Note the answer can go stale the moment it is returned unless the
 * caller holds a pidfd opened BEFORE the call (see terminate).
 */
int sipc__ident_verify(const struct sipc__ident *rec);

/*
 * Terminate a leftover worker of a dead supervisor instance: a process we
 * did not spawn in this life and cannot wait for (it was reparented).
 * Opens a pidfd first, then verifies the identity (the pidfd pins that
 * exact process, so the proof cannot be overtaken by pid reuse), then:
 * SIGTERM to the leader by pidfd and, when the leader leads its own group
 * (pgid == pid), to the group; waits up to grace_ms for the leader and the
 * group members found to exit; then SIGKILL the same way.  The group is
 * signalled only while the leader is seen unreaped (an unreaped leader
 * holds the group id, so it cannot name another group); members found in
 * /proc are pinned by pidfds so they can still be killed after the
 * leader is gone.  Nothing unproven is ever signalled.
 * Returns 1 when the proven process was terminated (it has exited), 0
 * when the identity is not proven (left alone), negative on error.
 */
int sipc__ident_terminate(const struct sipc__ident *rec, unsigned grace_ms);

/* The resident memory of `root` and its descendants: the sum of their
 * resident set sizes (/proc/PID/statm; shared pages count in each),
 * descendants found through /proc/PID/task/TID/children, at most 4096
 * processes.  0, or -errno when root itself cannot be read. */
int sipc__tree_rss(pid_t root, uint64_t *ret_bytes);

/* The pids of `root` and its descendants (the same walk), root first,
 * at most max of them: their count, -E2BIG when the tree has more, or
 * -errno when root is not there. */
int sipc__tree_pids(pid_t root, pid_t *ret, unsigned max);
/* The host's uids (real, effective, saved, filesystem: ret[0..3]) and
 * gids (ret[4..7]) of the worker that `pid` displays: its only child
 * when it has exactly one (sipc-init's worker), else pid itself.  0 or
 * -errno.  Any thread. */
int sipc__proc_worker_ids(pid_t pid, unsigned long ret[8]);

/* ---- cgfile */
#include <stdint.h>
#include <sys/types.h>

#define SIPC__CG_FILE_CAP 4096    /* cgroup interface files are small */

/* Read the small file `name` under dirfd into buf (len bytes with the
 * NUL), NUL-terminated.  Its length, or -errno. */
ssize_t sipc__cg_read_at(int dirfd, const char *name, char *buf, size_t len);
/* Write `text` to the file `name` under dirfd in one write (a cgroup
 * file takes a whole value per write).  0, -EIO on a short write, or
 * -errno. */
int sipc__cg_write_at(int dirfd, const char *name, const char *text);

/* Value of `key` in a flat-keyed cgroup file ("key value" lines) under
 * directory dirfd.  0, -ENOENT when the file or the key is missing, or
 * -errno.  Exposed for tests. */
int sipc__cg_read_key(int dirfd, const char *file, const char *key,
                      uint64_t *ret);

/* Wait until the cgroup whose directory is fd holds no process
 * (cgroup.events says "populated 0"), at most timeout_ms, woken by the
 * kernel's notice of a change.  Blocks the calling thread.  0,
 * -ETIMEDOUT, or -errno when cgroup.events cannot be read. */
int sipc__cg_wait_empty(int fd, int timeout_ms);
/* Read an open cgroup.events: 1 when it says "populated 0", 0 while a
 * process is in the cgroup or below, or -errno. */
int sipc__cg_events_empty(int events_fd);

/* ---- cgstale */
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

/* ---- cgroup */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>


struct sipc__cg;                  /* the supervisor's cgroup */
struct sipc__cgw;                 /* one worker generation's cgroup */

struct sipc__cg_limits {
	unsigned pids_max;            /* 0 = unset */
	size_t memory_max;            /* bytes, 0 = unset */
	unsigned cpu_max_percent;     /* of one CPU, 0 = unset */
};

/* Bound on waiting for a killed worker cgroup to empty before rmdir. */
#define SIPC__CG_EMPTY_MS 2000
/* Of that, how long a worker's end waits in place (on the reaper
 * thread) before the rest is waited for without blocking (os/os.h). */
#define SIPC__CG_QUICK_MS 100

/*
 * Make the supervisor's cgroup.  mode OFF: *ret = NULL, why "off".
 * AUTO without limits: *ret = NULL with the reason in why when no cgroup
 * can be made here (returns 0: run without, reported).  REQUIRED, or any
 * limit set: an error (-errno, or SIPC_E_CGROUP when a controller is
 * missing) with "key: reason" in why.  On success *ret is the cgroup and
 * why holds its path.  Nothing is left behind on failure.
 */
int sipc__cg_open(enum sipc_cgroup_mode mode, const struct sipc__cg_limits *lim,
                  struct sipc__cg **ret, char *why, size_t whylen);
/* Kill and remove whatever worker cgroup is left (bounded), then the
 * supervisor's own; free.  Call after every worker ended.  0, or -errno
 * when the supervisor's cgroup could not be removed.  Accepts NULL. */
int sipc__cg_close(struct sipc__cg *cg);
/* The supervisor cgroup's directory (absolute path). */
const char *sipc__cg_path(const struct sipc__cg *cg);
/* enum sipc_limit bits configured (each one is enforced in every worker
 * cgroup, or the worker does not start). */
unsigned sipc__cg_limits(const struct sipc__cg *cg);

/*
 * Mark cg with the journal of its instance: state_dir (resolved; a
 * directory not made yet as its resolved parent and name), in an
 * extended attribute of the cgroup, so that what a crash of this
 * instance leaves is ended only by an instance on the same journal
 * (sipc__cg_end_dead).  0 (also for a NULL cg or state_dir) or -errno
 * (then unmarked: any later instance may end it).  sipc__cg_state_init
 * does it; the thread that creates the supervisor.
 */
int sipc__cg_mark_journal(struct sipc__cg *cg, const char *state_dir);

/*
 * End what crashed supervisors left: every supervisor cgroup beside
 * cg's (sipc.<pid>.<n>.<pidns> under the same parent) whose name carries
 * this process's PID namespace and whose pid no longer exists, and that
 * still holds a process, is killed through its cgroup.kill (the whole
 * subtree), waited for up to SIPC__CG_EMPTY_MS and removed with its
 * worker cgroups; an empty one is only removed.  A live owner's
 * cgroups, another namespace's and names without a namespace are never
 * touched.  Nor is a cgroup marked with a journal, unless cg is marked
 * with the same one and journal_settled says that journal keeps no
 * leftover record (every journalled worker had its verdict: none is
 * left for a later instance).
 * say(arg, path, procs, err) for each cgroup killed: its path, how many
 * processes its worker cgroups held just before the kill, and 0 (killed
 * and removed) or -errno (-ETIMEDOUT: not empty in time; it stays for
 * the next instance).  Returns how many were killed, or -errno when the
 * parent cannot be opened.  Call it after the leftover verdicts, before
 * any worker starts.  Accepts NULL cg (returns 0).  sipc_create()'s
 * thread.
 */
int sipc__cg_end_dead(const struct sipc__cg *cg, bool journal_settled,
                      sipc__cg_dead_fn *say, void *arg);

/*
 * A provider's state for one supervisor, shaped as the provider ops
 * create, destroy and info (sipc_provider.h; the local and the sandbox
 * providers share it): the supervisor's cgroup, or why it has none.
 * create: per cfg's `cgroup` mode and limits; on failure errbuf says
 * "cgroup: <why>", the error is sipc__cg_open()'s, nothing is left.
 * destroy accepts NULL.  Threads: as those ops.
 */
struct sipc__cg_state {
	struct sipc__cg *cg;
	char why[160];
};
int sipc__cg_state_create(const struct sipc_config *cfg, void **ret_state,
                          char *errbuf, size_t errlen);
void sipc__cg_state_destroy(void *state);
/* The same in a state the caller embeds (a provider with more state). */
int sipc__cg_state_init(const struct sipc_config *cfg,
                        struct sipc__cg_state *st, char *errbuf,
                        size_t errlen);
void sipc__cg_state_fini(struct sipc__cg_state *st);
struct sipc_provider_info;
void sipc__cg_state_info(void *state, struct sipc_provider_info *ret);

/* Make a worker generation's cgroup and write the limits into it.
 * 0 or -errno (nothing left behind). */
int sipc__cgw_create(struct sipc__cg *cg, uint32_t slot, uint32_t gen,
                     struct sipc__cgw **ret);
/* Directory descriptor: clone3's CLONE_INTO_CGROUP, or where the
 * spawn opens cgroup.procs (os/os.h). */
int sipc__cgw_fd(const struct sipc__cgw *w);
/* Kill every process in it (cgroup.kill).  0 or -errno. */
int sipc__cgw_kill(struct sipc__cgw *w);
/* How many times the OOM killer acted in it (memory.events oom_kill);
 * 0 when the memory controller is not enabled there. */
uint64_t sipc__cgw_oom_kills(const struct sipc__cgw *w);
/* An end by SIGKILL while w counts an OOM kill becomes SIPC_EXIT_OOM.
 * Accepts NULL (no cgroup: left as it is). */
void sipc__cgw_note_oom(const struct sipc__cgw *w, struct sipc_exit *e);
/* Kill, wait (up to SIPC__CG_EMPTY_MS) until it holds no process, rmdir
 * and free.  A cgroup that did not empty in time stays for
 * sipc__cg_close() (-ETIMEDOUT).  0 or -errno.  Accepts NULL. */
int sipc__cgw_remove(struct sipc__cgw *w);
/* The same, waiting at most ms (0: only a look). */
int sipc__cgw_remove_within(struct sipc__cgw *w, int ms);
/* Its cgroup.events, opened for poll() / epoll: POLLPRI when it changes
 * ("populated" included), until it is read again through this
 * descriptor (sipc__cg_events_empty, os/os.h).  The descriptor or
 * -errno. */
int sipc__cgw_events_open(const struct sipc__cgw *w);

/* ---- usage */
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

/* ---- launchio */
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "init/init_proto.h"

struct sipc__cgw;

/* [0] the supervisor's end, [1] the child's (moved high by open). */
struct sipc__launch_fds {
	int sv[2];                    /* channel (stream socket) */
	int dp[2];                    /* diagnostics pipe */
	int rp[2];                    /* sipc-init's report socket */
	int devnull;
	bool window;                  /* holds the fork window (below) */
};

/*
 * The child's ends exist only between open and close_child (or close):
 * the "fork window".  A host thread's fork() (without exec) inside it
 * would give its child copies of them: the worker's channel, its
 * diagnostics and its init's report socket would then stay open after
 * the worker closed or lost its own, for as long as that host child
 * lives.  So open counts a window under a process-wide mutex that a
 * pthread_atfork() prepare handler holds through the fork: a host
 * fork() waits until no window is open (a window lasts one clone,
 * through its exec), and no launch opens one while a fork is under way.
 * Library threads never fork().  (A vfork() or posix_spawn() child runs no handler; it execs
 * at once, and close-on-exec takes the copies then.)
 *
 * Open all four, the child's ends at or above SIPC__SPAWN_FD_FLOOR.
 * passcred: the report socket's supervisor end gets SO_PASSCRED, so
 * each report carries the sender's pid as this process sees it (a
 * namespace's init has no other way to tell us its host pid).  0 or
 * -errno; on failure whatever was opened is in *f for close.
 */
int sipc__launch_fds_open(struct sipc__launch_fds *f, bool passcred);
/* Close every descriptor still open (-1 entries skipped). */
void sipc__launch_fds_close(struct sipc__launch_fds *f);
/* Close the child's ends once the child has its copies. */
void sipc__launch_fds_close_child(struct sipc__launch_fds *f);

/* The environment as seen from inside a PID namespace: SIPC_PARENT_PID
 * says 1 (sipc-init).  A new array of the same strings; free() it. */
char **sipc__ns_env(char *const *envp);

/*
 * Read one report from sipc-init, waiting up to ms.  1 (got one), 0
 * (none in time, or end of stream), or -errno.  ret_pid (may be NULL)
 * gets the sender's pid from its credentials, 0 when the socket does not
 * pass them.
 */
int sipc__init_report_read(int fd, int ms, struct sipc__init_msg *ret,
                           pid_t *ret_pid);
/* The first report, as sipc__init_report_read, but the wait also ends
 * when our child behind pidfd has exited (a report it sent first is
 * still read): an init that died without reporting is not waited for
 * until the bound.  A bound that runs out is counted (base/base.h). */
int sipc__init_report_wait(int fd, int pidfd, int ms,
                           struct sipc__init_msg *ret, pid_t *ret_pid);
/* Is a report waiting (non-blocking)?  false for fd < 0. */
bool sipc__init_report_pending(int fd);
/* Drain the reports; true when one was EXITED, *ret then its status. */
bool sipc__init_report_exit(int fd, struct sipc_exit *ret);

/* A wait status (as waitpid gives, or sipc-init reports) as an exit. */
void sipc__exit_from_status(int status, struct sipc_exit *ret);

/* Wait up to ms for the process behind pidfd to exit: true if it did. */
bool sipc__pidfd_gone_within(int pidfd, int ms);

/* Bound on a namespace's end after its init was killed. */
#define SIPC__INIT_END_MS 5000
/* How long try_end waits, once per worker, for our child to exit after
 * its init reported the worker's end (it exits at once, unless its
 * namespace's teardown hangs on a member that cannot die). */
#define SIPC__INIT_EXIT_MS 500

/*
 * One worker's end, as a provider's handle holds it: its FIRST member,
 * so that the sipc__wend_* functions below are the provider's ops
 * try_end, stop, sweep and release as they are (the handle is the
 * struct sipc__wend).  The provider fills it at launch:
 *   pidfd      our child, the end descriptor: observed with WNOWAIT, so
 *              its zombie pins its pid (and group id) until sweep
 *              reaps it.  Local: the worker or its sipc-init; sandbox:
 *              the outer bwrap, which exits last.
 *   sig_fd     where stop's signals go.  Equal to pidfd (local), or
 *              the pidfd of a proven process behind our child, owned
 *              here and killed at sweep (sandbox: sipc-init, never the
 *              outer bwrap, which would take the status with it), or
 *              -1 when that process is already gone with its namespace
 *              (stop is then a no-op).
 *   pgid       > 0: a process group signalled with pidfd, and killed
 *              before the reap, only while our zombie pins its id
 *              (local process-group mode); 0: none.
 *   report_fd  sipc-init's report socket, or -1: the worker's exact
 *              status, and "a report is waiting" means the init is on
 *              its way out.
 *   fold128    our child reports a PID 1 killed by signal n as exit
 *              code 128+n (bwrap): read it back as signal n.
 *   cg         the worker generation's cgroup, or NULL: FORCED writes
 *              cgroup.kill, the end notes an OOM kill, sweep removes it.
 *
 * With a cgroup, sweep kills its members and removes it once it holds
 * no process, at most SIPC__CG_EMPTY_MS later, without blocking: past
 * a brief wait it returns 1 (not done: call again) and the end
 * descriptor (an epoll set: our child's pidfd, then cgroup.events and
 * a deadline timer) wakes the caller for the next look.
 * Threads: the reaper thread only (a handle needs no lock).
 */
struct sipc__wend {
	int pidfd;
	int sig_fd;
	int report_fd;
	pid_t pgid;
	bool fold128;
	bool ended;
	bool draining;                /* swept but its cgroup not yet empty */
	bool reaped;                  /* by sweep, or behind our back */
	bool swept;
	bool exit_waited;             /* try_end's one wait after a report */
	struct sipc__cgw *cg;
	int ep;                       /* the end descriptor with a cgroup */
	int ev_fd;                    /* while draining: cgroup.events */
	int tm_fd;                    /* while draining: its deadline */
	int64_t drain_until;          /* monotonic ms: give up waiting */
	struct sipc_exit exit;        /* once ended: how */
};

/* Every descriptor -1, nothing ended. */
void sipc__wend_init(struct sipc__wend *w);
/* Once w->cg is set (or is known NULL), before the clone: what the end
 * descriptor needs.  0 or -errno. */
int sipc__wend_prepare(struct sipc__wend *w);
/* Once pidfd is set: the channel's end descriptor (chan.end_fd). */
int sipc__wend_end_fd(struct sipc__wend *w);
/* A launch that started: *ret cleared, then given f's protocol and
 * diagnostics descriptors (f no longer holds them), the end descriptor
 * and the cgroup facts (the limits of the provider's cgroup state `cg`,
 * which may be NULL, when the worker has a cgroup; `cg_err`: why it has
 * none).  The provider fills the rest (pid,
 * containment, note, identity). */
void sipc__wend_chan(struct sipc__wend *w, struct sipc__launch_fds *f,
                     const struct sipc__cg *cg, int cg_err,
                     struct sipc_provider_chan *ret);
/* A launch that did not start (its child, if any, reaped): close what
 * prepare opened, remove the cgroup. */
void sipc__wend_drop(struct sipc__wend *w);
/* The ops (sipc_provider.h), h a handle whose first member is a struct
 * sipc__wend.  sweep: 0, 1 (its cgroup not empty yet: call again once
 * the end descriptor polls readable) or -errno (-ETIMEDOUT: it did not
 * empty in time; it stays for sipc__cg_close).  release frees h with
 * free(), after closing what the struct sipc__wend holds: a provider
 * keeps nothing else to release in its handle. */
int sipc__wend_try_end(void *h, struct sipc_exit *ret);
int sipc__wend_stop(void *h, enum sipc_provider_stop how);
int sipc__wend_sweep(void *h);
void sipc__wend_release(void *h);

/* ---- elfdeps */
#include <stddef.h>

/* A set of absolute paths, each a file the loader opens or a link on
 * the way to one, with every directory in it resolved (so a bind at
 * that path needs no host link to exist in the view). */
struct sipc__elfdeps {
	char **path;
	size_t n, cap;
};

/*
 * Add `prog` and what it needs to d: its interpreter (PT_INTERP) and,
 * transitively, each DT_NEEDED library, looked up as the loader does
 * without its cache: DT_RPATH (when no DT_RUNPATH), DT_RUNPATH ($ORIGIN
 * expanded), the directories of /etc/ld.so.conf and /etc/ld.so.conf.d,
 * the multiarch directories named after the interpreter's, then /lib,
 * /usr/lib, /lib64, /usr/lib64.  A library of another ELF class or
 * machine is skipped, as the loader does.  With libc comes libgcc_s,
 * which glibc loads itself to unwind (pthread_exit, cancellation) and
 * no DT_NEEDED names, when found.  For every file, each path of
 * its symbolic link chain is in d.  A static program adds itself only.
 * 0, or -errno with `why` saying what (ENOEXEC: not an ELF file of this
 * machine, a #! script for one; ENOENT: a library not found).  d may
 * then hold part of the set; free it with sipc__elfdeps_free.
 */
int sipc__elfdeps_add(struct sipc__elfdeps *d, const char *prog, char *why,
                      size_t whylen);

/* Add one plain file (not read), with the paths of its link chain.
 * 0, or -errno with why. */
int sipc__elfdeps_add_file(struct sipc__elfdeps *d, const char *path,
                           char *why, size_t whylen);

/* Is `path` in d?  (Exact string.) */
int sipc__elfdeps_has(const struct sipc__elfdeps *d, const char *path);

void sipc__elfdeps_free(struct sipc__elfdeps *d);

/* ---- scratch */
#include <stddef.h>
#include <stdint.h>

/* Make "<root>/sipc-XXXXXX" and open it: its path in ret_path, its
 * descriptor (O_DIRECTORY, close-on-exec) in *ret_fd.  0 or -errno. */
int sipc__scratch_make(const char *root, char *ret_path, size_t len,
                       int *ret_fd);

/* Make directory `name` under dirfd (0700; one already there is kept)
 * and, with uid >= 0, give it to uid and gid (a root supervisor's
 * sandbox identity, which must write in it), never following a link.
 * 0 or -errno. */
int sipc__scratch_mkdir(int dirfd, const char *name, int uid, int gid);

/* Let gid (the sandbox's) pass through the instance directory fd: group
 * gid, mode 0710 (no listing, no writing).  0 or -errno. */
int sipc__scratch_share(int fd, int gid);

/* The name under the instance directory of worker generation `gen` of
 * slot `slot` ("w<slot>.<gen>"), or with `id` (request ids start at 1)
 * of that request's directory in it ("w<slot>.<gen>/<id>"). */
void sipc__scratch_name(char *buf, size_t len, unsigned slot, unsigned gen,
                        uint64_t id);

/* Remove `name` under dirfd and everything in it, at most 64 levels
 * deep; a link is removed, never followed.  0 (also when it was not
 * there), or the first -errno met (the rest is still tried). */
int sipc__scratch_remove(int dirfd, const char *name);

/* ---- docfd */
#include <stdint.h>

/*
 * A read-only duplicate of `fd` (close-on-exec) in *ret_fd and its size
 * in *ret_size.  A descriptor open for reading only is duplicated; one
 * open for writing is reopened read-only through /proc/self/fd, so a
 * worker can never write through what it is sent.  0, -EBADF, -EINVAL
 * (not a regular file, or not readable), or the reopening's -errno;
 * outputs untouched on failure.
 */
int sipc__docfd_take(int fd, int *ret_fd, uint64_t *ret_size);

/* ---- from the former pool/pool.h */
/* os/orphan.c (reaper thread, owner mode): reap ended adopted orphans and
 * return how many are shown ended but cannot be reaped yet (a thread
 * still runs); reap members of the last workers' groups and return how
 * many processes are still in those groups (destroy waits for both);
 * empty the SIGCHLD signalfd, true if a signal came. */
unsigned sipc__orphans_reap(struct sipc_supervisor *s);
unsigned sipc__orphans_left(struct sipc_supervisor *s);
/* os/orphan.c (sipc_create() / destroy): take owner mode (SIGCHLD blocked
 * in the calling thread, s->sig_fd, subreaper flag; -EBUSY if taken),
 * undo the mask change after a failed create, give it back. */
int sipc__owner_hold(struct sipc_supervisor *s);
void sipc__owner_unblock(void);
void sipc__owner_release(void);
bool sipc__orphans_signalled(struct sipc_supervisor *s);

#endif /* SIPC_SRC_OS_H */

/*
 * ident.h - process identity facts read from Linux /proc, the proof that
 * a pid still names the process a record describes, and termination of a
 * proven leftover worker that is no longer our child.
 *
 * Pure functions over /proc and pidfds: no library state, no locks, any
 * thread.  sipc__ident_terminate() blocks for up to grace_ms (plus a
 * bounded wait after SIGKILL); call it from a thread that may block.
 *
 * Identity = pid + start time (clock ticks since boot, field 22 of
 * /proc/<pid>/stat) + boot id + process group.  Limit: the start time has
 * clock-tick granularity (10 ms at USER_HZ 100), so a pid reused by a
 * process started in the same tick as the recorded one is not told
 * apart.  Reusing a pid within one tick needs the whole pid space to wrap
 * in that time (or a privileged write of ns_last_pid); the boot id and
 * the process group narrow it further.
 */
#ifndef SIPC_IDENT_H
#define SIPC_IDENT_H

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

#endif

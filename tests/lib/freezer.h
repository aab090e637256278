/*
 * freezer.h - a process held where even SIGKILL waits: a cgroup v1
 * freezer group (tests that need a tree member that cannot die yet:
 * owner_test, cgend_test).  Root only; a test without a writable v1
 * freezer skips.
 *
 * Threads: the CUnit thread.
 */
#ifndef SIPC_FREEZER_H
#define SIPC_FREEZER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Make the group FREEZER_ROOT/sipc-<tag>-<this pid> into dir[len];
 * false when there is no writable v1 freezer. */
bool st_freezer_make(char *dir, size_t len, const char *tag);
/* Move `pid` (its whole thread group) into `dir` and freeze it; true
 * once the group reads FROZEN (within wait_ms). */
bool st_freeze(const char *dir, pid_t pid, unsigned wait_ms);
/* Thaw the group; true if the state was written. */
bool st_thaw(const char *dir);
/* Thaw and remove the group (its members must be gone for the rmdir). */
void st_freezer_drop(const char *dir);
/* tl_wait_until predicate: SIGKILL pending on *(pid_t *)arg (process-wide
 * or on its first thread), as for a frozen process that was killed. */
bool st_kill_pending(void *arg);

#endif

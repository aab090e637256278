/*
 * statedir.h - helpers for tests of a supervisor's state directory: a
 * fresh directory, an instance forked to crash on it (its report line,
 * its SIGKILL), an entry of a reconcile list.  CUnit thread only, but
 * sd_child_fail(), which the forked instance calls.
 */
#ifndef SIPC_STATEDIR_H
#define SIPC_STATEDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "sipc.h"

/* A path "<fresh mkdtemp directory>/state", not created (a supervisor
 * creates it).  Failing to make the parent is a fatal assertion.  Free
 * with sd_remove(), which removes the whole parent tree. */
char *sd_make(void);
void sd_remove(char *dir);

/*
 * Fork an instance: the child runs fn(fd, arg), which reports one line
 * on fd ("ready ..." or, through sd_child_fail(), "fail ...") and never
 * returns (it exits, or waits to be killed).  The first line comes back
 * in `line` within `ms`.  No line, or one not starting with "ready ": it
 * is printed, the child is killed and reaped, and the test fails
 * fatally.  Returns the child's pid.
 */
pid_t sd_fork_instance(void (*fn)(int fd, void *arg), void *arg,
                       char *line, size_t len, int ms);
/* The forked instance's failure: "fail <what>: <error text>" on fd,
 * then _exit(1). */
void sd_child_fail(int fd, const char *what, int rc)
	__attribute__((noreturn));
/* The crash: SIGKILL a forked instance and reap it, asserting it died
 * of that signal. */
void sd_kill_instance(pid_t pid);

/* The entry with idempotency key `key`, or NULL. */
const struct sipc_unresolved *sd_find_key(const struct sipc_unresolved *u,
                                          size_t n, const char *key);

#endif

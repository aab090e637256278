/*
 * statedir.h - helpers for tests of a supervisor's state directory: a
 * fresh directory, a line from a forked instance, an entry of a
 * reconcile list.  CUnit thread only.
 */
#ifndef SIPC_STATEDIR_H
#define SIPC_STATEDIR_H

#include <stdbool.h>
#include <stddef.h>

#include "sipc.h"

/* A path "<fresh mkdtemp directory>/state", not created (a supervisor
 * creates it).  Failing to make the parent is a fatal assertion.  Free
 * with sd_remove(), which removes the whole parent tree. */
char *sd_make(void);
void sd_remove(char *dir);

/* Read one line (without its newline) from fd within `ms`; false on
 * EOF, error, overlong line or timeout. */
bool sd_read_line(int fd, char *buf, size_t len, int ms);

/* The entry with idempotency key `key`, or NULL. */
const struct sipc_unresolved *sd_find_key(const struct sipc_unresolved *u,
                                          size_t n, const char *key);

#endif

/*
 * jtest.h - helpers for the tests that drive the journal directly
 * (journal, jread, jdir): one state directory at a time, files in it,
 * an instance crashed for real (SIGKILL of a forked child), record
 * sizes.  CUnit thread only.
 */
#ifndef SIPC_JTEST_H
#define SIPC_JTEST_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "journal/journal.h"

/* The current state directory (jt_dir, not created) inside a fresh
 * mkdtemp directory (jt_base), both absolute and resolved. */
extern char jt_base[], jt_dir[];

void jt_mkstate(void);
/* Remove jt_base and everything in it. */
void jt_rmstate(void);
/* Path of a file in jt_dir (a static buffer, overwritten by the next
 * call); its size, or -1 when it does not exist. */
char *jt_path(const char *name);
off_t jt_fsize(const char *name);
/* Open the journal in jt_dir (group commit 5 ms); a failure is printed
 * and asserted, and NULL returned. */
struct sipc__journal *jt_open(enum sipc_durability mode);
/* Run fn on a journal in jt_dir in a child that is then SIGKILLed: a
 * real crash, nothing closed or flushed by the library. */
void jt_crash_child(enum sipc_durability mode,
                    void (*fn)(struct sipc__journal *));
/* The unresolved list (asserted to succeed) and its length. */
size_t jt_list(struct sipc__journal *j, struct sipc_unresolved **u);
/* Bytes of one record of `type` (an ACCEPTED one with a 2-byte key). */
size_t jt_rec_size(uint8_t type);
/* A version 1 WORKER record (type 5, as 0.x wrote it) for `k` (pid,
 * pgid, starttime, boot_id, instance, slot, generation), crafted byte by
 * byte into b (>= SIPC__JREC_MAX); returns its length. */
size_t jt_v1_worker_record(uint8_t *b, const struct sipc__ident *k);

#endif

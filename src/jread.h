/*
 * jread.h - read a journal file back at open (the torn-tail and corrupt
 * record rules are in journal.h, at sipc__journal_open).
 */
#ifndef SIPC_JREAD_H
#define SIPC_JREAD_H

#include <stddef.h>
#include <stdint.h>

#include "journal.h"
#include "jstate.h"

/*
 * Read the journal open on `fd` (directory `dirfd`), apply every good
 * record to `s`, count what was read and cut in `st`, keep a copy of a
 * corrupt journal, cut the file after the good prefix (fsync) and return
 * its length in *ret_size.  0, SIPC_E_JOURNAL (over 1 GiB, short read),
 * -ENOMEM or -errno, with a reason in errbuf.
 */
int sipc__jread_load(int fd, int dirfd, struct sipc__jstate *s,
    struct sipc__journal_stats *st, uint64_t *ret_size, char *errbuf,
    size_t errlen);

#endif

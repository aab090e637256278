/*
 * elfdeps.h - the files a dynamically linked program needs to start:
 * itself, its ELF interpreter and the closure of its DT_NEEDED
 * libraries, found by reading the ELF files (nothing is executed).
 *
 * Threads: any; no shared state.
 */
#ifndef SIPC_ELFDEPS_H
#define SIPC_ELFDEPS_H

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

#endif

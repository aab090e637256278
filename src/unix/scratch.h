/*
 * scratch.h - scratch directories (sipc_config.scratch_root): one per
 * supervisor instance, one per worker generation in it, one per request
 * (SIPC_REQ_SCRATCH) in its worker's.  Made 0700; removed with what a
 * worker left in them, never following a link it made.
 *
 * Pure functions over directory descriptors: no library state, any
 * thread.
 */
#ifndef SIPC_SCRATCH_H
#define SIPC_SCRATCH_H

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

#endif

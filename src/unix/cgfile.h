/*
 * cgfile.h - the cgroup v2 interface files, as both the supervisor's
 * cgroups (cgroup.c) and a crashed supervisor's (cgstale.c) read and
 * write them: small files under a cgroup's directory descriptor, one
 * whole value per write, flat-keyed "key value" lines, and
 * cgroup.events' "populated" with its change notification (POLLPRI).
 *
 * Threads: any; no state (each call works on the descriptors given).
 */
#ifndef SIPC_CGFILE_H
#define SIPC_CGFILE_H

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

#endif

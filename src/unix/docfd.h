/*
 * docfd.h - a request's document descriptor (SIPC_REQ_FD): the
 * read-only duplicate the supervisor keeps of the host's.
 *
 * Pure function over a descriptor: no library state, any thread.
 */
#ifndef SIPC_DOCFD_H
#define SIPC_DOCFD_H

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

#endif

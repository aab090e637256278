/*
 * os/doc_fd.c - a request's document descriptor (see os/os.h).
 *
 * Why reopen rather than dup: a duplicate shares the open file
 * description, its access mode included, and the worker gets that very
 * description by SCM_RIGHTS.  A memfd the host made read-write would
 * then be writable by the worker (unless sealed against writes).
 * open("/proc/self/fd/N", O_RDONLY) makes a new description of the same
 * file that only reads (proc(5), /proc/pid/fd).
 */
#include "os/os.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

int
sipc__docfd_take(int fd, int *ret_fd, uint64_t *ret_size)
{
	char path[64];
	struct stat st;
	int fl, nfd;

	if (fd < 0 || (fl = fcntl(fd, F_GETFL)) < 0)
		return -EBADF;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode) || (fl & O_ACCMODE) == O_WRONLY)
		return -EINVAL;
	if ((fl & O_ACCMODE) == O_RDONLY) {
		if ((nfd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
			return -errno;
	} else {
		(void)snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		if ((nfd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			return -errno;
	}
	*ret_fd = nfd;
	*ret_size = (uint64_t)st.st_size;
	return 0;
}

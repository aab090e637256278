/*
 * os/cgroup_file.c - the cgroup v2 interface files; see os/os.h.
 *
 * Threads: any.  No state: every call works on the descriptors it is
 * given.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "os/os.h"
#include "base/base.h"

/* ------------------------------------------------------------ files */

/* Read a small file under dirfd, NUL-terminated.  Length or -errno. */
ssize_t
sipc__cg_read_at(int dirfd, const char *name, char *buf, size_t len)
{
	ssize_t n;
	int fd;

	if ((fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	do
		n = read(fd, buf, len - 1);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		n = -errno;
	else
		buf[n] = '\0';
	close(fd);
	return n;
}

/* One write of `text` (cgroup files take a whole value per write). */
int
sipc__cg_write_at(int dirfd, const char *name, const char *text)
{
	size_t len = strlen(text);
	ssize_t n;
	int fd, rc = 0;

	if ((fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC)) < 0)
		return -errno;
	do
		n = write(fd, text, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		rc = -errno;
	else if ((size_t)n != len)
		rc = -EIO;
	close(fd);
	return rc;
}

/* The value of `key` in the text of a flat-keyed file (buf, changed). */
static int
find_key(char *buf, const char *key, uint64_t *ret)
{
	char *line, *save = NULL;
	size_t klen = strlen(key);
	unsigned long long v;

	for (line = strtok_r(buf, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save))
		if (strncmp(line, key, klen) == 0 && line[klen] == ' ' &&
		    sscanf(line + klen + 1, "%llu", &v) == 1) {
			*ret = v;
			return 0;
		}
	return -ENOENT;
}

int
sipc__cg_read_key(int dirfd, const char *file, const char *key,
                  uint64_t *ret)
{
	char buf[SIPC__CG_FILE_CAP];
	ssize_t n;

	if ((n = sipc__cg_read_at(dirfd, file, buf, sizeof(buf))) < 0)
		return (int)n;
	return find_key(buf, key, ret);
}

/* ------------------------------------------------------- populated */

/* Wait until the cgroup under fd holds no process.  0 or -ETIMEDOUT. */
int
sipc__cg_wait_empty(int fd, int timeout_ms)
{
	int64_t end = sipc__now_ms() + timeout_ms, left;
	struct pollfd pf = { .events = POLLPRI };
	uint64_t populated = 1;
	int rc;

	if ((pf.fd = openat(fd, "cgroup.events", O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	for (;;) {
		if ((rc = sipc__cg_read_key(fd, "cgroup.events", "populated",
		    &populated)) < 0 || populated == 0)
			break;
		if ((left = end - sipc__now_ms()) <= 0) {
			rc = -ETIMEDOUT;
			break;
		}
		/* cgroup.events raises POLLPRI on change; the slice only
		 * guards against a change between the read and the poll */
		(void)poll(&pf, 1, left < 50 ? (int)left : 50);
	}
	close(pf.fd);
	return rc;
}

/* Read through the descriptor that is polled: that read is what tells
 * the kernel the change was seen (POLLPRI stays set until then). */
int
sipc__cg_events_empty(int events_fd)
{
	char buf[SIPC__CG_FILE_CAP];
	uint64_t populated;
	ssize_t n;
	int rc;

	while ((n = pread(events_fd, buf, sizeof(buf) - 1, 0)) < 0 &&
	    errno == EINTR)
		;
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	if ((rc = find_key(buf, "populated", &populated)) < 0)
		return rc;
	return populated == 0;
}

/*
 * scratch.c - scratch directories; see os/os.h.
 *
 * The removal walks with openat(O_NOFOLLOW | O_DIRECTORY) from the
 * parent's descriptor: a worker that replaced a directory by a link to
 * a host directory has the link removed, not the host's files.
 */
#include <dirent.h>
#include <inttypes.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "os/os.h"

#define DEPTH_MAX 64

void
sipc__scratch_name(char *buf, size_t len, unsigned slot, unsigned gen,
                   uint64_t id)
{
	if (id == 0)
		snprintf(buf, len, "w%u.%u", slot, gen);
	else
		snprintf(buf, len, "w%u.%u/%" PRIu64, slot, gen, id);
}

int
sipc__scratch_make(const char *root, char *ret_path, size_t len, int *ret_fd)
{
	int fd;

	if (root == NULL || root[0] != '/')
		return -EINVAL;
	if ((size_t)snprintf(ret_path, len, "%s/sipc-XXXXXX", root) >= len)
		return -ENAMETOOLONG;
	if (mkdtemp(ret_path) == NULL)
		return -errno;
	if ((fd = open(ret_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) < 0) {
		int e = -errno;

		(void)rmdir(ret_path);
		return e;
	}
	*ret_fd = fd;
	return 0;
}

int
sipc__scratch_mkdir(int dirfd, const char *name, int uid, int gid)
{
	if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (uid >= 0 && fchownat(dirfd, name, (uid_t)uid, (gid_t)gid,
	    AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	return 0;
}

int
sipc__scratch_share(int fd, int gid)
{
	if (fchown(fd, (uid_t)-1, (gid_t)gid) < 0 || fchmod(fd, 0710) < 0)
		return -errno;
	return 0;
}

static int
remove_in(int dirfd, const char *name, int depth)
{
	struct dirent *de;
	DIR *d;
	int fd, rc = 0, r;

	if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	if (depth >= DEPTH_MAX)
		return -ELOOP;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if ((d = fdopendir(fd)) == NULL) {
		r = -errno;
		close(fd);
		return r;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if ((r = remove_in(fd, de->d_name, depth + 1)) < 0 && rc == 0)
			rc = r;
	}
	closedir(d);
	if (unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT &&
	    rc == 0)
		rc = -errno;
	return rc;
}

int
sipc__scratch_remove(int dirfd, const char *name)
{
	return remove_in(dirfd, name, 0);
}

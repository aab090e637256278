/*
 * jdir.c - the state directory around the journal (jdir.h): creating it
 * durably, the instance lock, and the copies of a corrupt journal kept
 * for an operator.  Runs at journal open and close only, on the thread
 * that opens or closes; no library state, no locks.
 */
#include "jdir.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bsd/libutil.h>

#include "sipc.h"

#define LOCK_NAME "sipc.pid"
#define HOLDER_TRIES 20           /* x 5 ms: the holder writes its pid */
#define COPY_TRIES 1000

int
sipc__jdir_write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int
fsync_path(const char *path)
{
	int fd, r = 0;

	if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	if (fsync(fd) < 0)
		r = -errno;
	close(fd);
	return r;
}

/* A directory made by mkdir() exists after a power loss only once its
 * parent's entry for it is on disk. */
static int
sync_parent(const char *dir)
{
	char *copy = strdup(dir);
	int r;

	if (copy == NULL)
		return -ENOMEM;
	r = fsync_path(dirname(copy));
	free(copy);
	return r;
}

int
sipc__jdir_open(const char *dir, int *ret_dirfd, char *errbuf, size_t errlen)
{
	int fd, r;

	if (mkdir(dir, 0700) == 0) {
		if ((r = sync_parent(dir)) < 0) {
			/* Undone, so that a retry creates and syncs again. */
			(void)rmdir(dir);
			snprintf(errbuf, errlen, "cannot sync the parent of new "
			    "state directory %s: %s", dir, strerror(-r));
			return r;
		}
	} else if (errno != EEXIST) {
		r = -errno;
		snprintf(errbuf, errlen, "cannot create state directory %s: %s",
		    dir, strerror(-r));
		return r;
	}
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		r = -errno;
		snprintf(errbuf, errlen, "cannot open state directory %s: %s",
		    dir, strerror(-r));
		return r;
	}
	*ret_dirfd = fd;
	return 0;
}

/* The pid the holder wrote, or -1.  It may still be writing it: the file
 * is locked before the pid is written. */
static pid_t
read_holder(const char *path)
{
	struct timespec pause = { 0, 5 * 1000 * 1000 };

	for (int i = 0; i < HOLDER_TRIES; i++) {
		char buf[24];
		ssize_t n;
		long v;
		char *end;
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			return -1;
		n = pread(fd, buf, sizeof(buf) - 1, 0);
		close(fd);
		if (n > 0) {
			buf[n] = '\0';
			v = strtol(buf, &end, 10);
			if (v > 0 && (*end == '\n' || *end == '\0'))
				return (pid_t)v;
		}
		nanosleep(&pause, NULL);
	}
	return -1;
}

/*
 * flopen() opens, flocks and checks that the path still names the file
 * it locked (a holder that was removing it cannot hand over a dead
 * lock).  O_CLOEXEC is part of the open itself: a fork+exec in another
 * host thread between an open and a later F_SETFD would carry the lock
 * into a process that outlives us.
 */
int
sipc__jdir_lock(const char *dir, int *ret_fd, char *errbuf, size_t errlen)
{
	char path[4096], pid[24];
	pid_t holder;
	int fd, r, e;
	size_t n;

	if ((size_t)snprintf(path, sizeof(path), "%s/" LOCK_NAME, dir) >=
	    sizeof(path))
		return -ENAMETOOLONG;
	fd = flopen(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0600);
	if (fd < 0) {
		e = errno;
		if (e != EWOULDBLOCK) {
			snprintf(errbuf, errlen, "cannot open %s: %s", path,
			    strerror(e));
			return -e;
		}
		if ((holder = read_holder(path)) > 0)
			snprintf(errbuf, errlen, "state directory %s is locked "
			    "by another instance, pid %d", dir, (int)holder);
		else
			snprintf(errbuf, errlen, "state directory %s is locked "
			    "by another instance (pid unknown)", dir);
		return SIPC_E_LOCKED;
	}
	n = (size_t)snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	r = ftruncate(fd, 0) < 0 ? -errno : sipc__jdir_write_all(fd, pid, n);
	if (r < 0) {
		snprintf(errbuf, errlen, "cannot write %s: %s", path,
		    strerror(-r));
		sipc__jdir_unlock(-1, dir, fd);
		return r;
	}
	*ret_fd = fd;
	return 0;
}

/* Remove the name first, then drop the lock: a newcomer either fails to
 * lock the old file or finds it gone and retries on a new one. */
void
sipc__jdir_unlock(int dirfd, const char *dir, int fd)
{
	char path[4096];

	if (fd < 0)
		return;
	if (dirfd >= 0)
		(void)unlinkat(dirfd, LOCK_NAME, 0);
	else if ((size_t)snprintf(path, sizeof(path), "%s/" LOCK_NAME, dir) <
	    sizeof(path))
		(void)unlink(path);
	close(fd);
}

/*
 * Keep `buf` as journal.corrupt.<epoch ms>, a name no earlier copy has
 * (O_EXCL; the number is bumped past an existing one), synced and with
 * its directory entry synced, before the caller cuts the journal.
 */
int
sipc__jdir_save_corrupt(int dirfd, const uint8_t *buf, size_t len,
    char *ret_name, size_t namelen)
{
	struct timespec ts;
	long long ms;
	int fd = -1, r;

	clock_gettime(CLOCK_REALTIME, &ts);
	ms = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	for (int i = 0; i < COPY_TRIES && fd < 0; i++) {
		snprintf(ret_name, namelen, "journal.corrupt.%lld", ms + i);
		fd = openat(dirfd, ret_name,
		    O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST)
			return -errno;
	}
	if (fd < 0)
		return -EEXIST;
	r = sipc__jdir_write_all(fd, buf, len);
	if (r == 0 && fsync(fd) < 0)
		r = -errno;
	close(fd);
	if (r == 0 && fsync(dirfd) < 0)
		r = -errno;
	if (r < 0)
		(void)unlinkat(dirfd, ret_name, 0);
	return r;
}

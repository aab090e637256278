/*
 * journal/dir.c - the state directory around the journal (journal/journal.h): creating it
 * durably, the instance lock, and the copies of a corrupt journal kept
 * for an operator.  Runs at journal open and close only, on the thread
 * that opens or closes.  Its one piece of state is the process-wide list
 * of state directories this process has locked, under `held_mu`.
 */
#include "journal/journal.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bsd/sys/queue.h>

#include "base/base.h"
#include "sipc.h"

#define LOCK_NAME "sipc.pid"
#define HOLDER_TRIES 20           /* x 5 ms: the holder writes its pid */
#define COPY_TRIES 1000

const struct sipc__jio_hook *sipc__jio_hook;

int
sipc__jdir_sync(int fd, bool data_only)
{
	const struct sipc__jio_hook *h = sipc__jio_hook;

	if (h != NULL && h->syncing != NULL)
		h->syncing(fd, data_only);
	if ((data_only ? fdatasync(fd) : fsync(fd)) < 0)
		return -errno;
	return 0;
}

int
sipc__jdir_write_all(int fd, const void *buf, size_t len)
{
	const struct sipc__jio_hook *h = sipc__jio_hook;
	const uint8_t *p = buf;
	size_t all = len;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	if (h != NULL && h->wrote != NULL)
		h->wrote(fd, buf, all);
	return 0;
}

static int
fsync_path(const char *path)
{
	int fd, r = 0;

	if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	r = sipc__jdir_sync(fd, false);
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
 * The instance lock is a POSIX record lock (fcntl F_SETLK) on the whole
 * of sipc.pid.  Such a lock belongs to the process: a child never
 * inherits it, and it is gone the moment the holder's process is, even
 * while a child it forked still has the descriptor (a worker caught
 * between clone and execve when its supervisor is killed).  A flock()
 * or open-file-description lock would live on in that child, and the
 * next instance would find the directory locked by a dead process.
 *
 * Two consequences are handled here.  Record locks never conflict inside
 * one process, so the directories locked in this process are kept in
 * `held` and a second instance on one of them is refused before the
 * file is touched.  And closing ANY descriptor of the file drops the
 * process's lock, so the file is never opened while this process holds
 * it: the check of `held` comes first, under `held_mu`.  A child forked
 * after a lock was taken inherits the list but not the lock: entries of
 * another pid are dropped, and the child finds the parent as the holder
 * like any other process would.
 */
struct held_dir {
	LIST_ENTRY(held_dir) link;
	dev_t dev;
	ino_t ino;
	pid_t pid;                /* the process holding it */
	int fd;
};

static pthread_mutex_t held_mu = PTHREAD_MUTEX_INITIALIZER;
static LIST_HEAD(, held_dir) held = LIST_HEAD_INITIALIZER(held);

/* The entry of a directory this process holds, or NULL.  held_mu. */
static struct held_dir *
held_find(dev_t dev, ino_t ino)
{
	struct held_dir *h, *next;
	pid_t me = getpid();

	for (h = LIST_FIRST(&held); h != NULL; h = next) {
		next = LIST_NEXT(h, link);
		if (h->pid != me) {
			LIST_REMOVE(h, link);
			free(h);
		} else if (h->dev == dev && h->ino == ino) {
			return h;
		}
	}
	return NULL;
}

/* The pid of a process holding a conflicting lock on fd's file, or -1. */
static pid_t
lock_holder(int fd)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

	if (fcntl(fd, F_GETLK, &fl) < 0 || fl.l_type == F_UNLCK)
		return -1;
	return fl.l_pid;
}

/* Open and lock sipc.pid at `path`: 0 with the descriptor in *ret_fd,
 * SIPC_E_LOCKED, or -errno.  O_CLOEXEC is part of the open: no
 * descriptor of the state directory crosses an exec. */
static int
lock_file(const char *dir, const char *path, int *ret_fd, char *errbuf,
    size_t errlen)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
	struct stat fs, ps;
	pid_t holder;
	int fd, e;

	for (;;) {
		fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
		    0600);
		if (fd < 0) {
			e = errno;
			snprintf(errbuf, errlen, "cannot open %s: %s", path,
			    strerror(e));
			return -e;
		}
		if (fcntl(fd, F_SETLK, &fl) < 0) {
			e = errno;
			if (e != EAGAIN && e != EACCES) {
				close(fd);
				snprintf(errbuf, errlen, "cannot lock %s: %s",
				    path, strerror(e));
				return -e;
			}
			if ((holder = lock_holder(fd)) <= 0)
				holder = read_holder(path);
			close(fd);
			if (holder > 0)
				snprintf(errbuf, errlen, "state directory %s "
				    "is locked by another instance, pid %d",
				    dir, (int)holder);
			else
				snprintf(errbuf, errlen, "state directory %s "
				    "is locked by another instance (pid "
				    "unknown)", dir);
			return SIPC_E_LOCKED;
		}
		/* A holder that was leaving removed the name before it let
		 * go: a lock on the removed file guards nothing, so try
		 * again on the file the path names now. */
		if (fstat(fd, &fs) == 0 && stat(path, &ps) == 0 &&
		    fs.st_dev == ps.st_dev && fs.st_ino == ps.st_ino) {
			*ret_fd = fd;
			return 0;
		}
		close(fd);
	}
}

int
sipc__jdir_lock(const char *dir, int *ret_fd, char *errbuf, size_t errlen)
{
	char path[4096], pid[24];
	struct held_dir *h;
	struct stat ds;
	int fd = -1, r;
	size_t n;

	if ((size_t)snprintf(path, sizeof(path), "%s/" LOCK_NAME, dir) >=
	    sizeof(path))
		return -ENAMETOOLONG;
	if (stat(dir, &ds) < 0) {
		r = -errno;
		snprintf(errbuf, errlen, "cannot stat %s: %s", dir,
		    strerror(-r));
		return r;
	}
	if ((h = calloc(1, sizeof(*h))) == NULL)
		return -ENOMEM;
	pthread_mutex_lock(&held_mu);
	if (held_find(ds.st_dev, ds.st_ino) != NULL) {
		pthread_mutex_unlock(&held_mu);
		free(h);
		snprintf(errbuf, errlen, "state directory %s is locked by "
		    "another instance in this process, pid %d", dir,
		    (int)getpid());
		return SIPC_E_LOCKED;
	}
	if ((r = lock_file(dir, path, &fd, errbuf, errlen)) < 0) {
		pthread_mutex_unlock(&held_mu);
		free(h);
		return r;
	}
	h->dev = ds.st_dev;
	h->ino = ds.st_ino;
	h->pid = getpid();
	h->fd = fd;
	LIST_INSERT_HEAD(&held, h, link);
	pthread_mutex_unlock(&held_mu);
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
 * lock the old file or finds it gone and retries on a new one.  The
 * directory leaves `held` only once the lock is gone. */
void
sipc__jdir_unlock(int dirfd, const char *dir, int fd)
{
	char path[4096];
	struct held_dir *h;

	if (fd < 0)
		return;
	if (dirfd >= 0)
		(void)unlinkat(dirfd, LOCK_NAME, 0);
	else if ((size_t)snprintf(path, sizeof(path), "%s/" LOCK_NAME, dir) <
	    sizeof(path))
		(void)unlink(path);
	pthread_mutex_lock(&held_mu);
	close(fd);
	LIST_FOREACH(h, &held, link)
		if (h->fd == fd && h->pid == getpid())
			break;
	if (h != NULL) {
		LIST_REMOVE(h, link);
		free(h);
	}
	pthread_mutex_unlock(&held_mu);
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
	long long ms = (long long)sipc__wall_ms();
	int fd = -1, r;

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
	if (r == 0)
		r = sipc__jdir_sync(fd, false);
	close(fd);
	if (r == 0)
		r = sipc__jdir_sync(dirfd, false);
	if (r < 0)
		(void)unlinkat(dirfd, ret_name, 0);
	return r;
}

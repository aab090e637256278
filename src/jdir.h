/*
 * jdir.h - the state directory around the journal file: created durably,
 * locked for one instance, and the place where copies of a corrupt
 * journal are kept.  Open and close time only; no locks, any thread.
 */
#ifndef SIPC_JDIR_H
#define SIPC_JDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Create `dir` (0700) if missing, syncing its parent when it was
 * created, and open it (O_DIRECTORY, close-on-exec) in *ret_dirfd.
 * Returns 0 or -errno, with a reason in errbuf. */
int sipc__jdir_open(const char *dir, int *ret_dirfd, char *errbuf,
    size_t errlen);

/* Take the instance lock `dir`/sipc.pid (opened close-on-exec, a POSIX
 * record lock owned by this process, holder pid written).  SIPC_E_LOCKED
 * names the holder in errbuf, this process included. */
int sipc__jdir_lock(const char *dir, int *ret_fd, char *errbuf,
    size_t errlen);

/* Remove sipc.pid (through dirfd when >= 0, else by `dir`), then close
 * the lock descriptor `fd`.  Accepts fd < 0. */
void sipc__jdir_unlock(int dirfd, const char *dir, int fd);

/* Save `buf` as a new journal.corrupt.<epoch ms> in the directory (a
 * name no earlier copy has), synced; its name in ret_name.  0 or
 * -errno. */
int sipc__jdir_save_corrupt(int dirfd, const uint8_t *buf, size_t len,
    char *ret_name, size_t namelen);

/* write() all of buf, retrying on EINTR and short writes.  0 or -errno.
 * Every write of the journal and its directory goes through it. */
int sipc__jdir_write_all(int fd, const void *buf, size_t len);

/* fdatasync() (data_only) or fsync() fd: 0 or -errno.  Every sync of the
 * journal, its copies and its directory goes through it. */
int sipc__jdir_sync(int fd, bool data_only);

/*
 * Tests only (a power-cut harness): when set, `wrote` is called after
 * sipc__jdir_write_all() wrote all of buf to fd, and `syncing` right
 * before sipc__jdir_sync() syncs fd (what fd holds then is what the sync
 * makes durable), on the thread that writes or syncs, with whatever
 * journal lock it holds (a hook must not call the library).  NULL in
 * the library's own use, where it costs one load and a branch.  Set it
 * while no journal is open.
 */
struct sipc__jio_hook {
	void (*wrote)(int fd, const void *buf, size_t len);
	void (*syncing)(int fd, bool data_only);
};
extern const struct sipc__jio_hook *sipc__jio_hook;

#endif

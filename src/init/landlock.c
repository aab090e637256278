/*
 * landlock.c - the filesystem rules sipc-init installs in the worker's
 * own process (Landlock), after fork and before the system-call filter
 * and execve of the worker program.
 *
 * The rules say what the view already shows, and no more: the read-only
 * paths (every file and directory the sandbox binds read-only, /proc and
 * /dev) may be read and executed, the writable ones (the worker's
 * scratch directory, /tmp, /dev/shm and the harmless devices) also
 * written.  Everything else is refused by the kernel, however the mount
 * view would allow it: bubblewrap's own root (a tmpfs the worker's uid
 * owns, where /etc lives) is writable without them.
 *
 * Every access right this kernel's ABI knows is handled (raw system
 * calls; <linux/landlock.h> only), so nothing is left allowed by being
 * unnamed.  Any failure is returned, never skipped: the caller refuses
 * to start the worker (fail closed).
 *
 * Runs in sipc-init's child only (single-threaded).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "init_filter.h"

/* Rights of each ABI version (landlock.h): 1 has bits 0-12, 2 adds
 * REFER, 3 TRUNCATE, 5 IOCTL_DEV. */
#define LL_FS_V1 ((1ULL << 13) - 1)
#define LL_REFER (1ULL << 13)
#define LL_TRUNCATE (1ULL << 14)
#define LL_IOCTL_DEV (1ULL << 15)
#define LL_READ (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR | \
	LANDLOCK_ACCESS_FS_EXECUTE)
/* The rights a rule on a file (not a directory) may carry. */
#define LL_FILE (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | \
	LANDLOCK_ACCESS_FS_READ_FILE | LL_TRUNCATE | LL_IOCTL_DEV)

static uint64_t
handled_for(long abi)
{
	uint64_t h = LL_FS_V1;

	if (abi >= 2)
		h |= LL_REFER;
	if (abi >= 3)
		h |= LL_TRUNCATE;
	if (abi >= 5)
		h |= LL_IOCTL_DEV;
	return h;
}

/* One rule for path (len bytes of it): `allow` beneath a directory,
 * its file rights on anything else.  A writable path that is not there
 * (a device bubblewrap did not make) is skipped: nothing can be reached
 * through it; a read-only one must be there. */
static int
add_rule(int rs, const char *path, size_t len, uint64_t allow, int optional)
{
	struct landlock_path_beneath_attr pb;
	char p[4096];
	struct stat st;
	int fd, rc = 0;

	if (len == 0)
		return 0;
	if (len >= sizeof(p))
		return -ENAMETOOLONG;
	memcpy(p, path, len);
	p[len] = '\0';
	if ((fd = open(p, O_PATH | O_CLOEXEC)) < 0)
		return optional && errno == ENOENT ? 0 : -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto out;
	}
	pb.parent_fd = fd;
	pb.allowed_access = S_ISDIR(st.st_mode) ? allow : allow & LL_FILE;
	if (syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb,
	    0) < 0)
		rc = -errno;
out:
	close(fd);
	return rc;
}

/* Each '\n'-separated path of list. */
static int
add_list(int rs, const char *list, uint64_t allow, int optional)
{
	const char *p = list, *nl;
	int rc;

	while (p != NULL && *p != '\0') {
		nl = strchr(p, '\n');
		if ((rc = add_rule(rs, p, nl ? (size_t)(nl - p) : strlen(p),
		    allow, optional)) < 0)
			return rc;
		p = nl != NULL ? nl + 1 : NULL;
	}
	return 0;
}

int
sipc__init_landlock(const char *ro, const char *rw)
{
	struct landlock_ruleset_attr ra = { 0 };
	long abi;
	int rs, rc;

	abi = syscall(SYS_landlock_create_ruleset, NULL, 0,
	    LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < 1)
		return abi < 0 ? -errno : -EOPNOTSUPP;
	ra.handled_access_fs = handled_for(abi);
	if ((rs = (int)syscall(SYS_landlock_create_ruleset, &ra, sizeof(ra),
	    0)) < 0)
		return -errno;
	if ((rc = add_list(rs, ro, LL_READ, 0)) < 0 ||
	    (rc = add_list(rs, rw, ra.handled_access_fs, 1)) < 0)
		goto out;
	/* Landlock needs no_new_privs (or CAP_SYS_ADMIN): set it here too,
	 * so the rules never depend on the caller's order. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    syscall(SYS_landlock_restrict_self, rs, 0) < 0)
		rc = -errno;
out:
	close(rs);
	return rc;
}

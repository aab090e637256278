/*
 * jdir_test.c - the state directory around the journal, observed at the
 * system call level in a real process: the instance lock is opened
 * close-on-exec by the open itself, a new directory's parent is synced
 * (and a failed sync fails the open), and every corrupt journal found is
 * kept as its own copy.  The calls are seen (and failed) by seccomp in a
 * broker process (tests/lib/sysfault.h), not by replacing any code.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "journal/journal.h"
#include "jtest.h"
#include "sysfault.h"
#include "testlib.h"

/* Body run under a broker: open the journal in `jt_dir`; 0 when it opened,
 * 10 + errno when it failed. */
static int
open_body(void *arg)
{
	struct sipc__journal *j = NULL;
	int r = sipc__journal_open(jt_dir, SIPC_DURABLE_OFF, 0, &j, NULL, 0);

	if (r < 0)
		return 10 + (-r & 0x7f);
	sipc__journal_close(j);
	return 0;
}

/* ------------------------------------------------------------ lock */

struct lock_seen {
	int locks;                /* fcntl(F_SETLK) calls on sipc.pid */
	int without_cloexec;      /* ... on a descriptor that lacked it */
};

static int
judge_setlk(pid_t pid, const uint64_t args[6], void *arg)
{
	struct lock_seen *ls = arg;
	char path[PATH_MAX];
	size_t n;
	long fl;

	if (args[1] != F_SETLK ||
	    sf_fd_path(pid, args[0], path, sizeof(path)) < 0)
		return 0;
	n = strlen(path);
	if (n < 9 || strcmp(path + n - 9, "/sipc.pid") != 0)
		return 0;
	ls->locks++;
	fl = sf_fd_flags(pid, args[0]);
	if (fl < 0 || !(fl & O_CLOEXEC))
		ls->without_cloexec++;
	return 0;
}

/* The lock is a record lock taken with fcntl(F_SETLK), which no child
 * inherits (reconcile_test.c:test_reconcile_lock_not_kept_by_holders_child
 * shows what that buys), on a descriptor that is close-on-exec from its
 * open on: at the moment it is locked it is already close-on-exec, so no
 * descriptor of the state directory crosses an exec in another host
 * thread. */
/* rules: J4 SC5 */
static void
test_jdir_lock_opened_cloexec(void)
{
	struct lock_seen ls = { 0, 0 };

	if (!sf_supported()) {
		tl_skip("seccomp user notification is not available here");
		return;
	}
	jt_mkstate();
	CU_ASSERT_EQUAL(sf_broker(__NR_fcntl, judge_setlk, &ls, sizeof(ls),
	    open_body, NULL), 0);
	CU_ASSERT(ls.locks >= 1);
	CU_ASSERT_EQUAL(ls.without_cloexec, 0);
	jt_rmstate();
}

/* ------------------------------------------------------ parent sync */

struct parent_seen {
	int fail;                 /* errno to fail the parent's fsync with */
	int syncs;                /* fsync() calls on the parent */
};

static int
judge_fsync(pid_t pid, const uint64_t args[6], void *arg)
{
	struct parent_seen *ps = arg;
	char path[PATH_MAX];

	if (sf_fd_path(pid, args[0], path, sizeof(path)) < 0 ||
	    strcmp(path, jt_base) != 0)
		return 0;
	ps->syncs++;
	return ps->fail ? -ps->fail : 0;
}

/* rules: J4 J8 */
static void
test_jdir_new_dir_parent_synced(void)
{
	struct parent_seen ps = { 0, 0 };
	struct stat sb;

	if (!sf_supported()) {
		tl_skip("seccomp user notification is not available here");
		return;
	}
	jt_mkstate();
	/* A new state directory: its entry in the parent is synced. */
	CU_ASSERT_EQUAL(sf_broker(__NR_fsync, judge_fsync, &ps, sizeof(ps),
	    open_body, NULL), 0);
	CU_ASSERT_EQUAL(ps.syncs, 1);
	/* An existing one: nothing new in the parent to sync. */
	ps.syncs = 0;
	CU_ASSERT_EQUAL(sf_broker(__NR_fsync, judge_fsync, &ps, sizeof(ps),
	    open_body, NULL), 0);
	CU_ASSERT_EQUAL(ps.syncs, 0);
	jt_rmstate();

	/* The parent's sync fails: so does the open, and the directory is
	 * not left behind half-durable (a retry creates and syncs again). */
	jt_mkstate();
	ps = (struct parent_seen){ EIO, 0 };
	CU_ASSERT_EQUAL(sf_broker(__NR_fsync, judge_fsync, &ps, sizeof(ps),
	    open_body, NULL), 10 + EIO);
	CU_ASSERT_EQUAL(ps.syncs, 1);
	CU_ASSERT(stat(jt_dir, &sb) < 0 && errno == ENOENT);
	jt_rmstate();
}

/* ------------------------------------------------- corrupt copies */

/* Whole content of a file in the state directory (malloc'd). */
static uint8_t *
slurp(const char *name, size_t *len)
{
	char p[PATH_MAX + 64];
	struct stat sb;
	uint8_t *b;
	int fd;

	snprintf(p, sizeof(p), "%s/%s", jt_dir, name);
	if ((fd = open(p, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &sb) < 0)
		return NULL;
	b = malloc((size_t)sb.st_size + 1);
	*len = (size_t)sb.st_size;
	if (b != NULL && pread(fd, b, *len, 0) != (ssize_t)*len) {
		free(b);
		b = NULL;
	}
	close(fd);
	return b;
}

/* Write some requests, close, damage the first record (its INSTANCE
 * payload: more bytes follow, so it is corruption, not a torn tail) and
 * return the damaged file as found. */
static uint8_t *
damaged_journal(uint64_t first_id, size_t *len)
{
	struct sipc__journal *j = NULL;
	char p[PATH_MAX + 64];
	uint8_t *img, byte = 0;
	int fd;

	CU_ASSERT_FATAL(sipc__journal_open(jt_dir, SIPC_DURABLE_OFF, 0, &j, NULL,
	    0) == 0);
	for (uint64_t id = first_id; id < first_id + 3; id++)
		CU_ASSERT(sipc__journal_accepted(j, id, "k", "p", 1, 0) == 0);
	sipc__journal_close(j);
	snprintf(p, sizeof(p), "%s/journal", jt_dir);
	CU_ASSERT_FATAL((fd = open(p, O_RDWR | O_CLOEXEC)) >= 0);
	/* Flip the byte: it lies in the random instance id, so writing a
	 * fixed value left it unchanged once in 256 runs. */
	CU_ASSERT(pread(fd, &byte, 1, 12) == 1);
	byte ^= 0xff;
	CU_ASSERT(pwrite(fd, &byte, 1, 12) == 1);
	close(fd);
	img = slurp("journal", len);
	CU_ASSERT_PTR_NOT_NULL_FATAL(img);
	return img;
}

/* Open over a damaged journal; the name of the copy it kept. */
static void
open_damaged(char *copy, size_t len)
{
	struct sipc__journal *j = NULL;
	struct sipc__journal_stats st;

	CU_ASSERT_FATAL(sipc__journal_open(jt_dir, SIPC_DURABLE_OFF, 0, &j, NULL,
	    0) == 0);
	sipc__journal_get_stats(j, &st);
	CU_ASSERT_EQUAL(st.corrupt, 1);
	CU_ASSERT(strncmp(st.corrupt_copy, "journal.corrupt.", 16) == 0);
	snprintf(copy, len, "%s", st.corrupt_copy);
	sipc__journal_close(j);
}

static int
count_copies(void)
{
	struct dirent *e;
	int n = 0;
	DIR *d = opendir(jt_dir);

	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	while ((e = readdir(d)) != NULL)
		n += strncmp(e->d_name, "journal.corrupt", 15) == 0;
	closedir(d);
	return n;
}

/* Every corrupt journal found is kept: a second corruption found by a
 * later open gets a copy of its own and leaves the first one as it
 * was. */
/* rules: J3 */
static void
test_jdir_corrupt_copies_kept(void)
{
	char c1[64], c2[64];
	uint8_t *a, *b, *ka, *kb;
	size_t la, lb, lka = 0, lkb = 0;

	jt_mkstate();
	a = damaged_journal(1, &la);
	open_damaged(c1, sizeof(c1));
	b = damaged_journal(10, &lb);
	open_damaged(c2, sizeof(c2));
	CU_ASSERT(strcmp(c1, c2) != 0);
	CU_ASSERT_EQUAL(count_copies(), 2);
	ka = slurp(c1, &lka);
	kb = slurp(c2, &lkb);
	CU_ASSERT(ka != NULL && lka == la && memcmp(ka, a, la) == 0);
	CU_ASSERT(kb != NULL && lkb == lb && memcmp(kb, b, lb) == 0);
	free(a);
	free(b);
	free(ka);
	free(kb);
	jt_rmstate();
}

int
main(void)
{
	tl_suite("jdir", (tl_test[]){
	    { "test_jdir_lock_opened_cloexec", test_jdir_lock_opened_cloexec },
	    { "test_jdir_new_dir_parent_synced", test_jdir_new_dir_parent_synced },
	    { "test_jdir_corrupt_copies_kept", test_jdir_corrupt_copies_kept },
	    { NULL, NULL } });
	return tl_run();
}

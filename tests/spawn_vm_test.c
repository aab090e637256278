/*
 * spawn_vm_test.c - a spawn does not copy the supervisor's memory.
 *
 * A fork-style clone gives the child a copy of the parent's page tables
 * and write-protects every private page of the parent, so each page the
 * supervisor writes afterwards costs it a fault, even once the child has
 * exec'd.  The CLONE_VM | CLONE_VFORK spawn (os/clone.c) shares the
 * address space until the child's execve(): the parent's pages stay as
 * they were.  Measured here as the minor faults of rewriting a 32 MiB
 * buffer after a spawn: one a page before (8192), a handful now.
 *
 * The same holds in cgroup mode: the child moves itself into its
 * leaf cgroup before exec (it cannot be cloned into it without clone3),
 * and a move that fails fails the start, with no process left.
 *
 * Also: an exec failure is still reported with its errno through the
 * shared-memory path, and the child is still born with its pidfd.
 *
 * Threads: the CUnit thread only.  Sanitizer builds keep the clone3 path
 * (see clone.c) and skip the fault count.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sipc.h"
#include "os/os.h"
#include "testlib.h"


#define BUF_LEN ((size_t)32 << 20)

static char *const true_argv[] = { "true", NULL };
static char *const sleep_argv[] = { "sleep", "60", NULL };
static char *const no_env[] = { NULL };

/* Spawn `path` (argv: true_argv, or sleep_argv when ret_pidfd is given)
 * with /dev/null as its stdin, in the cgroup of directory cgfd unless it
 * is -1.  With ret_pidfd the child is left running (*ret_pid,
 * *ret_pidfd); without, it is reaped.  0, or what sipc__spawn()
 * returned (*ret_errno for SIPC_E_EXEC). */
static int
spawn_in(const char *path, int cgfd, int *ret_errno, pid_t *ret_pid,
         int *ret_pidfd)
{
	struct sipc__spawn sp = { .path = path, .envp = no_env,
	    .argv = ret_pidfd != NULL ? sleep_argv : true_argv,
	    .fds = { -1, -1, -1, -1, -1 }, .cgroup_fd = cgfd,
	    .flags = cgfd >= 0 ? SIPC__SPAWN_CGROUP : 0 };
	pid_t pid;
	int pidfd, rc;

	sp.fds[0] = sipc__fd_high(open("/dev/null", O_RDONLY | O_CLOEXEC));
	CU_ASSERT_FATAL(sp.fds[0] >= 0);
	rc = sipc__spawn(&sp, &pid, &pidfd, ret_errno);
	close(sp.fds[0]);
	if (rc == 0) {
		CU_ASSERT(pid > 0 && pidfd >= 0);
		if (ret_pidfd != NULL) {
			*ret_pid = pid;
			*ret_pidfd = pidfd;
			return 0;
		}
		CU_ASSERT_EQUAL(sipc__pidfd_reap(pidfd), 0);
		close(pidfd);
	}
	return rc;
}

static int
spawn_and_reap(const char *path, int *ret_errno)
{
	return spawn_in(path, -1, ret_errno, NULL, NULL);
}

static long
minor_faults(void)
{
	struct rusage ru;

	/* This thread's own: the count is of the pages its memset()
	 * write-protected by a copy, one fault each, whatever other
	 * threads or the machine's load do. */
	getrusage(RUSAGE_THREAD, &ru);
	return ru.ru_minflt;
}

/* Faults of rewriting BUF_LEN after spawn() (which must return 0). */
static void
pages_not_copied(int (*spawn)(void *), void *arg)
{
	long before, after;
	char *buf;

	buf = mmap(NULL, BUF_LEN, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(buf != MAP_FAILED);
	/* One fault per 4 KiB page whatever the machine's THP setting. */
	(void)madvise(buf, BUF_LEN, MADV_NOHUGEPAGE);
	memset(buf, 1, BUF_LEN);
	CU_ASSERT_FATAL(spawn(arg) == 0);
	before = minor_faults();
	memset(buf, 2, BUF_LEN);
	after = minor_faults();
	/* Write-protected by a copy: BUF_LEN / 4096 = 8192 faults. */
	CU_ASSERT(after - before < (long)(BUF_LEN / 4096 / 8));
	if (after - before >= (long)(BUF_LEN / 4096 / 8))
		fprintf(stderr, "rewriting 32 MiB after a spawn: %ld faults\n",
		    after - before);
	munmap(buf, BUF_LEN);
}

static int
spawn_true(void *arg)
{
	int err = 0;

	(void)arg;
	return spawn_and_reap("/bin/true", &err);
}

static void
test_spawn_vm_parent_pages_not_copied(void)
{
	if (TL_SANITIZED) {
		tl_skip("sanitizer build: the clone3 path is kept");
		return;
	}
	pages_not_copied(spawn_true, NULL);
}

/* A worker generation's cgroup under a supervisor cgroup of our own, and
 * a child spawned into it. */
struct leaf {
	struct sipc__cg *cg;
	struct sipc__cgw *w;
	pid_t pid;
	int pidfd;
	bool removed;                 /* the leaf was rmdir'd by the test */
};

/* Make the leaf; false (test skipped) where no cgroup can be made. */
static bool
leaf_open(struct leaf *lf, uint32_t gen)
{
	struct sipc__cg_limits none = { 0 };
	char why[256], msg[300];

	memset(lf, 0, sizeof(*lf));
	lf->pidfd = -1;
	CU_ASSERT_FATAL(sipc__cg_open(SIPC_CGROUP_AUTO, &none, &lf->cg, why,
	    sizeof(why)) == 0);
	if (lf->cg == NULL) {
		snprintf(msg, sizeof(msg), "no cgroup v2 here: %s", why);
		tl_skip(msg);
		return false;
	}
	CU_ASSERT_FATAL(sipc__cgw_create(lf->cg, 0, gen, &lf->w) == 0);
	return true;
}

static void
leaf_close(struct leaf *lf)
{
	int rc;

	if (lf->pidfd >= 0) {
		(void)pidfd_send_signal(lf->pidfd, SIGKILL, NULL, 0);
		CU_ASSERT_EQUAL(sipc__pidfd_reap(lf->pidfd), 0);
		close(lf->pidfd);
	}
	rc = sipc__cgw_remove(lf->w);
	CU_ASSERT(rc == 0 || (lf->removed && rc == -ENOENT));
	CU_ASSERT_EQUAL(sipc__cg_close(lf->cg), 0);
}

static int
spawn_sleep_in_leaf(void *arg)
{
	struct leaf *lf = arg;
	int err = 0;

	return spawn_in("/bin/sleep", sipc__cgw_fd(lf->w), &err, &lf->pid,
	    &lf->pidfd);
}

/*
 * In cgroup mode the child runs in its leaf (as /proc says) and the
 * spawn still copied no page table: the child moved itself into the
 * leaf instead of being cloned into it by clone3.
 */
static void
test_spawn_vm_cgroup_leaf_pages_not_copied(void)
{
	char want[512], got[512];
	struct leaf lf;
	size_t wl, gl;

	if (!leaf_open(&lf, 1))
		return;
	if (TL_SANITIZED) {
		CU_ASSERT_FATAL(spawn_sleep_in_leaf(&lf) == 0);
	} else {
		pages_not_copied(spawn_sleep_in_leaf, &lf);
	}
	snprintf(want, sizeof(want), "%s/w0.g1", sipc__cg_path(lf.cg));
	tl_proc_cgroup(lf.pid, got, sizeof(got));
	wl = strlen(want);
	gl = strlen(got);
	/* /proc names it from the cgroup2 root, want from /: a suffix */
	CU_ASSERT(gl > 0 && gl <= wl && strcmp(want + wl - gl, got) == 0);
	if (gl == 0 || gl > wl || strcmp(want + wl - gl, got) != 0)
		fprintf(stderr, "child in \"%s\", want \"%s\"\n", got, want);
	leaf_close(&lf);
}

/* No child of this process is left, not even a zombie. */
static bool
no_child_left(void)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	return waitid(P_ALL, 0, &si, WEXITED | WNOHANG | __WALL) < 0 &&
	    errno == ECHILD;
}

/*
 * A move that fails fails the start, with the errno of the failed write
 * and no process left: the child never runs outside its cgroup.  Here
 * the "cgroup.procs" the parent opens is /dev/full, so the child's
 * write() is refused (ENOSPC) as a kernel refusal would be.  (The
 * clone3 path of sanitizer builds fails earlier: not a cgroup.)
 */
static void
test_spawn_vm_cgroup_move_refused_fails_closed(void)
{
	char dir[] = "/tmp/sipc-cgprocs.XXXXXX", link[64];
	int dfd, err = 0, rc;

	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(link, sizeof(link), "%s/cgroup.procs", dir);
	CU_ASSERT_FATAL(symlink("/dev/full", link) == 0);
	dfd = sipc__fd_high(open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
	CU_ASSERT_FATAL(dfd >= 0);
	rc = spawn_in("/bin/true", dfd, &err, NULL, NULL);
	if (TL_SANITIZED) {
		CU_ASSERT(rc < 0 && rc != SIPC_E_EXEC);
	} else {
		CU_ASSERT_EQUAL(rc, -ENOSPC);
	}
	CU_ASSERT(no_child_left());
	close(dfd);
	unlink(link);
	rmdir(dir);
}

/* A leaf removed before the spawn: the start fails, nothing runs. */
static void
test_spawn_vm_cgroup_leaf_removed_fails_closed(void)
{
	char path[512];
	struct leaf lf;
	int rc;

	if (!leaf_open(&lf, 2))
		return;
	snprintf(path, sizeof(path), "%s/w0.g2", sipc__cg_path(lf.cg));
	CU_ASSERT_FATAL(rmdir(path) == 0);
	lf.removed = true;
	rc = spawn_sleep_in_leaf(&lf);
	CU_ASSERT(rc < 0 && rc != SIPC_E_EXEC);
	CU_ASSERT(lf.pidfd < 0);
	CU_ASSERT(no_child_left());
	leaf_close(&lf);
}

static void
test_spawn_vm_exec_error_reported(void)
{
	int err = 0;

	CU_ASSERT_EQUAL(spawn_and_reap("/nonexistent/sipc-worker", &err),
	    SIPC_E_EXEC);
	CU_ASSERT_EQUAL(err, ENOENT);
}

int
main(void)
{
	tl_suite("spawn_vm", (tl_test[]){
	    { "test_spawn_vm_parent_pages_not_copied",
	      test_spawn_vm_parent_pages_not_copied },
	    { "test_spawn_vm_cgroup_leaf_pages_not_copied",
	      test_spawn_vm_cgroup_leaf_pages_not_copied },
	    { "test_spawn_vm_cgroup_move_refused_fails_closed",
	      test_spawn_vm_cgroup_move_refused_fails_closed },
	    { "test_spawn_vm_cgroup_leaf_removed_fails_closed",
	      test_spawn_vm_cgroup_leaf_removed_fails_closed },
	    { "test_spawn_vm_exec_error_reported",
	      test_spawn_vm_exec_error_reported },
	    { NULL, NULL } });
	return tl_run();
}

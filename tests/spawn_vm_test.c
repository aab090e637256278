/*
 * spawn_vm_test.c - a spawn does not copy the supervisor's memory.
 *
 * A fork-style clone gives the child a copy of the parent's page tables
 * and write-protects every private page of the parent, so each page the
 * supervisor writes afterwards costs it a fault, even once the child has
 * exec'd.  The CLONE_VM | CLONE_VFORK spawn (unix/clone.c) shares the
 * address space until the child's execve(): the parent's pages stay as
 * they were.  Measured here as the minor faults of rewriting a 32 MiB
 * buffer after a spawn: one a page before (8192), a handful now.
 *
 * Also: an exec failure is still reported with its errno through the
 * shared-memory path, and the child is still born with its pidfd.
 *
 * Threads: the CUnit thread only.  Sanitizer builds keep the clone3 path
 * (see clone.c) and skip the fault count.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "sipc.h"
#include "unix/clone.h"
#include "testlib.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

#define BUF_LEN ((size_t)32 << 20)

static char *const true_argv[] = { "true", NULL };
static char *const no_env[] = { NULL };

/* Spawn `path` with /dev/null as its stdin and reap it: 0, or what
 * sipc__spawn() returned (*ret_errno for SIPC_E_EXEC). */
static int
spawn_and_reap(const char *path, int *ret_errno)
{
	struct sipc__spawn sp = { .path = path, .argv = true_argv,
	    .envp = no_env, .fds = { -1, -1, -1, -1, -1 } };
	pid_t pid;
	int pidfd, rc;

	sp.fds[0] = sipc__fd_high(open("/dev/null", O_RDONLY | O_CLOEXEC));
	CU_ASSERT_FATAL(sp.fds[0] >= 0);
	rc = sipc__spawn(&sp, &pid, &pidfd, ret_errno);
	close(sp.fds[0]);
	if (rc == 0) {
		CU_ASSERT(pid > 0 && pidfd >= 0);
		CU_ASSERT_EQUAL(sipc__pidfd_reap(pidfd), 0);
		close(pidfd);
	}
	return rc;
}

static long
minor_faults(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_minflt;
}

static void
test_spawn_vm_parent_pages_not_copied(void)
{
	long before, after;
	int err = 0;
	char *buf;

	if (SANITIZED) {
		tl_skip("sanitizer build: the clone3 path is kept");
		return;
	}
	buf = mmap(NULL, BUF_LEN, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(buf != MAP_FAILED);
	/* One fault per 4 KiB page whatever the machine's THP setting. */
	(void)madvise(buf, BUF_LEN, MADV_NOHUGEPAGE);
	memset(buf, 1, BUF_LEN);
	CU_ASSERT_FATAL(spawn_and_reap("/bin/true", &err) == 0);
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
	    { "test_spawn_vm_exec_error_reported",
	      test_spawn_vm_exec_error_reported },
	    { NULL, NULL } });
	return tl_run();
}

/*
 * filtered_exit_test.c - a worker program under a filter that kills
 * ptrace() still exits, in every build.
 *
 * The sandbox's filter (src/init/filter.c) kills a process that calls
 * ptrace.  In the sanitizer builds a leak check at exit stops threads
 * with a ptrace()ing helper; killed, it left the worker waiting forever
 * and a sandboxed test timed out (src/init/lsan_hook.c keeps it off
 * there).  The test installs a filter of the same action on ptrace
 * alone, then executes a fixture that exits at once, and expects its
 * status within the deadline.
 *
 * Threads: the CUnit thread and one forked child.
 */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"

#define DEADLINE_MS 20000

/* Kill the process on ptrace(); allow everything else.  The number is
 * checked without the architecture: the child executes only programs
 * of this build's own architecture. */
static int
filter_ptrace(void)
{
	struct sock_filter prog[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_ptrace, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog fp = {
		.len = sizeof(prog) / sizeof(prog[0]), .filter = prog,
	};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fp) < 0)
		return -errno;
	return 0;
}

/* Wait for `pid` up to `ms`; its wait status, or -1 on the deadline. */
static int
wait_status(pid_t pid, int ms)
{
	int64_t end = tl_now_ms() + ms;
	int st;

	while (tl_now_ms() < end) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return st;
		usleep(5000);
	}
	return -1;
}

static void
test_filtered_worker_exits(void)
{
	const char *fix = tl_fixture("dieatstart");
	pid_t pid;
	int st;

	CU_ASSERT_FATAL((pid = fork()) >= 0);
	if (pid == 0) {
		if (filter_ptrace() != 0)
			_exit(120);
		execl(fix, fix, (char *)NULL);
		_exit(121);
	}
	st = wait_status(pid, DEADLINE_MS);
	if (st == -1) {
		tl_kill_reap(pid);
		CU_FAIL("a filtered worker did not exit within the deadline");
		return;
	}
	CU_ASSERT_TRUE(WIFEXITED(st));
	CU_ASSERT_EQUAL(WEXITSTATUS(st), 7);	/* dieatstart's status */
}

int
main(void)
{
	static const tl_test tests[] = {
		{ "test_filtered_worker_exits", test_filtered_worker_exits },
		{ NULL, NULL },
	};

	tl_suite("filtered_exit", tests);
	return tl_run();
}

/* testlib.c - see testlib.h: fixtures, clocks, resource counts and
 * plain processes.  The runner (tl_suite, tl_run, tl_skip) is in runner.c. */
#include "lineread.h"
#include "testlib.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *
tl_fixture(const char *name)
{
	static __thread char buf[PATH_MAX];
	const char *dir = getenv("SIPC_FIXTURES");

	snprintf(buf, sizeof(buf), "%s/%s", dir ? dir : "build/fixtures", name);
	return buf;
}

const char *
tl_init_path(void)
{
	const char *p = getenv("SIPC_INIT");

	return p != NULL ? p : "build/libexec/sipc-init";
}

int64_t
tl_now_ms(void)
{
	return lr_now_ms();
}

int64_t
tl_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

bool
tl_wait_until(bool (*cond)(void *), void *arg, int timeout_ms)
{
	int64_t end = tl_now_ms() + timeout_ms;

	for (;;) {
		if (cond(arg))
			return true;
		if (tl_now_ms() >= end)
			return false;
		usleep(2000);
	}
}

/* Threads the process keeps whatever a test does: the calling one and
 * any helper of the runtime's (the runner measures it, runner.c). */
static int thread_floor = 1;

void
tl_set_thread_floor(int n)
{
	thread_floor = n > 1 ? n : 1;
}

int
tl_settled_threads(int timeout_ms)
{
	int64_t end = tl_now_ms() + timeout_ms;
	int n;

	while ((n = tl_count_threads()) > thread_floor && tl_now_ms() < end)
		usleep(5000);
	return n;
}

bool
tl_wait_baseline(int fds, int threads, int children, int timeout_ms)
{
	int64_t end = tl_now_ms() + timeout_ms;

	for (;;) {
		if (tl_count_fds() == fds && tl_count_threads() == threads &&
		    tl_count_children() == children)
			return true;
		if (tl_now_ms() >= end) {
			fprintf(stderr, "baseline: fds %d/%d threads %d/%d "
			    "children %d/%d\n", tl_count_fds(), fds,
			    tl_count_threads(), threads, tl_count_children(),
			    children);
			return false;
		}
		usleep(5000);
	}
}

bool
tl_pid_alive(int pid)
{
	char path[64], buf[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if ((f = fopen(path, "re")) == NULL)
		return false;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	if (p == NULL || (p = strrchr(buf, ')')) == NULL)
		return false;
	return p[2] != 'Z' && p[2] != 'X';
}

pid_t
tl_spawn_idle(const char *comm, bool own_group)
{
	int p[2];
	pid_t pid;
	char c;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	if ((pid = fork()) == 0) {
		if (own_group)
			setpgid(0, 0);
		if (comm != NULL)
			prctl(PR_SET_NAME, comm);
		alarm(600);
		(void)!write(p[1], "r", 1);
		for (;;)
			pause();
	}
	/* Both sides set the group: whichever runs first, it is set
	 * before the caller looks. */
	if (pid > 0 && own_group)
		setpgid(pid, pid);
	close(p[1]);
	if (pid > 0 && read(p[0], &c, 1) != 1) {
		tl_kill_reap(pid);
		pid = -1;
	}
	close(p[0]);
	return pid;
}

void
tl_kill_reap(pid_t pid)
{
	(void)kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

bool
tl_reap_signaled(pid_t pid, int sig, int timeout_ms)
{
	int64_t end = tl_now_ms() + timeout_ms;
	int st;
	pid_t r;

	for (;;) {
		r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return WIFSIGNALED(st) && WTERMSIG(st) == sig;
		if (r < 0 || tl_now_ms() >= end)
			return false;
		usleep(2000);
	}
}

void
tl_proc_cgroup(pid_t pid, char *ret, size_t len)
{
	char path[64], line[512];
	FILE *f;

	ret[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	if ((f = fopen(path, "re")) == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(ret, len, "%s", line + 3);
		}
	fclose(f);
}

bool
tl_read_line(int fd, char *buf, size_t len, int ms)
{
	return lr_read_line(fd, buf, len, ms);
}

/* voluntary_ctxt_switches of a /proc status file, or -1. */
static long
status_switches(const char *path)
{
	char line[128];
	long v = -1;
	FILE *f;

	if ((f = fopen(path, "re")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

long
tl_proc_switches(int pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	return status_switches(path);
}

long
tl_thread_switches(const char *name)
{
	char path[300], comm[32];
	struct dirent *de;
	long v = -1;
	DIR *d;
	FILE *f;

	if ((d = opendir("/proc/self/task")) == NULL)
		return -1;
	while (v < 0 && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
		    de->d_name);
		if ((f = fopen(path, "re")) == NULL)
			continue;
		if (fgets(comm, sizeof(comm), f) == NULL)
			comm[0] = '\0';
		fclose(f);
		comm[strcspn(comm, "\n")] = '\0';
		if (strcmp(comm, name) != 0)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status",
		    de->d_name);
		v = status_switches(path);
	}
	closedir(d);
	return v;
}

bool
tl_thread_named(void *name)
{
	return tl_thread_switches(name) >= 0;
}

bool
tl_check_eq(intmax_t a, intmax_t b, const char *sa, const char *sb,
            unsigned line, const char *file, bool fatal)
{
	char msg[512];

	if (a == b) {
		CU_assertImplementation(CU_TRUE, line, "TL_EQ", file, "",
		    CU_FALSE);
		return true;
	}
	snprintf(msg, sizeof(msg), "TL_EQ(%s, %s): %s is %" PRIdMAX
	    " (%#" PRIxMAX "), %s is %" PRIdMAX " (%#" PRIxMAX ")", sa, sb,
	    sa, a, (uintmax_t)a, sb, b, (uintmax_t)b);
	CU_assertImplementation(CU_FALSE, line, msg, file, "",
	    fatal ? CU_TRUE : CU_FALSE);
	return false;
}

bool
tl_check_streq(const char *a, const char *b, const char *sa, const char *sb,
               unsigned line, const char *file, bool fatal)
{
	char msg[640];

	if ((a == NULL && b == NULL) ||
	    (a != NULL && b != NULL && strcmp(a, b) == 0)) {
		CU_assertImplementation(CU_TRUE, line, "TL_STREQ", file, "",
		    CU_FALSE);
		return true;
	}
	snprintf(msg, sizeof(msg), "TL_STREQ(%s, %s): %s is %s%.200s%s, "
	    "%s is %s%.200s%s", sa, sb, sa, a ? "\"" : "", a ? a : "NULL",
	    a ? "\"" : "", sb, b ? "\"" : "", b ? b : "NULL", b ? "\"" : "");
	CU_assertImplementation(CU_FALSE, line, msg, file, "",
	    fatal ? CU_TRUE : CU_FALSE);
	return false;
}

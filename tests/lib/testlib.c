/* testlib.c - see testlib.h: fixtures, clocks and resource counts.  The
 * runner (tl_suite, tl_run, tl_skip) is in runner.c. */
#include "testlib.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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

static int
count_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

int
tl_count_fds(void)
{
	return count_dir("/proc/self/fd") - 1; /* the DIR's own fd */
}

int
tl_count_threads(void)
{
	return count_dir("/proc/self/task");
}

/* Scan /proc for processes whose parent is us; count all or zombies. */
static int
count_kids(bool zombies_only)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0, me = getpid();

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		char path[300], buf[512], *p, state;
		int ppid;
		FILE *f;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
		if ((f = fopen(path, "re")) == NULL)
			continue;
		if (fgets(buf, sizeof(buf), f) == NULL) {
			fclose(f);
			continue;
		}
		fclose(f);
		if ((p = strrchr(buf, ')')) == NULL)
			continue;
		if (sscanf(p + 2, "%c %d", &state, &ppid) != 2)
			continue;
		if (ppid == me && (!zombies_only || state == 'Z'))
			n++;
	}
	closedir(d);
	return n;
}

int tl_count_children(void) { return count_kids(false); }
int tl_count_zombie_children(void) { return count_kids(true); }

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

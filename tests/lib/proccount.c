/*
 * proccount.c - counts of this process's descriptors, threads and
 * children from /proc, for leak checks (the CUnit tests and the soak).
 */
#include "proccount.h"

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
tl_count_fds_to(int pid, const char *needle)
{
	char dir[64], path[320], link[256];
	struct dirent *e;
	DIR *d;
	ssize_t n;
	int cnt = 0;

	if (pid == 0)
		snprintf(dir, sizeof(dir), "/proc/self/fd");
	else
		snprintf(dir, sizeof(dir), "/proc/%d/fd", pid);
	if ((d = opendir(dir)) == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if ((n = readlink(path, link, sizeof(link) - 1)) > 0) {
			link[n] = '\0';
			cnt += strstr(link, needle) != NULL;
		}
	}
	closedir(d);
	return cnt;
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


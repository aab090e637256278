/*
 * freezer.c - see freezer.h.
 */
#include "freezer.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testlib.h"

#define FREEZER_ROOT "/sys/fs/cgroup/freezer"

static bool
write_file(const char *dir, const char *file, const char *text)
{
	char path[300];
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if ((f = fopen(path, "we")) == NULL)
		return false;
	ok = fputs(text, f) >= 0;
	return fclose(f) == 0 && ok;
}

static bool
frozen(void *dir)
{
	char path[300], buf[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/freezer.state", (const char *)dir);
	if ((f = fopen(path, "re")) == NULL)
		return false;
	if (fgets(buf, sizeof(buf), f) == NULL)
		buf[0] = '\0';
	fclose(f);
	return strncmp(buf, "FROZEN", 6) == 0;
}

bool
st_freezer_make(char *dir, size_t len, const char *tag)
{
	snprintf(dir, len, FREEZER_ROOT "/sipc-%s-%d", tag, (int)getpid());
	return mkdir(dir, 0755) == 0;
}

bool
st_freeze(const char *dir, pid_t pid, unsigned wait_ms)
{
	char num[24];

	snprintf(num, sizeof(num), "%d", (int)pid);
	return write_file(dir, "cgroup.procs", num) &&
	    write_file(dir, "freezer.state", "FROZEN") &&
	    tl_wait_until(frozen, (void *)dir, wait_ms);
}

bool
st_thaw(const char *dir)
{
	return write_file(dir, "freezer.state", "THAWED");
}

void
st_freezer_drop(const char *dir)
{
	(void)st_thaw(dir);
	(void)rmdir(dir);
}

bool
st_kill_pending(void *arg)
{
	char path[64], line[128];
	unsigned long long mask;
	bool yes = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)*(pid_t *)arg);
	if ((f = fopen(path, "re")) == NULL)
		return false;
	while (fgets(line, sizeof(line), f) != NULL)
		if ((sscanf(line, "ShdPnd: %llx", &mask) == 1 ||
		    sscanf(line, "SigPnd: %llx", &mask) == 1) &&
		    (mask & (1ULL << (SIGKILL - 1))))
			yes = true;
	fclose(f);
	return yes;
}

/*
 * statedir.c - state directory test helpers (statedir.h).
 */
#include "statedir.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rmtree.h"
#include "testlib.h"

char *
sd_make(void)
{
	char tmpl[] = "/tmp/sipc-state-XXXXXX";
	char *dir;

	CU_ASSERT_FATAL(mkdtemp(tmpl) != NULL);
	CU_ASSERT_FATAL(asprintf(&dir, "%s/state", tmpl) > 0);
	return dir;
}

void
sd_remove(char *dir)
{
	char parent[512];

	/* The parent is a fresh mkdtemp directory holding only our files. */
	snprintf(parent, sizeof(parent), "%.*s", (int)(strlen(dir) - 6), dir);
	if (rmtree(parent) != 0)
		fprintf(stderr, "could not remove %s\n", parent);
	free(dir);
}

pid_t
sd_fork_instance(void (*fn)(int fd, void *arg), void *arg, char *line,
                 size_t len, int ms)
{
	int p[2];
	bool got;
	pid_t pid;

	CU_ASSERT_FATAL(pipe2(p, O_CLOEXEC) == 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		fn(p[1], arg);
		_exit(127);             /* fn must not return */
	}
	close(p[1]);
	line[0] = '\0';
	got = tl_read_line(p[0], line, len, ms);
	close(p[0]);
	if (!got || strncmp(line, "ready ", 6) != 0) {
		fprintf(stderr, "forked instance: %s\n",
		    got ? line : "(no report)");
		tl_kill_reap(pid);
		CU_FAIL_FATAL("the forked instance did not get ready");
	}
	return pid;
}

void
sd_child_fail(int fd, const char *what, int rc)
{
	dprintf(fd, "fail %s: %s\n", what, sipc_strerror(rc));
	_exit(1);
}

void
sd_kill_instance(pid_t pid)
{
	int st;

	CU_ASSERT(kill(pid, SIGKILL) == 0);
	CU_ASSERT(waitpid(pid, &st, 0) == pid);
	CU_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

const struct sipc_unresolved *
sd_find_key(const struct sipc_unresolved *u, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(u[i].key, key) == 0)
			return &u[i];
	return NULL;
}

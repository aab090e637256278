/*
 * statedir.c - state directory test helpers (statedir.h).
 */
#include "statedir.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

bool
sd_read_line(int fd, char *buf, size_t len, int ms)
{
	int64_t end = tl_now_ms() + ms;
	size_t off = 0;
	ssize_t n;

	while (off + 1 < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = end - tl_now_ms();

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return false;
		if ((n = read(fd, buf + off, 1)) <= 0)
			return false;
		if (buf[off] == '\n') {
			buf[off] = '\0';
			return true;
		}
		off++;
	}
	return false;
}

const struct sipc_unresolved *
sd_find_key(const struct sipc_unresolved *u, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(u[i].key, key) == 0)
			return &u[i];
	return NULL;
}

/*
 * jtest.c - journal test helpers (jtest.h).
 */
#include "jtest.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "wire/wire.h"
#include "journal/journal.h"
#include "rmtree.h"
#include "testlib.h"

char jt_base[PATH_MAX], jt_dir[PATH_MAX + 16];

void
jt_mkstate(void)
{
	char tmpl[] = "/tmp/sipc-journal-XXXXXX";

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(tmpl));
	/* Resolved: tests compare it with what /proc says. */
	CU_ASSERT_PTR_NOT_NULL_FATAL(realpath(tmpl, jt_base));
	snprintf(jt_dir, PATH_MAX + 16, "%s/state", jt_base);
}

void
jt_rmstate(void)
{
	if (rmtree(jt_base) != 0)
		fprintf(stderr, "could not remove %s\n", jt_base);
}

char *
jt_path(const char *name)
{
	static char p[PATH_MAX + 64];

	snprintf(p, sizeof(p), "%s/%s", jt_dir, name);
	return p;
}

off_t
jt_fsize(const char *name)
{
	struct stat sb;

	return stat(jt_path(name), &sb) == 0 ? sb.st_size : -1;
}

struct sipc__journal *
jt_open(enum sipc_durability mode)
{
	struct sipc__journal *j = NULL;
	char err[256] = "";
	int r = sipc__journal_open(jt_dir, mode, 5, &j, err, sizeof(err));

	if (r != 0)
		fprintf(stderr, "journal_open: %d %s\n", r, err);
	CU_ASSERT_EQUAL(r, 0);
	return j;
}

void
jt_crash_child(enum sipc_durability mode, void (*fn)(struct sipc__journal *))
{
	pid_t pid;
	int st;

	if ((pid = fork()) == 0) {
		struct sipc__journal *j = NULL;

		if (sipc__journal_open(jt_dir, mode, 5, &j, NULL, 0) != 0)
			_exit(1);
		fn(j);
		raise(SIGKILL);
		_exit(2);
	}
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_EQUAL_FATAL(waitpid(pid, &st, 0), pid);
	CU_ASSERT_FATAL(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

size_t
jt_list(struct sipc__journal *j, struct sipc_unresolved **u)
{
	size_t n = 99;

	CU_ASSERT_EQUAL(sipc__journal_unresolved(j, u, &n), 0);
	return n;
}

size_t
jt_rec_size(uint8_t type)
{
	struct sipc__jrec r;
	uint8_t buf[SIPC__JREC_MAX];
	size_t n = 0;

	memset(&r, 0, sizeof(r));
	r.type = type;
	r.u.acc.keylen = 2;
	CU_ASSERT_EQUAL(sipc__jrec_encode(&r, buf, sizeof(buf), &n), 0);
	return n;
}

static size_t
jt_put(uint8_t *b, size_t n, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		b[n++] = (uint8_t)(v >> (8 * i));
	return n;
}

size_t
jt_v1_worker_record(uint8_t *b, const struct sipc__ident *k)
{
	const uint32_t plen = 4 + 4 + 8 + SIPC__BOOT_ID_LEN + 16 + 4 + 4;
	size_t n = 0;

	n = jt_put(b, n, SIPC__JREC_MAGIC, 4);
	n = jt_put(b, n, plen, 4);
	b[n++] = SIPC__JR_WORKER_V1;
	n = jt_put(b, n, (uint32_t)k->pid, 4);
	n = jt_put(b, n, (uint32_t)k->pgid, 4);
	n = jt_put(b, n, k->starttime, 8);
	memcpy(b + n, k->boot_id, SIPC__BOOT_ID_LEN);
	n += SIPC__BOOT_ID_LEN;
	memcpy(b + n, k->instance, 16);
	n += 16;
	n = jt_put(b, n, k->slot, 4);
	n = jt_put(b, n, k->generation, 4);
	return jt_put(b, n, sipc__crc32c(0, b + 4, 5 + plen), 4);
}

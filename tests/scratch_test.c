/*
 * scratch_test.c - scratch directories (scratch_root, SIPC_REQ_SCRATCH,
 * sipc_worker_scratch()): a request's directory exists and is empty when
 * its handler runs, inside the sandbox too; it is removed with what the
 * worker left once answered, without following a link to a host file; a
 * request without the flag has none; a worker generation's directory
 * goes with its end and the instance's with destroy; the flag without a
 * scratch_root, and a relative root, are refused.
 *
 * Threads: the CUnit thread only (sipc_call()).  Waits are on events with
 * generous deadlines.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sipc.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 20000           /* generous deadline for any event */

static char root[64];

static void
root_make(void)
{
	snprintf(root, sizeof(root), "/tmp/sipc-scr-XXXXXX");
	CU_ASSERT_FATAL(mkdtemp(root) != NULL);
	/* an unprivileged sandboxed worker reaches it through /tmp */
	CU_ASSERT(chmod(root, 0755) == 0);
}

/* Entries of `dir` (-1 when it cannot be opened). */
static int
entries(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	return n;
}

static bool
path_gone(void *arg)
{
	struct stat st;

	return lstat(arg, &st) < 0 && errno == ENOENT;
}

static bool
root_empty(void *arg)
{
	return entries(root) == 0;
}

static sipc_supervisor *
start(void)
{
	struct sipc_config c;

	st_cfg_base(&c, "echo", NULL, 1);
	c.scratch_root = root;
	return st_start(&c, 1, WAIT_MS);
}

/* The reply "PATH N" into dir and *n (a reply is not NUL-terminated). */
static bool
reply_dir(const struct sipc_result *r, char *dir, int *n)
{
	char text[4200];

	if (r->reply_len == 0 || r->reply_len >= sizeof(text))
		return false;
	memcpy(text, r->reply, r->reply_len);
	text[r->reply_len] = '\0';
	return sscanf(text, "%4095s %d", dir, n) == 2;
}

static void
call_scratch(sipc_supervisor *s, const char *cmd, unsigned flags,
             struct sipc_result *r)
{
	char p[256];
	size_t len;

	memcpy(p, "\0CMD", 4);
	len = 4 + (size_t)snprintf(p + 4, sizeof(p) - 4, "%s", cmd);
	struct sipc_request rq = { .payload = p, .len = len,
	    .timeout_ms = WAIT_MS, .flags = flags };
	CU_ASSERT_FATAL(sipc_call(s, &rq, r) == 0);
}

/*
 * The handler finds its directory empty and fills it, a link to a host
 * file included; after the answer the directory is gone, the host file
 * is intact, and the next request's directory is a new, empty one.
 */
/* rules: D11 */
static void
test_scratch_per_request_made_and_removed(void)
{
	char bait[96], dir[4096], cmd[160];
	struct sipc_result r;
	sipc_supervisor *s;
	int n = -1;
	FILE *f;

	root_make();
	snprintf(bait, sizeof(bait), "%s.bait", root);
	CU_ASSERT_FATAL((f = fopen(bait, "w")) != NULL);
	fputs("host", f);
	fclose(f);
	s = start();
	snprintf(cmd, sizeof(cmd), "scratch %s", bait);
	call_scratch(s, cmd, SIPC_REQ_SCRATCH, &r);
	TL_EQ(r.outcome, SIPC_OUTCOME_OK);
	CU_ASSERT_FATAL(reply_dir(&r, dir, &n));
	TL_EQ(n, 0);
	CU_ASSERT(strncmp(dir, root, strlen(root)) == 0);
	sipc_result_release(&r);
	CU_ASSERT(tl_wait_until(path_gone, dir, WAIT_MS));
	CU_ASSERT(entries(bait) == -1);           /* a file, still there */
	CU_ASSERT_FATAL((f = fopen(bait, "r")) != NULL);
	CU_ASSERT(fgetc(f) == 'h');
	fclose(f);
	/* a second request: its own, empty */
	call_scratch(s, "scratch", SIPC_REQ_SCRATCH, &r);
	TL_EQ(r.outcome, SIPC_OUTCOME_OK);
	CU_ASSERT(reply_dir(&r, dir, &n));
	TL_EQ(n, 0);
	sipc_result_release(&r);
	/* without the flag: none */
	call_scratch(s, "scratch", 0, &r);
	TL_EQ(r.outcome, SIPC_OUTCOME_OK);
	CU_ASSERT(r.reply_len == 4 && memcmp(r.reply, "none", 4) == 0);
	sipc_result_release(&r);
	sipc_destroy(s);
	/* destroy removes the instance's directory */
	CU_ASSERT(tl_wait_until(root_empty, NULL, WAIT_MS));
	unlink(bait);
	rmdir(root);
}

/* A worker that dies in its request: the generation's directory, with
 * the request's in it, is removed at its end. */
/* rules: D11 */
static void
test_scratch_generation_removed_at_end(void)
{
	char dir[4096], gen[4096], *slash;
	struct sipc_result r;
	sipc_supervisor *s;
	int n;

	root_make();
	s = start();
	/* the generation's path, from a request's */
	call_scratch(s, "scratch", SIPC_REQ_SCRATCH, &r);
	CU_ASSERT_FATAL(reply_dir(&r, dir, &n));
	sipc_result_release(&r);
	snprintf(gen, sizeof(gen), "%s", dir);
	CU_ASSERT_FATAL((slash = strrchr(gen, '/')) != NULL);
	*slash = '\0';
	CU_ASSERT(entries(gen) >= 0);
	call_scratch(s, "crash exit 2", SIPC_REQ_SCRATCH, &r);
	TL_EQ(r.outcome, SIPC_OUTCOME_UNKNOWN);
	sipc_result_release(&r);
	CU_ASSERT(tl_wait_until(path_gone, gen, WAIT_MS));
	CU_ASSERT(sipc_wait_ready(s, 1, WAIT_MS) == 0);
	sipc_destroy(s);
	CU_ASSERT(tl_wait_until(root_empty, NULL, WAIT_MS));
	rmdir(root);
}

/* The flag without a scratch_root is -EINVAL; a relative root is
 * refused by name. */
static void
test_scratch_refused_without_root(void)
{
	struct sipc_config c;
	sipc_supervisor *s = NULL;
	char err[256] = "";
	uint64_t id;

	st_cfg_base(&c, "echo", NULL, 1);
	s = st_start(&c, 1, WAIT_MS);
	struct sipc_request rq = { .payload = "x", .len = 1,
	    .flags = SIPC_REQ_SCRATCH };
	TL_EQ(sipc_submit(s, &rq, st_outbox_done, NULL, &id), -EINVAL);
	sipc_destroy(s);
	s = NULL;
	st_cfg_base(&c, "echo", NULL, 1);
	c.scratch_root = "relative/dir";
	TL_EQ(sipc_create(&c, err, sizeof(err), &s), SIPC_E_CONFIG);
	CU_ASSERT(strstr(err, "scratch_root") != NULL);
	CU_ASSERT(s == NULL);
}

static const tl_test tests[] = {
	{ "test_scratch_per_request_made_and_removed",
	  test_scratch_per_request_made_and_removed },
	{ "test_scratch_generation_removed_at_end",
	  test_scratch_generation_removed_at_end },
	{ "test_scratch_refused_without_root",
	  test_scratch_refused_without_root },
	{ NULL, NULL }
};

int
main(void)
{
	st_no_core_files();
	tl_suite("scratch", tests);
	return tl_run();
}

/*
 * exec_test.c - sipc-exec (src/exec/sipc-exec.c), the worker that wraps
 * a command-line converter, driven through a real supervisor: Ghostscript
 * on its standard input and on files ({in}/{out}), a converter's
 * non-zero exit with the start of its standard error, a standard-error
 * flood kept within --diag-max, 12 MiB through cat both ways at once, a
 * converter and its forked child ended by the deadline with no process
 * left; and sipc-exec run by hand: a missing command, bad arguments.
 *
 * The Ghostscript tests skip where gs is not installed (make deps
 * installs it).  Documents come from fixtures/docgen (SIPC_FIXTURES/docs).
 *
 * Threads: the CUnit thread drives every test; the log callback runs on
 * library threads and touches only sipctest's mutex-guarded capture.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sipc.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 20000
#define GS "/usr/bin/gs"
#define BIG (12u << 20)

static char exec_path[PATH_MAX];
static char mark_env[64];
static _Atomic unsigned long long diag_bytes;  /* DIAG log text seen */

/* st_log_fn, counting the worker diagnostics' bytes on the way. */
static void
count_log(void *arg, enum sipc_log_level lvl, uint32_t wid, uint32_t gen,
          pid_t pid, const char *msg)
{
	if (lvl == SIPC_LOG_DIAG)
		diag_bytes += strlen(msg);
	st_log_fn(arg, lvl, wid, gen, pid, msg);
}

/* sipc-exec beside this build's sipc-init. */
static const char *
exec_bin(void)
{
	const char *init = tl_init_path(), *slash = strrchr(init, '/');

	snprintf(exec_path, sizeof(exec_path), "%.*s/sipc-exec",
	    slash ? (int)(slash - init) : 0, init);
	return exec_path;
}

static bool
have_gs(void)
{
	if (access(GS, X_OK) == 0)
		return true;
	tl_skip("no " GS " (Debian: apt-get install ghostscript, or make deps)");
	return false;
}

/* The scratch_root of the next start_exec() (NULL: none). */
static const char *exec_scratch_root;

/* A supervisor of one sipc-exec worker running `argv` (argv[0] is
 * sipc-exec), every process of it marked in its environment. */
static sipc_supervisor *
start_exec(char **argv)
{
	static const char *env[2];
	struct sipc_config c;

	snprintf(mark_env, sizeof(mark_env), "SIPC_EXEC_TEST=%d",
	    (int)getpid());
	env[0] = mark_env;
	env[1] = NULL;
	st_cfg_base(&c, "echo", argv, 1);
	c.path = exec_bin();
	argv[0] = exec_path;
	c.env_set = env;
	c.max_payload = 16u << 20;
	c.log = count_log;
	c.scratch_root = exec_scratch_root;
	diag_bytes = 0;
	return st_start(&c, 1, WAIT_MS);
}

static sipc_supervisor *
start_exec_grace(char **argv, unsigned grace_ms)
{
	static const char *env[2];
	struct sipc_config c;

	snprintf(mark_env, sizeof(mark_env), "SIPC_EXEC_TEST=%d",
	    (int)getpid());
	env[0] = mark_env;
	env[1] = NULL;
	st_cfg_base(&c, "echo", argv, 1);
	c.path = exec_bin();
	argv[0] = exec_path;
	c.env_set = env;
	c.log = count_log;
	c.cancel_grace_ms = grace_ms;
	diag_bytes = 0;
	return st_start(&c, 1, WAIT_MS);
}

static void
call(sipc_supervisor *s, const void *doc, size_t len, unsigned timeout_ms,
     struct sipc_result *r)
{
	struct sipc_request q = { .payload = doc, .len = len,
	    .timeout_ms = timeout_ms };

	CU_ASSERT_FATAL(sipc_call(s, &q, r) == 0);
}

static bool
reply_has(const struct sipc_result *r, const char *needle)
{
	return r->reply != NULL && memmem(r->reply, r->reply_len, needle,
	    strlen(needle)) != NULL;
}

/* The contents of SIPC_FIXTURES/docs/NAME (malloc'd), or NULL. */
static char *
doc_read(const char *name, size_t *ret_len)
{
	char path[PATH_MAX];
	struct stat st;
	char *buf = NULL;
	int fd;

	snprintf(path, sizeof(path), "%s", tl_fixture("docs/"));
	strncat(path, name, sizeof(path) - strlen(path) - 1);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && (buf = malloc((size_t)st.st_size)) != NULL &&
	    read(fd, buf, (size_t)st.st_size) != (ssize_t)st.st_size) {
		free(buf);
		buf = NULL;
	}
	close(fd);
	*ret_len = buf ? (size_t)st.st_size : 0;
	return buf;
}

/* ------------------------------------------------------------ gs */

static void
test_exec_stdin_gs(void)
{
	static const char ps[] = "%!PS\n/Courier findfont 11 scalefont "
	    "setfont 72 700 moveto (EXEC-STDIN-7731) show showpage\n";
	char *argv[] = { NULL, GS, "-q", "-dSAFER", "-dBATCH", "-dNOPAUSE",
	    "-sDEVICE=txtwrite", "-sstdout=%stderr", "-sOutputFile=-", "-",
	    NULL };
	struct sipc_result r;
	sipc_supervisor *s;

	if (!have_gs())
		return;
	s = start_exec(argv);
	for (int i = 0; i < 3; i++) {  /* the worker serves on */
		call(s, ps, sizeof(ps) - 1, WAIT_MS, &r);
		CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_OK);
		CU_ASSERT(reply_has(&r, "EXEC-STDIN-7731"));
		sipc_result_release(&r);
	}
	sipc_destroy(s);
}

static void
test_exec_file_gs(void)
{
	char *argv[] = { NULL, GS, "-q", "-dSAFER", "-dBATCH", "-dNOPAUSE",
	    "-dPDFSTOPONERROR", "-sDEVICE=txtwrite", "-sOutputFile={out}",
	    "{in}", NULL };
	struct sipc_result r;
	sipc_supervisor *s;
	size_t len;
	char *doc;

	if (!have_gs())
		return;
	doc = doc_read("doc0002.pdf", &len);
	CU_ASSERT_FATAL(doc != NULL);
	s = start_exec(argv);
	call(s, doc, len, WAIT_MS, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_OK);
	/* docgen: document 2 is a PDF of three pages */
	CU_ASSERT(reply_has(&r, "SIPCDOC-PDF-0002-3c6ead8f-P1"));
	CU_ASSERT(reply_has(&r, "SIPCDOC-PDF-0002-3c6ead8f-P3"));
	sipc_result_release(&r);
	sipc_destroy(s);
	free(doc);
}

static void
test_exec_exit_status_and_stderr(void)
{
	char *argv[] = { NULL, GS, "-q", "-dSAFER", "-dBATCH", "-dNOPAUSE",
	    "-sDEVICE=txtwrite", "-sstdout=%stderr", "-sOutputFile={out}",
	    "{in}", NULL };
	struct sipc_result r;
	sipc_supervisor *s;
	size_t len;
	char *doc;

	if (!have_gs())
		return;
	doc = doc_read("malformed.ps", &len);
	CU_ASSERT_FATAL(doc != NULL);
	s = start_exec(argv);
	call(s, doc, len, WAIT_MS, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_WORKER_ERROR);
	CU_ASSERT_EQUAL(r.worker_error_code, 1);
	CU_ASSERT(reply_has(&r, "exit status 1: "));
	CU_ASSERT(reply_has(&r, "/unmatchedmark"));
	/* a worker error, not a worker's end */
	CU_ASSERT_EQUAL(r.exit.kind, SIPC_EXIT_NONE);
	sipc_result_release(&r);
	CU_ASSERT_EQUAL(st_worker_stats(s, 0).restarts, 0);
	sipc_destroy(s);
	free(doc);
}

/* 8 MB of standard error before a valid page: the reply comes, and no
 * more than --diag-max of it reaches the diagnostics. */
static void
test_exec_stderr_flood_bounded(void)
{
	char *argv[] = { NULL, "--diag-max", "16K", GS, "-q", "-dSAFER",
	    "-dBATCH", "-dNOPAUSE", "-sDEVICE=txtwrite", "-sOutputFile={out}",
	    "{in}", NULL };
	struct sipc_result r;
	unsigned long long seen;
	sipc_supervisor *s;
	size_t len;
	char *doc;

	if (!have_gs())
		return;
	doc = doc_read("doc10000.ps", &len);
	CU_ASSERT_FATAL(doc != NULL);
	s = start_exec(argv);
	call(s, doc, len, WAIT_MS, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_OK);
	CU_ASSERT(reply_has(&r, "SIPCDOC-FLOOD-0000-P1"));
	sipc_result_release(&r);
	CU_ASSERT(tl_wait_until(st_log_has_cb, "bytes of standard error not "
	    "forwarded (--diag-max 16384)", WAIT_MS));
	sipc_destroy(s);
	/* 16 KiB forwarded (newlines dropped, escapes added), plus
	 * sipc-exec's own lines */
	seen = diag_bytes;
	CU_ASSERT(seen >= 8 * 1024 && seen < 48 * 1024);
	if (seen < 8 * 1024 || seen >= 48 * 1024)
		fprintf(stderr, "diagnostics: %llu bytes\n", seen);
	free(doc);
}

/* ------------------------------------------------------------ pipes */

/* 12 MiB in and out at once: cat writes while it is still being fed,
 * which deadlocks a wrapper that writes all before it reads. */
static void
test_exec_large_both_ways(void)
{
	char *argv[] = { NULL, "/bin/cat", NULL };
	struct sipc_result r;
	sipc_supervisor *s;
	uint8_t *doc = malloc(BIG);

	CU_ASSERT_FATAL(doc != NULL);
	for (size_t i = 0; i < BIG; i++)
		doc[i] = (uint8_t)(i * 7 + (i >> 13));
	s = start_exec(argv);
	call(s, doc, BIG, WAIT_MS, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_OK);
	CU_ASSERT_EQUAL(r.reply_len, BIG);
	CU_ASSERT(r.reply_len == BIG && memcmp(r.reply, doc, BIG) == 0);
	sipc_result_release(&r);
	call(s, "", 0, WAIT_MS, &r);   /* an empty document: empty reply */
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_OK);
	CU_ASSERT_EQUAL(r.reply_len, 0);
	sipc_result_release(&r);
	sipc_destroy(s);
	free(doc);
}

/* The converter starts with no signal ignored or blocked, whatever the
 * worker runtime set (it ignores SIGPIPE, which exec would keep). */
static void
test_exec_child_signals_reset(void)
{
	char *argv[] = { NULL, "/bin/grep", "-E", "^Sig(Blk|Ign):",
	    "/proc/self/status", NULL };
	struct sipc_result r;
	sipc_supervisor *s;

	s = start_exec(argv);
	call(s, "", 0, WAIT_MS, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_OK);
	CU_ASSERT(reply_has(&r, "SigBlk:\t0000000000000000\n"));
	CU_ASSERT(reply_has(&r, "SigIgn:\t0000000000000000\n"));
	if (!reply_has(&r, "SigIgn:\t0000000000000000\n"))
		fprintf(stderr, "converter saw: %.*s\n", (int)r.reply_len,
		    r.reply ? (const char *)r.reply : "");
	sipc_result_release(&r);
	sipc_destroy(s);
}

/* ------------------------------------------------------------ deadline */

/* Processes whose environment holds mark_env. */
static int
marked_count(void)
{
	char path[300], buf[65536];
	struct dirent *de;
	int n = 0, fd;
	ssize_t k;
	DIR *d = opendir("/proc");

	if (d == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9' ||
		    atoi(de->d_name) == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%s/environ", de->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		k = read(fd, buf, sizeof(buf));
		close(fd);
		if (k > 0 && memmem(buf, (size_t)k, mark_env,
		    strlen(mark_env) + 1) != NULL)
			n++;
	}
	closedir(d);
	return n;
}

static bool
marked_none(void *arg)
{
	(void)arg;
	return marked_count() == 0;
}

static int marked_base;

static bool
marked_tree(void *arg)
{
	(void)arg;
	return marked_count() >= marked_base + 2;   /* sleep 601 and 600 */
}

static bool
marked_only_worker(void *arg)
{
	(void)arg;
	return marked_count() == marked_base;   /* sipc-exec (and its init) */
}

/* A converter that forks a helper and hangs (the clearest way to get
 * one is the shell; a test may wrap it, the library never).  At the
 * deadline sipc-exec itself ends the command and everything it forked
 * and answers "cancelled": the tree is gone long before the
 * supervisor's own kill at cancel_grace_ms, and the worker is not
 * restarted.  Destroy then ends the rest. */
/* rules: X9 */
static void
test_exec_deadline_handler_ends_tree_worker_kept(void)
{
	char *argv[] = { NULL, "/bin/sh", "-c", "sleep 600 & exec sleep 601",
	    NULL };
	struct sipc_request q = { .payload = "x", .len = 1,
	    .timeout_ms = 1000 };
	static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct st_outslot slot = { &box, 0 };
	struct sipc_worker_stats w0, w;
	sipc_supervisor *s;
	int64_t t0;

	st_outbox_reset(&box);
	s = start_exec_grace(argv, 60000);
	marked_base = marked_count();
	w0 = st_worker_stats(s, 0);
	CU_ASSERT_FATAL(sipc_submit(s, &q, st_outbox_done, &slot, NULL) == 0);
	CU_ASSERT(tl_wait_until(marked_tree, NULL, WAIT_MS));
	CU_ASSERT_FATAL(st_outbox_wait(&box, 1, WAIT_MS));
	t0 = tl_now_ms();
	/* TIMEOUT, or sipc-exec's "cancelled" (516, sipc-exec(1)) when it
	 * reached the supervisor first */
	CU_ASSERT(box.res[0].outcome == SIPC_OUTCOME_TIMEOUT ||
	    (box.res[0].outcome == SIPC_OUTCOME_WORKER_ERROR &&
	    box.res[0].worker_error_code == 516));
	/* well inside the 60 s grace: only the worker is left */
	CU_ASSERT(tl_wait_until(marked_only_worker, NULL, 20000));
	if (marked_count() != marked_base)
		fprintf(stderr, "%d marked processes (%d before) %lld ms after "
		    "the deadline\n", marked_count(), marked_base,
		    (long long)(tl_now_ms() - t0));
	w = st_worker_stats(s, 0);
	CU_ASSERT_EQUAL(w.pid, w0.pid);
	CU_ASSERT_EQUAL(w.generation, w0.generation);
	CU_ASSERT_EQUAL(w.restarts, 0);
	st_outbox_release(&box);
	sipc_destroy(s);
	CU_ASSERT(tl_wait_until(marked_none, NULL, WAIT_MS));
}

/* ------------------------------------------------------------ by hand */

/* Run sipc-exec with argv (no channel); its exit status, stderr in buf. */
static int
run_direct(char **argv, char *buf, size_t len)
{
	int p[2], st = -1;
	ssize_t n, got = 0;
	pid_t pid;

	argv[0] = (char *)exec_bin();
	CU_ASSERT_FATAL(pipe2(p, O_CLOEXEC) == 0);
	if ((pid = fork()) == 0) {
		dup2(p[1], 2);
		execv(argv[0], argv);
		_exit(99);
	}
	close(p[1]);
	while ((n = read(p[0], buf + got, len - 1 - (size_t)got)) > 0)
		got += n;
	buf[got] = '\0';
	close(p[0]);
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void
test_exec_missing_binary_and_bad_args(void)
{
	char *missing[] = { NULL, "/nonexistent/converter", "{in}", NULL };
	char *bare[] = { NULL, "no-such-converter-sipc", NULL };
	char *none[] = { NULL, NULL };
	char *badsize[] = { NULL, "--limit-as", "lots", "/bin/cat", NULL };
	char *badopt[] = { NULL, "--frobnicate", "/bin/cat", NULL };
	char buf[1024];

	CU_ASSERT_EQUAL(run_direct(missing, buf, sizeof(buf)), 127);
	CU_ASSERT(strstr(buf, "cannot run /nonexistent/converter: No such "
	    "file or directory") != NULL);
	CU_ASSERT_EQUAL(run_direct(bare, buf, sizeof(buf)), 127);
	CU_ASSERT(strstr(buf, "no-such-converter-sipc") != NULL &&
	    strstr(buf, "searched PATH=") != NULL);
	CU_ASSERT_EQUAL(run_direct(none, buf, sizeof(buf)), 2);
	CU_ASSERT(strstr(buf, "no command given") != NULL);
	CU_ASSERT_EQUAL(run_direct(badsize, buf, sizeof(buf)), 2);
	CU_ASSERT(strstr(buf, "a size is a number") != NULL);
	CU_ASSERT_EQUAL(run_direct(badopt, buf, sizeof(buf)), 2);
	CU_ASSERT(strstr(buf, "usage: sipc-exec") != NULL);
}

/* A missing command under a supervisor: the worker ends before its
 * handshake, and the diagnostics say why. */
static void
test_exec_missing_binary_as_worker(void)
{
	char *argv[] = { NULL, "/nonexistent/converter", NULL };
	struct sipc_config c;
	sipc_supervisor *s = NULL;
	char err[256];

	st_cfg_base(&c, "echo", argv, 1);
	c.path = exec_bin();
	argv[0] = exec_path;
	st_log_reset();
	CU_ASSERT_FATAL(sipc_create(&c, err, sizeof(err), &s) == 0);
	CU_ASSERT(tl_wait_until(st_log_has_cb, "sipc-exec: cannot run "
	    "/nonexistent/converter", WAIT_MS));
	CU_ASSERT(sipc_wait_ready(s, 1, 300) != 0);
	sipc_destroy(s);
}

/* The path named by arg no longer exists. */
static bool
path_gone(void *arg)
{
	struct stat st;

	return lstat(arg, &st) < 0 && errno == ENOENT;
}

/*
 * With a scratch_root and SIPC_REQ_SCRATCH, the command runs in a
 * directory made inside the request's own scratch directory, and what
 * it leaves there is gone after the reply.
 */
/* rules: D11 */
static void
test_exec_runs_in_request_scratch(void)
{
	char *argv[] = { NULL, "/bin/sh", "-c", "pwd; touch left", NULL };
	char root[] = "/tmp/sipc-exscr-XXXXXX", cwd[4096], want[64], *nl;
	struct sipc_result r;
	sipc_supervisor *s;
	uint64_t id;

	CU_ASSERT_FATAL(mkdtemp(root) != NULL);
	CU_ASSERT(chmod(root, 0755) == 0);
	exec_scratch_root = root;
	s = start_exec(argv);
	exec_scratch_root = NULL;
	struct sipc_request rq = { .payload = "", .len = 0,
	    .timeout_ms = WAIT_MS, .flags = SIPC_REQ_SCRATCH };
	CU_ASSERT_FATAL(sipc_call(s, &rq, &r) == 0);
	TL_EQ(r.outcome, SIPC_OUTCOME_OK);
	id = r.request_id;
	CU_ASSERT_FATAL(r.reply_len > 0 && r.reply_len < sizeof(cwd));
	memcpy(cwd, r.reply, r.reply_len);
	cwd[r.reply_len] = '\0';
	if ((nl = strchr(cwd, '\n')) != NULL)
		*nl = '\0';
	sipc_result_release(&r);
	/* <root>/sipc-XXXXXX/w0.<gen>/<id>/sipc-exec.XXXXXX */
	snprintf(want, sizeof(want), "/%llu/sipc-exec.",
	    (unsigned long long)id);
	CU_ASSERT(strncmp(cwd, root, strlen(root)) == 0);
	CU_ASSERT(strstr(cwd, want) != NULL);
	if (strstr(cwd, want) == NULL)
		fprintf(stderr, "ran in %s\n", cwd);
	if ((nl = strrchr(cwd, '/')) != NULL)
		*nl = '\0';            /* the request's directory */
	CU_ASSERT(tl_wait_until(path_gone, cwd, WAIT_MS));
	sipc_destroy(s);
	CU_ASSERT(rmdir(root) == 0);
}

int
main(void)
{
	/* the tests write documents into pipes a converter may close */
	struct sigaction ign = { .sa_handler = SIG_IGN };

	sigemptyset(&ign.sa_mask);
	(void)sigaction(SIGPIPE, &ign, NULL);
	tl_suite("exec", (tl_test[]){
	    { "test_exec_stdin_gs", test_exec_stdin_gs },
	    { "test_exec_file_gs", test_exec_file_gs },
	    { "test_exec_exit_status_and_stderr",
	      test_exec_exit_status_and_stderr },
	    { "test_exec_stderr_flood_bounded", test_exec_stderr_flood_bounded },
	    { "test_exec_large_both_ways", test_exec_large_both_ways },
	    { "test_exec_child_signals_reset", test_exec_child_signals_reset },
	    { "test_exec_deadline_handler_ends_tree_worker_kept",
	      test_exec_deadline_handler_ends_tree_worker_kept },
	    { "test_exec_missing_binary_and_bad_args",
	      test_exec_missing_binary_and_bad_args },
	    { "test_exec_missing_binary_as_worker",
	      test_exec_missing_binary_as_worker },
	    { "test_exec_runs_in_request_scratch",
	      test_exec_runs_in_request_scratch },
	    { NULL, NULL } });
	return tl_run();
}

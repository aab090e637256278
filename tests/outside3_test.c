/*
 * outside3_test.c - a third round of promises of the public documents,
 * checked from outside: only the public headers, the fixtures and the
 * man pages, no internal header.  public_accept_test.c, outside_test.c
 * and outside_conf_test.c hold the first two rounds; nothing here
 * repeats them or another test.  Each test names what it checks:
 *   - the man pages' SYNOPSIS sections compile against include/ as shown;
 *   - sipc_stats_get(3): each outcome moves its counter once, and
 *     `submitted` is their sum once nothing is pending;
 *   - CONTRACT section 6 and sipc.h: the fields of a WORKER_ERROR and of
 *     a never-sent TIMEOUT result;
 *   - CONTRACT G2 and G4: where the diagnostics stream is cut, how long
 *     an escaped piece may be, and the tail a result carries.
 *
 * Threads: the CUnit thread drives everything; the log callback runs on
 * library threads and touches only the capture below, under its mutex.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sipc.h"
#include "sipctest.h"
#include "statedir.h"
#include "testlib.h"

#define WAIT_MS 20000          /* generous deadline for any event */

/* ------------------------------------------------------ man SYNOPSIS */

/* Append the C text of one SYNOPSIS line of a man page to `out`:
 * ".B text" is the text, ".BI" joins its (quoted or bare) words without
 * spaces, as groff prints them; a bare macro name shown alone must be
 * defined.  Other requests print nothing. */
static void
synopsis_line(const char *ln, FILE *out)
{
	const char *p;
	char word[128];
	bool quoted = false;
	size_t n;

	if (strncmp(ln, ".PP", 3) == 0) {
		fputc('\n', out);
		return;
	}
	if (strncmp(ln, ".B ", 3) == 0) {
		p = ln + 3;
		n = strspn(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789");
		if (n > 0 && n < sizeof(word) && p[n] == '\0') {
			memcpy(word, p, n);
			word[n] = '\0';
			fprintf(out, "#ifndef %s\n#error %s undefined\n#endif\n",
			    word, word);
		} else {
			fprintf(out, "%s\n", p);
		}
		return;
	}
	if (strncmp(ln, ".BI ", 4) != 0)
		return;
	for (p = ln + 4; *p != '\0'; p++) {
		if (*p == '"')
			quoted = !quoted;
		else if (*p != ' ' || quoted)
			fputc(*p, out);
	}
	fputc('\n', out);
}

/*
 * Write page `path`'s SYNOPSIS (between .nf and .fi) as C to `cfile`.
 * Returns the number of lines taken (0: no synopsis).
 */
static int
synopsis_to_c(const char *path, const char *cfile)
{
	FILE *in = fopen(path, "r"), *out;
	char ln[1024];
	bool in_syn = false, in_nf = false;
	int n = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(in);
	out = fopen(cfile, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(out);
	while (fgets(ln, sizeof(ln), in) != NULL) {
		ln[strcspn(ln, "\n")] = '\0';
		if (strncmp(ln, ".SH", 3) == 0) {
			in_syn = strcmp(ln, ".SH SYNOPSIS") == 0;
			continue;
		}
		if (!in_syn)
			continue;
		if (strcmp(ln, ".nf") == 0 || strcmp(ln, ".fi") == 0) {
			in_nf = ln[1] == 'n';
			continue;
		}
		if (in_nf) {
			synopsis_line(ln, out);
			n++;
		}
	}
	fclose(in);
	fclose(out);
	return n;
}

/* The inverse check: synopsis_line() must turn a mismatching declaration
 * into C that the compiler refuses, or the test could not fail. */
static int
compile_c(const char *cfile, bool quiet)
{
	const char *cc = getenv("CC");
	char cmd[512];
	int st;

	snprintf(cmd, sizeof(cmd), "%s -std=c11 -Wall -Werror -fsyntax-only "
	    "-Iinclude -x c %s%s", cc != NULL && *cc != '\0' ? cc : "cc", cfile,
	    quiet ? " 2>/dev/null" : "");
	st = system(cmd);
	return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* man pages (section 3): "each SYNOPSIS compiles against the headers as
 * shown" - every prototype and typedef a page shows is compatible with
 * the header it includes, every macro it names is defined. */
static void
test_outside3_man_synopsis_compiles(void)
{
	char cfile[] = "/tmp/outside3-synXXXXXX.c";
	char path[512];
	struct dirent *de;
	DIR *d;
	FILE *f;
	int fd, pages = 0;

	fd = mkstemps(cfile, 2);
	CU_ASSERT_FATAL(fd >= 0);
	close(fd);
	/* The check itself must be able to fail: a wrong prototype. */
	f = fopen(cfile, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("#include <sipc.h>\n", f);
	fclose(f);
	CU_ASSERT_FATAL(compile_c(cfile, false) == 0);
	f = fopen(cfile, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("#include <sipc.h>\n", f);
	synopsis_line(".BI \"int sipc_destroy(sipc_supervisor *\" s \", int \" "
	    "x );", f);
	fclose(f);
	CU_ASSERT(compile_c(cfile, true) != 0);

	d = opendir("man");
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	while ((de = readdir(d)) != NULL) {
		size_t n = strlen(de->d_name);

		if (n < 3 || strcmp(de->d_name + n - 2, ".3") != 0)
			continue;
		snprintf(path, sizeof(path), "man/%s", de->d_name);
		if (synopsis_to_c(path, cfile) == 0)
			continue;
		pages++;
		if (compile_c(cfile, false) != 0) {
			fprintf(stderr, "%s: SYNOPSIS does not compile\n",
			    path);
			CU_FAIL("a SYNOPSIS does not compile");
		}
	}
	closedir(d);
	CU_ASSERT(pages >= 10);
	unlink(cfile);
}

/* Copy the `which`-th (1-based) ```c block after the heading `after` of
 * a Markdown file to `out`.  Returns its line count (0: none). */
static int
md_block(const char *path, const char *after, int which, FILE *out)
{
	FILE *in = fopen(path, "r");
	char ln[1024];
	bool seen = false, in_blk = false;
	int n = 0, blk = 0;

	if (in == NULL)
		return 0;
	while (fgets(ln, sizeof(ln), in) != NULL) {
		if (!seen) {
			seen = strncmp(ln, after, strlen(after)) == 0;
			continue;
		}
		if (!in_blk && strncmp(ln, "```c", 4) == 0) {
			in_blk = ++blk == which;
			continue;
		}
		if (in_blk && strncmp(ln, "```", 3) == 0)
			break;
		if (in_blk) {
			fputs(ln, out);
			n++;
		}
	}
	fclose(in);
	return n;
}

/*
 * README.md "API at a glance": both code blocks compile against the
 * headers as printed.  The supervisor block is a function body: it is
 * given the names it leaves to the reader (buf, n, done_cb, arg, id);
 * the worker block is a whole program.
 */
static void
test_outside3_readme_api_snippets_compile(void)
{
	char cfile[] = "/tmp/outside3-mdXXXXXX.c";
	FILE *f;
	int fd;

	fd = mkstemps(cfile, 2);
	CU_ASSERT_FATAL(fd >= 0);
	close(fd);
	f = fopen(cfile, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("#include <sipc.h>\n"
	    "static void done_cb(void *arg, struct sipc_result *res)\n"
	    "{ sipc_result_release(res); }\n"
	    "int snippet(const void *buf, size_t n, void *arg);\n"
	    "int snippet(const void *buf, size_t n, void *arg)\n"
	    "{\n\tuint64_t id;\n", f);
	CU_ASSERT(md_block("README.md", "## API at a glance", 1, f) > 10);
	fputs("\treturn 0;\n}\n", f);
	fclose(f);
	CU_ASSERT(compile_c(cfile, false) == 0);
	f = fopen(cfile, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("#include <sipc_worker.h>\n", f);
	CU_ASSERT(md_block("README.md", "## API at a glance", 2, f) > 5);
	fclose(f);
	CU_ASSERT(compile_c(cfile, false) == 0);
	unlink(cfile);
}

/* ------------------------------------------------ counters and results */

static struct st_outbox box = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* One echo worker, one request in flight and one queued at most. */
static sipc_supervisor *
start_narrow(void)
{
	struct sipc_config c;

	st_cfg_base(&c, "echo", NULL, 1);
	c.max_inflight = 1;
	c.ring_frames = 1;
	c.stall_ms = 60000;            /* the sleeps are the point */
	return st_start(&c, 1, WAIT_MS);
}

static bool
pred_inflight1(const struct sipc_stats *st, void *arg)
{
	return st->nworkers == 1 && st->workers[0].inflight == 1;
}

static bool
pred_settled(const struct sipc_stats *st, void *arg)
{
	return st->pending == 0 && st->mem_held == 0;
}

/*
 * sipc_stats_get(3), sipc.h "Every submitted request reaches exactly one
 * outcome": OK, WORKER_ERROR, TIMEOUT (queued), REJECTED (a full queue
 * under SIPC_REQ_NOWAIT, sipc_call) and UNKNOWN (a crash) each move
 * their own counter by exactly one per outcome; once nothing is pending,
 * `submitted` is their sum, nothing is held against the ceiling, and
 * the crash made exactly one planned restart (pool and slot).
 */
static void
test_outside3_outcome_counters_move_once(void)
{
	struct st_outslot o[2] = { { &box, 0 }, { &box, 1 } };
	struct sipc_request rq = { .payload = "data", .len = 4,
	    .flags = SIPC_REQ_NOWAIT };
	struct sipc_stats st;
	struct sipc_result r;
	sipc_supervisor *s = start_narrow();

	st_outbox_reset(&box);
	st_call_cmd(s, NULL, 0, 0, &r);                    /* OK */
	CU_ASSERT(r.outcome == SIPC_OUTCOME_OK);
	sipc_result_release(&r);
	st_call_cmd(s, "error 7", 0, 0, &r);               /* WORKER_ERROR */
	CU_ASSERT(r.outcome == SIPC_OUTCOME_WORKER_ERROR);
	sipc_result_release(&r);
	st_submit_cmd(s, "sleep 1500", 0, &o[0]);          /* OK, later */
	CU_ASSERT_FATAL(st_stats_wait(s, pred_inflight1, NULL, WAIT_MS));
	st_call_cmd(s, NULL, 150, 0, &r);                  /* TIMEOUT, queued */
	CU_ASSERT(r.outcome == SIPC_OUTCOME_TIMEOUT && !r.may_have_run);
	sipc_result_release(&r);
	CU_ASSERT_FATAL(sipc_submit(s, &rq, st_outbox_done, &o[1], NULL) ==
	    0);                                            /* queued: OK later */
	CU_ASSERT_FATAL(sipc_call(s, &rq, &r) == 0);       /* REJECTED, full */
	CU_ASSERT(r.outcome == SIPC_OUTCOME_REJECTED &&
	    r.error == SIPC_E_FULL);
	sipc_result_release(&r);
	CU_ASSERT_FATAL(st_outbox_wait(&box, 2, WAIT_MS));
	CU_ASSERT(box.res[0].outcome == SIPC_OUTCOME_OK &&
	    box.res[1].outcome == SIPC_OUTCOME_OK);
	st_call_cmd(s, "crash exit 3", 0, 0, &r);          /* UNKNOWN */
	CU_ASSERT(r.outcome == SIPC_OUTCOME_UNKNOWN &&
	    r.error == SIPC_E_WORKER_DIED);
	sipc_result_release(&r);
	CU_ASSERT(st_stats_wait(s, st_pred_respawned, NULL, WAIT_MS));
	CU_ASSERT(st_stats_wait(s, pred_settled, NULL, WAIT_MS));

	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	CU_ASSERT_EQUAL(st.completed_ok, 3);
	CU_ASSERT_EQUAL(st.worker_errors, 1);
	CU_ASSERT_EQUAL(st.timeouts, 1);
	CU_ASSERT_EQUAL(st.rejected, 1);
	CU_ASSERT_EQUAL(st.unknown, 1);
	CU_ASSERT_EQUAL(st.submitted, st.completed_ok + st.worker_errors +
	    st.timeouts + st.rejected + st.unknown);
	CU_ASSERT_EQUAL(st.requeued, 0);
	CU_ASSERT_EQUAL(st.retried, 0);
	CU_ASSERT_EQUAL(st.protocol_violations, 0);
	CU_ASSERT_EQUAL(st.restarts, 1);
	CU_ASSERT_EQUAL(st.workers[0].restarts, 1);
	CU_ASSERT_EQUAL(st.workers[0].generation, 2);
	CU_ASSERT(st.workers[0].last_exit.kind == SIPC_EXIT_CODE &&
	    st.workers[0].last_exit.code == 3);
	sipc_stats_release(&st);
	st_outbox_release(&box);
	sipc_destroy(s);
}

/*
 * CONTRACT section 6 and sipc.h struct sipc_result: a WORKER_ERROR has
 * error 0, may_have_run true, the worker's code and message, one
 * attempt and the worker that answered; a TIMEOUT that never left the
 * queue has SIPC_E_TIMEOUT, may_have_run false, no attempt and no worker
 * ("0/0/0 if never sent"), and no reply.
 */
static void
test_outside3_result_fields_worker_error_and_unsent_timeout(void)
{
	struct st_outslot o = { &box, 0 };
	struct sipc_worker_stats ws;
	struct sipc_result r;
	sipc_supervisor *s = start_narrow();

	st_outbox_reset(&box);
	ws = st_worker_stats(s, 0);
	st_call_cmd(s, "error 42", 0, 0, &r);
	CU_ASSERT(r.outcome == SIPC_OUTCOME_WORKER_ERROR);
	CU_ASSERT_EQUAL(r.error, 0);
	CU_ASSERT(r.may_have_run);
	CU_ASSERT_EQUAL(r.worker_error_code, 42);
	CU_ASSERT(r.reply_len == strlen("requested error") &&
	    r.reply != NULL &&
	    memcmp(r.reply, "requested error", r.reply_len) == 0);
	CU_ASSERT_EQUAL(r.attempts, 1);
	CU_ASSERT(r.worker_id == 0 && r.generation == ws.generation &&
	    r.pid == ws.pid && r.pid > 0);
	CU_ASSERT(r.exit.kind == SIPC_EXIT_NONE);
	sipc_result_release(&r);

	st_submit_cmd(s, "sleep 1000", 0, &o);
	CU_ASSERT_FATAL(st_stats_wait(s, pred_inflight1, NULL, WAIT_MS));
	st_call_cmd(s, NULL, 100, 0, &r);
	CU_ASSERT(r.outcome == SIPC_OUTCOME_TIMEOUT);
	CU_ASSERT_EQUAL(r.error, SIPC_E_TIMEOUT);
	CU_ASSERT(!r.may_have_run);
	CU_ASSERT_EQUAL(r.attempts, 0);
	CU_ASSERT(r.worker_id == 0 && r.generation == 0 && r.pid == 0);
	CU_ASSERT(r.reply == NULL && r.reply_len == 0);
	CU_ASSERT(r.request_id != 0);
	sipc_result_release(&r);
	CU_ASSERT(st_outbox_wait(&box, 1, WAIT_MS));
	st_outbox_release(&box);
	sipc_destroy(s);
}

/* ------------------------------------------------------------ diagnostics */

/* What the log callback saw of the diagnostics: the lengths of the
 * pieces made only of 'x' (chatty's long line), empty pieces, the
 * longest piece, and any raw control or non-ASCII byte. */
static struct {
	pthread_mutex_t mu;
	size_t xlen[4096];
	unsigned nx, nempty, nbad;
	size_t longest;
} cap = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void
cap_log(void *arg, enum sipc_log_level lvl, uint32_t wid, uint32_t gen,
        pid_t pid, const char *msg)
{
	size_t n = strlen(msg), i;

	if (lvl != SIPC_LOG_DIAG)
		return;
	pthread_mutex_lock(&cap.mu);
	if (n > cap.longest)
		cap.longest = n;
	if (n == 0)
		cap.nempty++;
	for (i = 0; i < n; i++)
		if ((unsigned char)msg[i] < 0x20 ||
		    (unsigned char)msg[i] >= 0x7f)
			cap.nbad++;
	if (n > 0 && strspn(msg, "x") == n && cap.nx < 4096)
		cap.xlen[cap.nx++] = n;
	pthread_mutex_unlock(&cap.mu);
}

static void
cap_reset(void)
{
	pthread_mutex_lock(&cap.mu);
	cap.nx = cap.nempty = cap.nbad = 0;
	cap.longest = 0;
	pthread_mutex_unlock(&cap.mu);
}

static bool
cap_has_x(void *arg)
{
	size_t want = *(size_t *)arg, sum = 0;
	unsigned i;

	pthread_mutex_lock(&cap.mu);
	for (i = 0; i < cap.nx; i++)
		sum += cap.xlen[i];
	pthread_mutex_unlock(&cap.mu);
	return sum >= want;
}

/*
 * CONTRACT G2: the stream is cut at '\n' and every diag_line_max bytes;
 * each piece is escaped (no raw control byte, NUL included) and holds at
 * most 4 x diag_line_max characters.  chatty writes a line of 5000 'x'
 * (and escapes, a frame header with NUL bytes) on stdout and stderr
 * before its HELLO.  Limit = 5000: each line is one piece of exactly
 * 5000, and no empty piece after it; 4999: a piece of 4999 and
 * one of 1; 16: pieces of 16 and a last of 8 (5000 = 312 x 16 + 8).
 */
/* rules: G2 */
static void
test_outside3_diag_cut_exactly_at_line_max(void)
{
	static const size_t maxes[] = { 5000, 4999, 16 };
	char *argv[] = { "chatty", "0", NULL };
	struct sipc_config c;
	sipc_supervisor *s;
	unsigned k, i;

	for (k = 0; k < sizeof(maxes) / sizeof(maxes[0]); k++) {
		size_t max = maxes[k], want = 2 * 5000;
		unsigned full = 0, rest = 0, other = 0;

		st_cfg_base(&c, "chatty", argv, 1);
		c.diag_line_max = max;
		c.log = cap_log;
		cap_reset();
		s = st_start(&c, 1, WAIT_MS);
		CU_ASSERT(tl_wait_until(cap_has_x, &want, WAIT_MS));
		sipc_destroy(s);
		pthread_mutex_lock(&cap.mu);
		for (i = 0; i < cap.nx; i++) {
			if (cap.xlen[i] == max)
				full++;
			else if (cap.xlen[i] == 5000 % max)
				rest++;
			else
				other++;
		}
		CU_ASSERT_EQUAL(full, 2 * (5000 / max));
		CU_ASSERT_EQUAL(rest, 5000 % max != 0 ? 2 : 0);
		CU_ASSERT_EQUAL(other, 0);
		CU_ASSERT_EQUAL(cap.nbad, 0);
		CU_ASSERT(cap.longest <= 4 * max);
		/* a '\n' right after a piece cut at the limit ends it */
		CU_ASSERT_EQUAL(cap.nempty, 0);
		if (full != 2 * (5000 / max) || other != 0 || cap.nempty != 0)
			fprintf(stderr, "max %zu: %u full, %u rest, %u other, "
			    "%u empty\n", max, full, rest, other, cap.nempty);
		pthread_mutex_unlock(&cap.mu);
	}
}

static unsigned
count_str(const char *hay, const char *needle)
{
	unsigned n = 0;

	for (; (hay = strstr(hay, needle)) != NULL; hay++)
		n++;
	return n;
}

/* Does `tail` end with one whole procinfo line of generation 1 ("procinfo
 * pid=P gen=1", a line end after it allowed)? */
static bool
ends_with_line(const char *tail)
{
	const char *p, *last = NULL;
	unsigned long pid;
	int n = 0;

	for (p = tail; (p = strstr(p, "procinfo pid=")) != NULL; p++)
		last = p;
	if (last == NULL || (last != tail && last[-1] != '\n'))
		return false;
	if (sscanf(last, "procinfo pid=%lu gen=1%n", &pid, &n) != 1 || n == 0)
		return false;
	return strspn(last + n, "\n") == strlen(last + n);
}

/*
 * CONTRACT G4, sipc.h struct sipc_result: the last diag_tail_bytes of
 * escaped text are kept per worker and attached as diag_tail to a
 * result settled by that worker's end.  procinfo writes one line per
 * request; twelve requests, then "exit" (its line, then _exit(3)): with
 * diag_tail_bytes 64 the tail is at most 64 bytes and ends with the
 * dying request's whole line; with the default 4096 all 13 lines are
 * there.
 */
/* rules: G4 */
static void
test_outside3_diag_tail_capped_keeps_newest(void)
{
	static const size_t tails[] = { 64, 4096 };
	struct sipc_request rq = { .payload = "hello", .len = 5 };
	struct sipc_request ex = { .payload = "exit", .len = 4 };
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	unsigned k, i;

	for (k = 0; k < 2; k++) {
		st_cfg_base(&c, "procinfo", NULL, 1);
		c.diag_tail_bytes = tails[k];
		s = st_start(&c, 1, WAIT_MS);
		for (i = 0; i < 12; i++) {
			CU_ASSERT_FATAL(sipc_call(s, &rq, &r) == 0);
			CU_ASSERT(r.outcome == SIPC_OUTCOME_OK);
			sipc_result_release(&r);
		}
		CU_ASSERT_FATAL(sipc_call(s, &ex, &r) == 0);
		CU_ASSERT(r.outcome == SIPC_OUTCOME_UNKNOWN &&
		    r.error == SIPC_E_WORKER_DIED);
		CU_ASSERT(r.exit.kind == SIPC_EXIT_CODE && r.exit.code == 3);
		CU_ASSERT_PTR_NOT_NULL_FATAL(r.diag_tail);
		CU_ASSERT(strlen(r.diag_tail) <= tails[k]);
		CU_ASSERT(ends_with_line(r.diag_tail));
		if (tails[k] == 4096)
			CU_ASSERT_EQUAL(count_str(r.diag_tail,
			    "procinfo pid="), 13);
		if (!ends_with_line(r.diag_tail) || strlen(r.diag_tail) >
		    tails[k])
			fprintf(stderr, "tail %zu: [%s]\n", tails[k],
			    r.diag_tail);
		sipc_result_release(&r);
		sipc_destroy(s);
	}
}

/* ---------------------------------------------------- outcome / error */

static bool
pred_slot0_state(const struct sipc_stats *st, void *arg)
{
	return st->nworkers == 1 &&
	    st->workers[0].state == *(enum sipc_worker_state *)arg;
}

/*
 * CONTRACT section 6 (UNKNOWN row: "SIPC_E_TIMEOUT after DEADLINE") and
 * X4: a worker terminated because a request stayed past its deadline
 * and cancel_grace_ms takes its other requests that may have run with
 * it; they end UNKNOWN / SIPC_E_TIMEOUT, naming the termination, while
 * the late request itself got TIMEOUT at its deadline.  The counters
 * move once each; the end is a planned restart.
 */
/* rules: X4 */
static void
test_outside3_unknown_timeout_after_deadline_termination(void)
{
	struct st_outslot o[2] = { { &box, 0 }, { &box, 1 } };
	struct sipc_config c;
	struct sipc_stats st;
	sipc_supervisor *s;

	st_cfg_base(&c, "echo", NULL, 1);
	c.max_inflight = 2;
	c.stall_ms = 60000;
	s = st_start(&c, 1, WAIT_MS);
	st_outbox_reset(&box);
	st_submit_cmd(s, "hang", 300, &o[0]);      /* never answered */
	st_submit_cmd(s, "sleep 20000", 0, &o[1]); /* no deadline of its own */
	CU_ASSERT_FATAL(st_outbox_wait(&box, 2, WAIT_MS));
	CU_ASSERT(box.res[0].outcome == SIPC_OUTCOME_TIMEOUT &&
	    box.res[0].error == SIPC_E_TIMEOUT && box.res[0].may_have_run);
	CU_ASSERT_EQUAL(box.res[1].outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT_EQUAL(box.res[1].error, SIPC_E_TIMEOUT);
	CU_ASSERT(box.res[1].may_have_run);
	CU_ASSERT(box.res[1].exit.kind == SIPC_EXIT_TERMINATED &&
	    box.res[1].exit.reason == SIPC_TERM_DEADLINE);
	CU_ASSERT(st_stats_wait(s, st_pred_respawned, NULL, WAIT_MS));
	CU_ASSERT(st_stats_wait(s, pred_settled, NULL, WAIT_MS));
	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	CU_ASSERT_EQUAL(st.timeouts, 1);
	CU_ASSERT_EQUAL(st.unknown, 1);
	CU_ASSERT_EQUAL(st.submitted, 2);
	CU_ASSERT_EQUAL(st.restarts, 1);
	CU_ASSERT(st.workers[0].last_exit.kind == SIPC_EXIT_TERMINATED &&
	    st.workers[0].last_exit.reason == SIPC_TERM_DEADLINE);
	sipc_stats_release(&st);
	st_outbox_release(&box);
	sipc_destroy(s);
}

/*
 * CONTRACT section 6 (UNKNOWN row: SIPC_E_UNAVAILABLE), R1, R3 and P3:
 * an idempotent request that may have run on a worker that died is to
 * be written again, but its only slot goes into COOLDOWN (the restart
 * would pass restart_intensity): it ends UNKNOWN / SIPC_E_UNAVAILABLE,
 * may_have_run true, one attempt; the cool-down is not counted as a
 * restart, and the next submit is REJECTED / SIPC_E_UNAVAILABLE at once.
 */
/* rules: P5 R1 */
static void
test_outside3_unknown_unavailable_idempotent_into_cooldown(void)
{
	enum sipc_worker_state cool = SIPC_WS_COOLDOWN;
	struct sipc_config c;
	struct sipc_stats st;
	struct sipc_result r;
	sipc_supervisor *s;
	int64_t t0;

	st_cfg_base(&c, "echo", NULL, 1);
	c.restart_intensity = 1;
	c.restart_window_ms = 600000;
	c.cooldown_ms = 600000;
	s = st_start(&c, 1, WAIT_MS);
	st_call_cmd(s, "crash exit 3", 0, 0, &r);       /* restart 1 of 1 */
	CU_ASSERT(r.outcome == SIPC_OUTCOME_UNKNOWN &&
	    r.error == SIPC_E_WORKER_DIED);
	sipc_result_release(&r);
	CU_ASSERT_FATAL(st_stats_wait(s, st_pred_respawned, NULL, WAIT_MS));
	st_call_cmd(s, "crash exit 3", 0, SIPC_REQ_IDEMPOTENT, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT_EQUAL(r.error, SIPC_E_UNAVAILABLE);
	CU_ASSERT(r.may_have_run);
	CU_ASSERT_EQUAL(r.attempts, 1);
	CU_ASSERT(r.exit.kind == SIPC_EXIT_CODE && r.exit.code == 3);
	sipc_result_release(&r);
	CU_ASSERT_FATAL(st_stats_wait(s, pred_slot0_state, &cool, WAIT_MS));
	t0 = tl_now_ms();
	st_call_cmd(s, NULL, 0, 0, &r);
	CU_ASSERT(r.outcome == SIPC_OUTCOME_REJECTED &&
	    r.error == SIPC_E_UNAVAILABLE && !r.may_have_run);
	CU_ASSERT(tl_now_ms() - t0 < 5000);
	sipc_result_release(&r);
	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	CU_ASSERT_EQUAL(st.restarts, 1);
	CU_ASSERT_EQUAL(st.workers[0].restarts, 1);
	CU_ASSERT_EQUAL(st.unknown, 2);
	CU_ASSERT_EQUAL(st.rejected, 1);
	CU_ASSERT_EQUAL(st.retried, 0);
	CU_ASSERT_EQUAL(st.pending, 0);
	sipc_stats_release(&st);
	sipc_destroy(s);
}

/* ------------------------------------------------------------ runbook */

#define NOT_PROVEN_WORDS "not proven (gone or identity reused), left alone"

/* Does the file hold `needle` (the file's text joined into one line,
 * so a phrase wrapped across lines is found)? */
static bool
file_has(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	char *buf, *p;
	size_t n;
	bool found;

	if (f == NULL)
		return false;
	buf = calloc(1, 1 << 20);
	n = buf != NULL ? fread(buf, 1, (1 << 20) - 1, f) : 0;
	fclose(f);
	if (buf == NULL)
		return false;
	buf[n] = '\0';
	for (p = buf; *p != '\0'; p++)
		if (*p == '\n')
			*p = ' ';
	found = strstr(buf, needle) != NULL;
	free(buf);
	return found;
}

/* The forked instance: one echo worker on the state directory, its pid
 * reported, then it waits for its SIGKILL. */
static void __attribute__((noreturn))
leftover_child(int fd, void *arg)
{
	struct sipc_config c;
	sipc_supervisor *s = NULL;
	int rc;

	st_cfg_base(&c, "echo", NULL, 1);
	c.state_dir = arg;
	c.log = NULL;
	if ((rc = sipc_create(&c, NULL, 0, &s)) < 0)
		sd_child_fail(fd, "create", rc);
	if ((rc = sipc_wait_ready(s, 1, WAIT_MS)) < 0)
		sd_child_fail(fd, "ready", rc);
	dprintf(fd, "ready %d\n", (int)st_worker_stats(s, 0).pid);
	for (;;)
		pause();
}

/*
 * docs/RUNBOOK.md section 4: after a crash, the next instance judges the
 * previous one's worker and "the log callback says which case happened"
 * in the words the runbook gives an operator to look for; a worker that
 * died with its supervisor is not proven, left alone, and
 * sipc_reconcile_leftovers() says the same.
 */
static void
test_outside3_runbook_leftover_log_words(void)
{
	char *dir = sd_make();
	struct sipc_leftover *l = NULL;
	struct sipc_config c;
	sipc_supervisor *s;
	char line[128];
	size_t n = 0;
	pid_t inst, worker = 0;

	if (st_skip_sandboxed("the worker's host pid is recorded")) {
		sd_remove(dir);
		return;
	}
	inst = sd_fork_instance(leftover_child, dir, line, sizeof(line),
	    WAIT_MS);
	CU_ASSERT_FATAL(sscanf(line, "ready %d", &worker) == 1 && worker > 0);
	sd_kill_instance(inst);
	CU_ASSERT_FATAL(tl_wait_until(st_pid_gone, &worker, WAIT_MS));
	st_cfg_base(&c, "echo", NULL, 1);
	c.state_dir = dir;
	s = st_start(&c, 1, WAIT_MS);
	CU_ASSERT_FATAL(sipc_reconcile_leftovers(s, &l, &n) == 0);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_EQUAL(l[0].verdict, SIPC_LEFTOVER_NOT_PROVEN);
	CU_ASSERT(st_log_has(NOT_PROVEN_WORDS));
	CU_ASSERT(file_has("docs/RUNBOOK.md", "\"" NOT_PROVEN_WORDS "\""));
	sipc_reconcile_leftovers_free(l);
	sipc_destroy(s);
	sd_remove(dir);
}

/* ------------------------------------------------------------ limits */

/*
 * CONTRACT 9.1 (max_payload: "payload bytes per frame, both ways") and
 * C6: a reply of exactly max_payload bytes is delivered whole; one of
 * max_payload + 1 (a header framelog writes by hand, past the runtime's
 * own check) is a protocol violation: UNKNOWN / SIPC_E_PROTOCOL, the
 * worker terminated for it and counted once, per worker and in total.
 */
/* rules: C6 F10 */
static void
test_outside3_reply_max_payload_boundary(void)
{
	struct sipc_config c;
	struct sipc_stats st;
	struct sipc_result r;
	sipc_supervisor *s;
	char cmd[64];
	bool pattern = true;
	size_t i;

	st_cfg_base(&c, "framelog", NULL, 1);
	c.max_payload = 4096;
	s = st_start(&c, 1, WAIT_MS);
	snprintf(cmd, sizeof(cmd), "slowbig %u 0", c.max_payload);
	st_call_cmd(s, cmd, WAIT_MS, 0, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_OK);
	CU_ASSERT_EQUAL(r.reply_len, c.max_payload);
	for (i = 0; i < r.reply_len; i++)
		if (r.reply[i] != (uint8_t)((r.request_id + i) & 0xff))
			pattern = false;
	CU_ASSERT(pattern);
	sipc_result_release(&r);

	snprintf(cmd, sizeof(cmd), "slowbig %u 0", c.max_payload + 1);
	st_call_cmd(s, cmd, WAIT_MS, 0, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT_EQUAL(r.error, SIPC_E_PROTOCOL);
	CU_ASSERT(r.reply == NULL && r.reply_len == 0);
	CU_ASSERT(r.exit.kind == SIPC_EXIT_TERMINATED &&
	    r.exit.reason == SIPC_TERM_PROTOCOL);
	sipc_result_release(&r);
	CU_ASSERT(st_stats_wait(s, st_pred_respawned, NULL, WAIT_MS));
	CU_ASSERT_FATAL(sipc_stats_get(s, &st) == 0);
	CU_ASSERT_EQUAL(st.protocol_violations, 1);
	CU_ASSERT_EQUAL(st.workers[0].protocol_violations, 1);
	CU_ASSERT_EQUAL(st.completed_ok, 1);
	CU_ASSERT_EQUAL(st.unknown, 1);
	sipc_stats_release(&st);
	sipc_destroy(s);
}

static void
release_only(void *arg, struct sipc_result *res)
{
	(void)arg;
	sipc_result_release(res);
}

/*
 * A refusal for want of room is one submitted and one rejected request,
 * whichever bound refused it: the ring (counted so) or the memory
 * ceiling (counted nowhere before), through sipc_submit() (SIPC_E_FULL)
 * and sipc_call() (REJECTED / SIPC_E_FULL) alike.
 */
static void
test_outside3_mem_full_refusal_counted(void)
{
	char *argv[] = { "slow", "3000", NULL };
	static char pay[60];
	struct sipc_request rq = { .payload = pay, .len = sizeof(pay),
	    .flags = SIPC_REQ_NOWAIT };
	struct sipc_config c;
	struct sipc_stats a, b;
	struct sipc_result r;
	sipc_supervisor *s;
	unsigned i;
	int rc = 0;

	st_cfg_base(&c, "slow", argv, 1);
	c.max_payload = 64;
	c.ring_bytes = 200;
	c.mem_ceiling = 200;
	c.stall_ms = 60000;
	s = st_start(&c, 1, WAIT_MS);
	for (i = 0; i < 10 && rc == 0; i++)
		rc = sipc_submit(s, &rq, release_only, NULL, NULL);
	CU_ASSERT_EQUAL(rc, SIPC_E_FULL);
	CU_ASSERT_FATAL(sipc_stats_get(s, &a) == 0);
	/* the ceiling, not the ring, is what is full */
	CU_ASSERT(a.mem_held + sizeof(pay) > c.mem_ceiling - c.max_payload);
	CU_ASSERT_EQUAL(sipc_submit(s, &rq, release_only, NULL, NULL),
	    SIPC_E_FULL);
	CU_ASSERT_FATAL(sipc_call(s, &rq, &r) == 0);
	CU_ASSERT(r.outcome == SIPC_OUTCOME_REJECTED && r.error == SIPC_E_FULL);
	sipc_result_release(&r);
	CU_ASSERT_FATAL(sipc_stats_get(s, &b) == 0);
	CU_ASSERT_EQUAL(b.rejected, a.rejected + 2);
	CU_ASSERT_EQUAL(b.submitted, a.submitted + 2);
	sipc_stats_release(&a);
	sipc_stats_release(&b);
	sipc_destroy(s);
}

static void
never_done(void *arg, struct sipc_result *res)
{
	CU_FAIL("a refused submit's callback ran");
	sipc_result_release(res);
}

/*
 * CONTRACT 9.1 (ring_bytes: "queued payload bytes per worker") and M1,
 * M2: with the worker's one in-flight place taken, its queue takes
 * payloads up to exactly ring_bytes (64 + 36 = 100); one byte more is
 * SIPC_E_FULL at once under SIPC_REQ_NOWAIT, with no callback, and what
 * was queued is untouched: each queued request still gets exactly one
 * outcome (REJECTED / SIPC_E_SHUTDOWN at destroy, never sent; the one
 * in flight UNKNOWN / SIPC_E_SHUTDOWN).
 */
static void
test_outside3_ring_bytes_boundary(void)
{
	static char big[64], mid[36], one[1];
	struct st_outslot o[3] = { { &box, 0 }, { &box, 1 }, { &box, 2 } };
	struct sipc_request q64 = { .payload = big, .len = sizeof(big),
	    .flags = SIPC_REQ_NOWAIT };
	struct sipc_request q36 = { .payload = mid, .len = sizeof(mid),
	    .flags = SIPC_REQ_NOWAIT };
	struct sipc_request q1 = { .payload = one, .len = sizeof(one),
	    .flags = SIPC_REQ_NOWAIT };
	struct sipc_worker_stats ws;
	struct sipc_config c;
	sipc_supervisor *s;

	st_cfg_base(&c, "echo", NULL, 1);
	c.max_inflight = 1;
	c.max_payload = 64;
	c.ring_bytes = 100;
	c.mem_ceiling = 1 << 20;
	c.stall_ms = 60000;
	s = st_start(&c, 1, WAIT_MS);
	st_outbox_reset(&box);
	st_submit_cmd(s, "hang", 0, &o[0]);
	CU_ASSERT_FATAL(st_stats_wait(s, pred_inflight1, NULL, WAIT_MS));
	CU_ASSERT_EQUAL(sipc_submit(s, &q64, st_outbox_done, &o[1], NULL), 0);
	CU_ASSERT_EQUAL(sipc_submit(s, &q36, st_outbox_done, &o[2], NULL), 0);
	CU_ASSERT_EQUAL(sipc_submit(s, &q1, never_done, NULL, NULL),
	    SIPC_E_FULL);
	ws = st_worker_stats(s, 0);
	CU_ASSERT(ws.inflight == 1 && ws.queued == 2);
	CU_ASSERT_EQUAL(st_pool_stats(s).pending, 3);
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
	CU_ASSERT_EQUAL(st_outbox_total(&box), 3);
	CU_ASSERT(box.calls[0] == 1 && box.calls[1] == 1 &&
	    box.calls[2] == 1);
	/* sipc_destroy(): written ones end UNKNOWN / SIPC_E_SHUTDOWN */
	CU_ASSERT(box.res[0].outcome == SIPC_OUTCOME_UNKNOWN &&
	    box.res[0].error == SIPC_E_SHUTDOWN && box.res[0].may_have_run);
	CU_ASSERT(box.res[1].outcome == SIPC_OUTCOME_REJECTED &&
	    box.res[1].error == SIPC_E_SHUTDOWN && !box.res[1].may_have_run);
	CU_ASSERT(box.res[2].outcome == SIPC_OUTCOME_REJECTED &&
	    box.res[2].error == SIPC_E_SHUTDOWN && !box.res[2].may_have_run);
	st_outbox_release(&box);
}

/* What the completion callback of the first request saw when it
 * submitted from the reader's thread: the return code and how long the
 * call took. */
static struct {
	pthread_mutex_t mu;
	sipc_supervisor *s;
	int rc_blocking, rc_deadline;
	int64_t took_ms;
	bool ran;
} incb = { .mu = PTHREAD_MUTEX_INITIALIZER };

static char pay60[60];

static void
submit_in_callback(void *arg, struct sipc_result *res)
{
	struct sipc_request rq = { .payload = pay60, .len = sizeof(pay60) };
	struct sipc_request rd = { .payload = pay60, .len = sizeof(pay60),
	    .timeout_ms = 5000 };
	int64_t t0 = tl_now_ms();
	int a, b;

	a = sipc_submit(incb.s, &rq, never_done, NULL, NULL);
	b = sipc_submit(incb.s, &rd, never_done, NULL, NULL);
	pthread_mutex_lock(&incb.mu);
	incb.rc_blocking = a;
	incb.rc_deadline = b;
	incb.took_ms = tl_now_ms() - t0;
	incb.ran = true;
	pthread_mutex_unlock(&incb.mu);
	sipc_result_release(res);
}

static bool
incb_ran(void *arg)
{
	bool r;

	pthread_mutex_lock(&incb.mu);
	r = incb.ran;
	pthread_mutex_unlock(&incb.mu);
	return r;
}

/*
 * sipc.h (sipc_done_fn, sipc_submit) and CONTRACT M2: a submit from a
 * completion callback never blocks: when the memory ceiling has no room
 * (the callback's own reply and a request in flight hold it), a submit
 * without SIPC_REQ_NOWAIT, with or without a deadline, returns
 * SIPC_E_FULL at once and its callback never runs.
 */
/* rules: M2 */
static void
test_outside3_callback_submit_memory_full_never_blocks(void)
{
	char *argv[] = { "slow", "300", NULL };
	struct st_outslot o = { &box, 0 };
	struct sipc_request rq = { .payload = pay60, .len = sizeof(pay60) };
	struct sipc_config c;
	sipc_supervisor *s;

	st_cfg_base(&c, "slow", argv, 1);
	c.max_payload = 64;
	c.ring_bytes = 200;
	c.mem_ceiling = 200;          /* 2 x 60 held + 64 reserve: no room */
	c.stall_ms = 60000;
	s = st_start(&c, 1, WAIT_MS);
	st_outbox_reset(&box);
	incb.s = s;
	incb.ran = false;
	CU_ASSERT_FATAL(sipc_submit(s, &rq, submit_in_callback, NULL, NULL) ==
	    0);
	CU_ASSERT_FATAL(sipc_submit(s, &rq, st_outbox_done, &o, NULL) == 0);
	CU_ASSERT_FATAL(tl_wait_until(incb_ran, NULL, WAIT_MS));
	CU_ASSERT_EQUAL(incb.rc_blocking, SIPC_E_FULL);
	CU_ASSERT_EQUAL(incb.rc_deadline, SIPC_E_FULL);
	CU_ASSERT(incb.took_ms < 1000);
	CU_ASSERT(st_outbox_wait(&box, 1, WAIT_MS));
	CU_ASSERT_EQUAL(box.res[0].outcome, SIPC_OUTCOME_OK);
	st_outbox_release(&box);
	CU_ASSERT(st_stats_wait(s, pred_settled, NULL, WAIT_MS));
	sipc_destroy(s);
}

/* ------------------------------------------------------------ names */

/* A short lower-case name: [a-z_]+, at most 32 characters. */
static bool
lower_name(const char *n)
{
	return n != NULL && n[0] != '\0' && strlen(n) <= 32 &&
	    strspn(n, "abcdefghijklmnopqrstuvwxyz_") == strlen(n);
}

/* `n` names, all lower-case, pairwise different. */
static void
check_names(const char *const *v, unsigned n)
{
	unsigned i, j;

	for (i = 0; i < n; i++) {
		CU_ASSERT(lower_name(v[i]));
		for (j = 0; j < i; j++)
			CU_ASSERT(v[i] != NULL && v[j] != NULL &&
			    strcmp(v[i], v[j]) != 0);
	}
}

/*
 * sipc_strerror(3): every *_name() gives a short lower-case name, one per
 * value; the containment and cgroup modes are named as the page lists
 * them; a value out of range gets a name too (never NULL); the message
 * of a positive errno is that of the negative one ("leniently"); and
 * sipc_exit_format() writes the page's own example word for word.
 */
static void
test_outside3_names_and_exit_format_as_documented(void)
{
	const char *v[16];
	struct sipc_exit e = { .kind = SIPC_EXIT_SIGNAL, .signo = 11,
	    .core_dumped = true };
	char buf[128];
	unsigned i;

	for (i = 0; i <= SIPC_OUTCOME_UNKNOWN; i++)
		v[i] = sipc_outcome_name((enum sipc_outcome)i);
	check_names(v, i);
	for (i = 0; i <= SIPC_EXIT_OOM; i++)
		v[i] = sipc_exit_kind_name((enum sipc_exit_kind)i);
	check_names(v, i);
	for (i = 0; i <= SIPC_TERM_POLICY; i++)
		v[i] = sipc_term_reason_name((enum sipc_term_reason)i);
	check_names(v, i);
	for (i = 0; i <= SIPC_WS_FAILED; i++)
		v[i] = sipc_worker_state_name((enum sipc_worker_state)i);
	check_names(v, i);
	for (i = 0; i < 7; i++)
		v[i] = sipc_guarantee_name(1u << i);
	check_names(v, i);
	CU_ASSERT_STRING_EQUAL(sipc_containment_name(SIPC_CONTAIN_AUTO),
	    "auto");
	CU_ASSERT_STRING_EQUAL(sipc_containment_name(
	    SIPC_CONTAIN_PROCESS_GROUP), "process_group");
	CU_ASSERT_STRING_EQUAL(sipc_containment_name(
	    SIPC_CONTAIN_PID_NAMESPACE), "pid_namespace");
	CU_ASSERT_STRING_EQUAL(sipc_containment_name(
	    SIPC_CONTAIN_USER_NAMESPACE), "user_namespace");
	CU_ASSERT_STRING_EQUAL(sipc_cgroup_mode_name(SIPC_CGROUP_AUTO), "auto");
	CU_ASSERT_STRING_EQUAL(sipc_cgroup_mode_name(SIPC_CGROUP_OFF), "off");
	CU_ASSERT_STRING_EQUAL(sipc_cgroup_mode_name(SIPC_CGROUP_REQUIRED),
	    "required");

	CU_ASSERT(lower_name(sipc_outcome_name((enum sipc_outcome)99)));
	CU_ASSERT(lower_name(sipc_exit_kind_name((enum sipc_exit_kind)99)));
	CU_ASSERT(lower_name(sipc_term_reason_name(
	    (enum sipc_term_reason)99)));
	CU_ASSERT(lower_name(sipc_worker_state_name(
	    (enum sipc_worker_state)99)));
	CU_ASSERT(lower_name(sipc_containment_name((enum sipc_containment)99)));
	CU_ASSERT(lower_name(sipc_cgroup_mode_name((enum sipc_cgroup_mode)99)));
	CU_ASSERT(sipc_guarantee_name(0) != NULL);
	CU_ASSERT(sipc_guarantee_name(3) != NULL);
	CU_ASSERT(sipc_guarantee_name(1u << 7) != NULL);

	CU_ASSERT_STRING_EQUAL(sipc_strerror(EINVAL), sipc_strerror(-EINVAL));
	CU_ASSERT_STRING_EQUAL(sipc_strerror(ENOENT), sipc_strerror(-ENOENT));

	CU_ASSERT(sipc_exit_format(&e, buf, sizeof(buf)) > 0);
	CU_ASSERT_STRING_EQUAL(buf, "killed by signal 11 (core dumped)");
}

/* ------------------------------------------------ calls from callbacks */

/* What the calls a callback may make returned there: how many ran, how
 * many answered 0, and any answer the documents do not allow (0 and,
 * once destroy has begun, SIPC_E_SHUTDOWN are allowed). */
static struct {
	pthread_mutex_t mu;
	sipc_supervisor *s;        /* set after sipc_create() returned */
	unsigned log_calls, log_ok, done_calls, done_ok, bad;
	int bad_rc;
} cbk = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* stats, list, leftovers: all three allowed on a library thread. */
static void
allowed_calls(sipc_supervisor *s, unsigned *calls, unsigned *ok)
{
	struct sipc_unresolved *u = NULL;
	struct sipc_leftover *l = NULL;
	struct sipc_stats st;
	size_t n;
	int rc[3];
	unsigned i;

	rc[0] = sipc_stats_get(s, &st);
	if (rc[0] == 0)
		sipc_stats_release(&st);
	rc[1] = sipc_reconcile_list(s, &u, &n);
	if (rc[1] == 0)
		sipc_reconcile_free(u);
	rc[2] = sipc_reconcile_leftovers(s, &l, &n);
	if (rc[2] == 0)
		sipc_reconcile_leftovers_free(l);
	pthread_mutex_lock(&cbk.mu);
	(*calls)++;
	if (rc[0] == 0 && rc[1] == 0 && rc[2] == 0)
		(*ok)++;
	for (i = 0; i < 3; i++)
		if (rc[i] != 0 && rc[i] != SIPC_E_SHUTDOWN) {
			cbk.bad++;
			cbk.bad_rc = rc[i];
		}
	pthread_mutex_unlock(&cbk.mu);
}

static void
cbk_log(void *arg, enum sipc_log_level lvl, uint32_t wid, uint32_t gen,
        pid_t pid, const char *msg)
{
	sipc_supervisor *s;

	pthread_mutex_lock(&cbk.mu);
	s = cbk.s;
	pthread_mutex_unlock(&cbk.mu);
	if (s != NULL)
		allowed_calls(s, &cbk.log_calls, &cbk.log_ok);
}

static void
cbk_done(void *arg, struct sipc_result *res)
{
	allowed_calls(cbk.s, &cbk.done_calls, &cbk.done_ok);
	sipc_result_release(res);
}

static void
cbk_submit(sipc_supervisor *s, const char *cmd, unsigned timeout_ms,
           unsigned flags)
{
	char p[64];
	struct sipc_request rq = { .payload = p, .timeout_ms = timeout_ms,
	    .flags = flags };

	rq.len = (size_t)snprintf(p, sizeof(p), "%c%c%c%c%s", 0, 'C', 'M',
	    'D', cmd);
	CU_ASSERT(sipc_submit(s, &rq, cbk_done, NULL, NULL) == 0);
}

/* The completion callback has run more than *(unsigned *)arg times. */
static bool
cbk_done_n(void *arg)
{
	bool r;

	pthread_mutex_lock(&cbk.mu);
	r = cbk.done_calls > *(unsigned *)arg;
	pthread_mutex_unlock(&cbk.mu);
	return r;
}

static bool
pred_restarts(const struct sipc_stats *st, void *arg)
{
	return st->restarts >= *(unsigned *)arg && st->pending == 0;
}

/*
 * sipc.h "Threads" and sipc_log_fn / sipc_done_fn: no library lock is
 * held while a completion or log callback runs, and sipc_stats_get()
 * and the reconcile calls are allowed there.  Every log line (worker
 * diagnostics, a crash, a deadline's CANCEL, a protocol
 * violation, a lost channel, restarts, destroy) and every completion
 * (one of each outcome but REJECTED) calls all three: none blocks (the test would hang), each answers 0
 * (SIPC_E_SHUTDOWN once destroy has begun).
 */
/* rules: TH1 */
static void
test_outside3_calls_allowed_in_log_and_completion_callbacks(void)
{
	char *dir = sd_make();
	struct sipc_config c;
	static const char *const cmds[6] = { "pid", "error 5", "crash segv",
	    "hang", "badframe", "closechan" };
	sipc_supervisor *s;
	unsigned want = 3, i;    /* segv, badframe, closechan */

	st_cfg_base(&c, "echo", NULL, 1);
	c.state_dir = dir;
	c.log = cbk_log;
	c.stall_ms = 60000;
	pthread_mutex_lock(&cbk.mu);
	cbk.s = NULL;
	cbk.log_calls = cbk.log_ok = cbk.done_calls = cbk.done_ok = 0;
	cbk.bad = 0;
	pthread_mutex_unlock(&cbk.mu);
	s = st_start(&c, 1, WAIT_MS);
	pthread_mutex_lock(&cbk.mu);
	cbk.s = s;
	pthread_mutex_unlock(&cbk.mu);
	for (i = 0; i < 6; i++) {
		cbk_submit(s, cmds[i], i == 3 ? 200 : 0, 0);
		CU_ASSERT(tl_wait_until(cbk_done_n, &i, WAIT_MS));
	}
	CU_ASSERT(st_stats_wait(s, pred_restarts, &want, WAIT_MS));
	CU_ASSERT(sipc_wait_ready(s, 1, WAIT_MS) == 0);
	sipc_destroy(s);
	pthread_mutex_lock(&cbk.mu);
	CU_ASSERT_EQUAL(cbk.done_calls, 6);
	CU_ASSERT_EQUAL(cbk.done_ok, 6);
	CU_ASSERT(cbk.log_calls >= 4 && cbk.log_ok >= 4);
	CU_ASSERT_EQUAL(cbk.bad, 0);
	if (cbk.bad != 0)
		fprintf(stderr, "a callback's call answered %d (%s)\n",
		    cbk.bad_rc, sipc_strerror(cbk.bad_rc));
	cbk.s = NULL;
	pthread_mutex_unlock(&cbk.mu);
	sd_remove(dir);
}

static bool
pred_mem_zero(const struct sipc_stats *st, void *arg)
{
	return st->mem_held == 0;
}

/*
 * sipc_submit() in sipc.h and CONTRACT M4: requests are admitted only
 * while min(max_payload, mem_ceiling - max_payload) bytes of the
 * ceiling stay free for replies.  max_payload 64: with mem_ceiling 200
 * (reserve 64) requests are held up to exactly 136 bytes, with 100
 * (reserve 36) up to exactly 64; one byte more is SIPC_E_FULL at once
 * under SIPC_REQ_NOWAIT, no callback, and mem_held says what is held.
 */
/* rules: M4 */
static void
test_outside3_mem_ceiling_admits_to_the_reserve(void)
{
	static const struct { size_t ceiling; size_t lens[3]; } k[] = {
		{ 200, { 60, 60, 16 } },   /* 136 = 200 - 64 */
		{ 100, { 64, 0, 0 } },     /* 64 = 100 - 36 */
	};
	static char pay[64];
	char *argv[] = { "slow", "20000", NULL };
	struct sipc_config c;
	struct sipc_request rq = { .payload = pay, .flags = SIPC_REQ_NOWAIT };
	struct st_outslot o[3] = { { &box, 0 }, { &box, 1 }, { &box, 2 } };
	sipc_supervisor *s;
	size_t held;
	unsigned i, j, n;

	for (i = 0; i < 2; i++) {
		st_cfg_base(&c, "slow", argv, 1);
		c.max_payload = 64;
		c.ring_bytes = 88;
		c.mem_ceiling = k[i].ceiling;
		c.stall_ms = 60000;
		s = st_start(&c, 1, WAIT_MS);
		st_outbox_reset(&box);
		CU_ASSERT(st_stats_wait(s, pred_mem_zero, NULL, WAIT_MS));
		held = 0;
		for (j = n = 0; j < 3 && k[i].lens[j] != 0; j++, n++) {
			rq.len = k[i].lens[j];
			CU_ASSERT_EQUAL(sipc_submit(s, &rq, st_outbox_done,
			    &o[j], NULL), 0);
			held += rq.len;
		}
		CU_ASSERT_EQUAL(held, c.mem_ceiling - (c.mem_ceiling -
		    c.max_payload < c.max_payload ? c.mem_ceiling -
		    c.max_payload : c.max_payload));
		rq.len = 1;
		CU_ASSERT_EQUAL(sipc_submit(s, &rq, never_done, NULL, NULL),
		    SIPC_E_FULL);
		CU_ASSERT_EQUAL(st_pool_stats(s).mem_held, held);
		CU_ASSERT_EQUAL(st_pool_stats(s).pending, n);
		sipc_destroy(s);
		CU_ASSERT_EQUAL(st_outbox_total(&box), n);
		st_outbox_release(&box);
	}
}

int
main(void)
{
	st_no_core_files();
	tl_suite("outside3", (tl_test[]){
	    { "test_outside3_man_synopsis_compiles",
	      test_outside3_man_synopsis_compiles },
	    { "test_outside3_readme_api_snippets_compile",
	      test_outside3_readme_api_snippets_compile },
	    { "test_outside3_outcome_counters_move_once",
	      test_outside3_outcome_counters_move_once },
	    { "test_outside3_result_fields_worker_error_and_unsent_timeout",
	      test_outside3_result_fields_worker_error_and_unsent_timeout },
	    { "test_outside3_diag_cut_exactly_at_line_max",
	      test_outside3_diag_cut_exactly_at_line_max },
	    { "test_outside3_diag_tail_capped_keeps_newest",
	      test_outside3_diag_tail_capped_keeps_newest },
	    { "test_outside3_unknown_timeout_after_deadline_termination",
	      test_outside3_unknown_timeout_after_deadline_termination },
	    { "test_outside3_unknown_unavailable_idempotent_into_cooldown",
	      test_outside3_unknown_unavailable_idempotent_into_cooldown },
	    { "test_outside3_runbook_leftover_log_words",
	      test_outside3_runbook_leftover_log_words },
	    { "test_outside3_reply_max_payload_boundary",
	      test_outside3_reply_max_payload_boundary },
	    { "test_outside3_ring_bytes_boundary",
	      test_outside3_ring_bytes_boundary },
	    { "test_outside3_mem_full_refusal_counted",
	      test_outside3_mem_full_refusal_counted },
	    { "test_outside3_callback_submit_memory_full_never_blocks",
	      test_outside3_callback_submit_memory_full_never_blocks },
	    { "test_outside3_names_and_exit_format_as_documented",
	      test_outside3_names_and_exit_format_as_documented },
	    { "test_outside3_calls_allowed_in_log_and_completion_callbacks",
	      test_outside3_calls_allowed_in_log_and_completion_callbacks },
	    { "test_outside3_mem_ceiling_admits_to_the_reserve",
	      test_outside3_mem_ceiling_admits_to_the_reserve },
	    { NULL, NULL } });
	return tl_run();
}

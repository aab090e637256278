/*
 * docs_test.c - what the public documents show, checked from outside
 * (only the public headers, the fixtures and the man pages):
 *   - the man pages' SYNOPSIS sections and README's API snippets compile
 *     against include/ as shown;
 *   - docs/RUNBOOK.md's log words are the ones the library writes;
 *   - the names of the public enums and the exit format, as sipc(3)
 *     gives them.
 *
 * Threads: the CUnit thread drives everything; callbacks run on
 * library threads and touch only what is under a mutex below.
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
test_docs_man_synopsis_compiles(void)
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
test_docs_readme_api_snippets_compile(void)
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
test_docs_runbook_leftover_log_words(void)
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
	TL_EQ_FATAL(n, 1);
	TL_EQ(l[0].verdict, SIPC_LEFTOVER_NOT_PROVEN);
	CU_ASSERT(st_log_has(NOT_PROVEN_WORDS));
	CU_ASSERT(file_has("docs/RUNBOOK.md", "\"" NOT_PROVEN_WORDS "\""));
	sipc_reconcile_leftovers_free(l);
	sipc_destroy(s);
	sd_remove(dir);
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
test_docs_names_and_exit_format_as_documented(void)
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
	TL_STREQ(sipc_containment_name(SIPC_CONTAIN_AUTO),
	    "auto");
	TL_STREQ(sipc_containment_name(
	    SIPC_CONTAIN_PROCESS_GROUP), "process_group");
	TL_STREQ(sipc_containment_name(
	    SIPC_CONTAIN_PID_NAMESPACE), "pid_namespace");
	TL_STREQ(sipc_containment_name(
	    SIPC_CONTAIN_USER_NAMESPACE), "user_namespace");
	TL_STREQ(sipc_cgroup_mode_name(SIPC_CGROUP_AUTO), "auto");
	TL_STREQ(sipc_cgroup_mode_name(SIPC_CGROUP_OFF), "off");
	TL_STREQ(sipc_cgroup_mode_name(SIPC_CGROUP_REQUIRED),
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
	CU_ASSERT(sipc_guarantee_name(1u << 11) != NULL);

	TL_STREQ(sipc_strerror(EINVAL), sipc_strerror(-EINVAL));
	TL_STREQ(sipc_strerror(ENOENT), sipc_strerror(-ENOENT));

	CU_ASSERT(sipc_exit_format(&e, buf, sizeof(buf)) > 0);
	TL_STREQ(buf, "killed by signal 11 (core dumped)");
}


int
main(void)
{
	st_no_core_files();
	tl_suite("docs", (tl_test[]){
	    { "test_docs_man_synopsis_compiles",
	      test_docs_man_synopsis_compiles },
	    { "test_docs_readme_api_snippets_compile",
	      test_docs_readme_api_snippets_compile },
	    { "test_docs_runbook_leftover_log_words",
	      test_docs_runbook_leftover_log_words },
	    { "test_docs_names_and_exit_format_as_documented",
	      test_docs_names_and_exit_format_as_documented },
	    { NULL, NULL } });
	return tl_run();
}

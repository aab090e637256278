/*
 * sbxident_test.c - the sandbox's identity and filesystem rules, seen
 * from inside a worker (fixtures/procinfo.c) and from the host:
 *   - its host uid and gid are not 0 (as root: sandbox_uid/gid; as a
 *     normal user: that user's), no capability in any set, no_new_privs,
 *     the system-call filter, a new user namespace refused;
 *   - writes to /, /etc and /usr of its view fail, to its scratch
 *     directory and /tmp succeed (Landlock, where the kernel has it);
 *   - a path of sandbox_ro_paths is readable and not writable;
 *   - a #! worker sees its script, its interpreter and what the host
 *     declared, not the script's directory;
 *   - the start-up probe of no_privilege and filesystem_rules fails when
 *     the provider leaves them out (a test hook) and passes otherwise.
 * Every test runs the sandbox provider, whatever SIPC_TEST_PROVIDER
 * says; without bwrap (or a kernel without Landlock, for the rules)
 * they skip, saying why.
 *
 * Threads: the CUnit thread only (sipc_call()).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/landlock.h>

#include "sipc.h"
#include "sipctest.h"
#include "testlib.h"
#include "provider/provider.h"

#define WAIT_MS 20000

static char root[64];
static const char *root_base = "/tmp";   /* where cfg_make's root goes */

static bool
have_sandbox(void)
{
	const char *b;

	if (sipc__sandbox_bwrap(&b) == 0)
		return true;
	tl_skip("no trusted bwrap at " SIPC__BWRAP_DEFAULT);
	return false;
}

static bool
have_landlock(void)
{
	if (syscall(SYS_landlock_create_ruleset, NULL, 0,
	    LANDLOCK_CREATE_RULESET_VERSION) > 0)
		return true;
	tl_skip("this kernel has no Landlock");
	return false;
}

static void
cfg_make(struct sipc_config *c, const char *path, const char *ro)
{
	st_cfg_base(c, "procinfo", NULL, 1);
	c->provider = "sandbox";
	if (path != NULL)
		c->path = path;
	snprintf(root, sizeof(root), "%s/sipc-sbxid-XXXXXX", root_base);
	CU_ASSERT_FATAL(mkdtemp(root) != NULL);
	CU_ASSERT(chmod(root, 0755) == 0);
	c->scratch_root = root;
	c->sandbox_ro_paths = ro;
}

static void
done(sipc_supervisor *s)
{
	sipc_destroy(s);
	CU_ASSERT(rmdir(root) == 0);
}

/* The reply to `req` as text in out. */
static void
ask(sipc_supervisor *s, const char *req, char *out, size_t cap)
{
	struct sipc_request rq = { .payload = req, .len = strlen(req),
	    .timeout_ms = WAIT_MS };
	struct sipc_result r;

	out[0] = '\0';
	CU_ASSERT_FATAL(sipc_call(s, &rq, &r) == 0);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_OK);
	snprintf(out, cap, "%.*s", (int)r.reply_len, (const char *)r.reply);
	sipc_result_release(&r);
}

/* "Name=value;" of the status reply. */
static bool
has(const char *status, const char *name_value)
{
	char want[96];

	snprintf(want, sizeof(want), "%s;", name_value);
	return strstr(status, want) != NULL;
}

/* The host's view of the worker: the Uid: and Gid: lines of the only
 * child of its sipc-init (the pid a worker's stats display). */
static bool
host_ids(pid_t init, unsigned long ids[8])
{
	char path[96], line[256];
	long child = 0;
	int got = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)init,
	    (int)init);
	if ((f = fopen(path, "re")) == NULL)
		return false;
	if (fscanf(f, "%ld", &child) != 1)
		child = 0;
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%ld/status", child);
	if (child <= 0 || (f = fopen(path, "re")) == NULL)
		return false;
	while (fgets(line, sizeof(line), f) != NULL) {
		unsigned long *r = strncmp(line, "Uid:", 4) == 0 ? ids :
		    strncmp(line, "Gid:", 4) == 0 ? ids + 4 : NULL;

		if (r != NULL && sscanf(line + 4, "%lu %lu %lu %lu", &r[0],
		    &r[1], &r[2], &r[3]) == 4)
			got++;
	}
	fclose(f);
	return got == 2;
}

/*
 * The worker is not root on the host, holds no capability, has
 * no_new_privs and the filter, and cannot make a user namespace.
 */
/* rules: PB26 */
static void
test_sbxident_worker_unprivileged(void)
{
	unsigned long ids[8];
	struct sipc_config c;
	sipc_supervisor *s;
	char out[1024];
	unsigned want = geteuid() == 0 ? 65534 : (unsigned)geteuid();
	unsigned want_g = geteuid() == 0 ? 65534 : (unsigned)getegid();

	if (!have_sandbox())
		return;
	cfg_make(&c, NULL, NULL);
	s = st_start(&c, 1, WAIT_MS);
	ask(s, "ident", out, sizeof(out));
	printf("sbxident: %s (host euid %u)\n", out, (unsigned)geteuid());
	CU_ASSERT(strncmp(out, "uid=0 ", 6) != 0);
	CU_ASSERT_FATAL(host_ids((pid_t)st_worker_stats(s, 0).pid, ids));
	printf("sbxident: host uids %lu %lu %lu %lu gids %lu %lu %lu %lu\n",
	    ids[0], ids[1], ids[2], ids[3], ids[4], ids[5], ids[6], ids[7]);
	for (int i = 0; i < 8; i++)
		CU_ASSERT_EQUAL(ids[i], i < 4 ? want : want_g);
	ask(s, "status", out, sizeof(out));
	printf("sbxident: %s\n", out);
	CU_ASSERT(has(out, "CapInh=0000000000000000"));
	CU_ASSERT(has(out, "CapPrm=0000000000000000"));
	CU_ASSERT(has(out, "CapEff=0000000000000000"));
	CU_ASSERT(has(out, "CapBnd=0000000000000000"));
	CU_ASSERT(has(out, "CapAmb=0000000000000000"));
	CU_ASSERT(has(out, "NoNewPrivs=1"));
	CU_ASSERT(has(out, "Seccomp=2"));
	ask(s, "unshare", out, sizeof(out));
	printf("sbxident: %s\n", out);
	CU_ASSERT(strncmp(out, "unshare=", 8) == 0 &&
	    strcmp(out, "unshare=made") != 0);
	done(s);
}

/* The worker's own scratch directory, from its environment. */
static void
worker_scratch(sipc_supervisor *s, char *dir, size_t len)
{
	char out[512], *p;

	ask(s, "ident", out, sizeof(out));
	p = strstr(out, "scratch=");
	snprintf(dir, len, "%s", p != NULL ? p + 8 : "");
}

/*
 * Writes outside the scratch directory and /tmp are refused, inside
 * them they work; a configured read-only path is read, not written,
 * and a host file not declared is not there.
 */
/* rules: PB27 */
static void
test_sbxident_writes_outside_scratch_refused(void)
{
	char ro[] = "/tmp/sipc-sbxro-XXXXXX", other[] = "/tmp/sipc-sbxo-XXXXXX";
	char file[96], ofile[96], req[320], scr[256], out[256];
	struct sipc_config c;
	sipc_supervisor *s;
	int fd;

	if (!have_sandbox() || !have_landlock())
		return;
	CU_ASSERT_FATAL(mkdtemp(ro) != NULL && mkdtemp(other) != NULL);
	CU_ASSERT(chmod(ro, 0755) == 0 && chmod(other, 0755) == 0);
	snprintf(file, sizeof(file), "%s/font", ro);
	snprintf(ofile, sizeof(ofile), "%s/secret", other);
	CU_ASSERT((fd = open(file, O_WRONLY | O_CREAT, 0644)) >= 0 &&
	    write(fd, "f", 1) == 1 && close(fd) == 0);
	CU_ASSERT((fd = open(ofile, O_WRONLY | O_CREAT, 0644)) >= 0 &&
	    write(fd, "s", 1) == 1 && close(fd) == 0);
	cfg_make(&c, NULL, ro);
	s = st_start(&c, 1, WAIT_MS);
	static const char *const refused[] = { "/sipc-w", "/etc/sipc-w",
	    "/usr/sipc-w" };
	for (size_t i = 0; i < 3; i++) {
		snprintf(req, sizeof(req), "write %s", refused[i]);
		ask(s, req, out, sizeof(out));
		printf("sbxident: %s: %s\n", req, out);
		CU_ASSERT(strncmp(out, "write=0", 7) == 0);
	}
	worker_scratch(s, scr, sizeof(scr));
	CU_ASSERT_FATAL(scr[0] == '/');
	snprintf(req, sizeof(req), "write %s/w", scr);
	ask(s, req, out, sizeof(out));
	printf("sbxident: %s: %s\n", req, out);
	CU_ASSERT_STRING_EQUAL(out, "write=1");
	ask(s, "write /tmp/sipc-w", out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "write=1");
	snprintf(req, sizeof(req), "read %s", file);
	ask(s, req, out, sizeof(out));
	printf("sbxident: %s: %s\n", req, out);
	CU_ASSERT_STRING_EQUAL(out, "read=1");
	snprintf(req, sizeof(req), "write %s/new", ro);
	ask(s, req, out, sizeof(out));
	CU_ASSERT(strncmp(out, "write=0", 7) == 0);
	snprintf(req, sizeof(req), "read %s", ofile);
	ask(s, req, out, sizeof(out));
	CU_ASSERT(strncmp(out, "read=0", 6) == 0);
	done(s);
	unlink(file);
	unlink(ofile);
	rmdir(ro);
	rmdir(other);
}

/*
 * A #! worker gets its script, its interpreter and the declared program
 * it runs; the script's sibling file is not in its view.
 */
/* rules: SB9 */
static void
test_sbxident_script_sees_declared_only(void)
{
	char dir[] = "/tmp/sipc-sbxsh-XXXXXX", sh[96], sib[96], req[256];
	char script[PATH_MAX + 32], out[256];
	const char *prog = tl_fixture("procinfo");
	struct sipc_config c;
	sipc_supervisor *s;
	int fd;

	if (!have_sandbox())
		return;
	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	CU_ASSERT(chmod(dir, 0755) == 0);
	snprintf(sh, sizeof(sh), "%s/run.sh", dir);
	snprintf(sib, sizeof(sib), "%s/sibling", dir);
	snprintf(script, sizeof(script), "#!/bin/sh\nexec %s\n", prog);
	CU_ASSERT((fd = open(sh, O_WRONLY | O_CREAT | O_EXCL, 0755)) >= 0 &&
	    write(fd, script, strlen(script)) == (ssize_t)strlen(script) &&
	    close(fd) == 0);
	CU_ASSERT((fd = open(sib, O_WRONLY | O_CREAT | O_EXCL, 0644)) >= 0 &&
	    close(fd) == 0);
	cfg_make(&c, sh, prog);
	s = st_start(&c, 1, WAIT_MS);
	snprintf(req, sizeof(req), "read %s", sib);
	ask(s, req, out, sizeof(out));
	printf("sbxident: script worker: %s: %s\n", req, out);
	CU_ASSERT(strncmp(out, "read=0", 6) == 0);
	snprintf(req, sizeof(req), "read %s", sh);
	ask(s, req, out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "read=1");
	done(s);
	unlink(sib);
	unlink(sh);
	rmdir(dir);
}

/*
 * As root, a worker program the sandbox's ids cannot reach (in a 0700
 * directory of root's) is refused at create, the directory and the ids
 * named, instead of workers that never start.
 */
/* rules: PB26 */
static void
test_sbxident_unreachable_program_refused(void)
{
	char dir[] = "/tmp/sipc-sbxpriv-XXXXXX", bin[64], err[512] = "";
	struct sipc_config c;
	sipc_supervisor *s = NULL;

	if (!have_sandbox())
		return;
	if (geteuid() != 0) {
		tl_skip("not root: workers run as this user");
		return;
	}
	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(bin, sizeof(bin), "%s/procinfo", dir);
	CU_ASSERT_FATAL(st_copy_file(tl_fixture("procinfo"), bin) == 0);
	cfg_make(&c, bin, NULL);
	CU_ASSERT_EQUAL(sipc_create(&c, err, sizeof(err), &s), SIPC_E_EXEC);
	printf("sbxident: %s\n", err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "sandbox_uid"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, dir));
	if (s != NULL)
		sipc_destroy(s);
	CU_ASSERT(rmdir(root) == 0);
	CU_ASSERT(chmod(dir, 0755) == 0);
	cfg_make(&c, bin, NULL);
	s = st_start(&c, 1, WAIT_MS);
	done(s);
	unlink(bin);
	rmdir(dir);
}

static const char *allow_list;   /* syscalls_allow of create_with() */

/* sipc_create() with `bit` required (environment test) and the hook
 * `skip` set: 0 or the error, err naming what was refused. */
static int
create_with(unsigned bit, unsigned skip, char *err, size_t len)
{
	struct sipc_config c;
	sipc_supervisor *s = NULL;
	int rc;

	cfg_make(&c, NULL, NULL);
	c.required_guarantees = bit;
	c.syscalls_allow = allow_list;
	sipc__sbx_test_skip = skip;
	err[0] = '\0';
	rc = sipc_create(&c, err, len, &s);
	sipc__sbx_test_skip = 0;
	if (rc == 0)
		sipc_destroy(s);
	CU_ASSERT(rmdir(root) == 0);
	return rc;
}

/*
 * Each probe can fail: a launch that leaves the rules (or, as root, the
 * uid drop) out while the guarantee is declared is refused at create,
 * the guarantee named, and so is one whose rules refuse the probe's own
 * scratch directory; with nothing left out it is proven.
 */
/* rules: PB1 PV4 */
static void
test_sbxident_probes_fail_when_left_out(void)
{
	char err[1024];

	if (!have_sandbox() || !have_landlock())
		return;
	CU_ASSERT_EQUAL(create_with(SIPC_G_FILESYSTEM_RULES,
	    SIPC__SBX_SKIP_LANDLOCK, err, sizeof(err)), SIPC_E_PRODUCTION);
	printf("sbxident: rules left out: %s\n", err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "filesystem_rules"));
	/* outside /tmp, whose rule would cover a scratch directory there */
	root_base = "/var/tmp";
	CU_ASSERT_EQUAL(create_with(SIPC_G_FILESYSTEM_RULES,
	    SIPC__SBX_SKIP_SCRATCH_RULE, err, sizeof(err)), SIPC_E_PRODUCTION);
	printf("sbxident: scratch write left out: %s\n", err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "could not write"));
	CU_ASSERT_EQUAL(create_with(SIPC_G_FILESYSTEM_RULES, 0, err,
	    sizeof(err)), 0);
	root_base = "/tmp";
	CU_ASSERT_EQUAL(create_with(SIPC_G_FILESYSTEM_RULES, 0, err,
	    sizeof(err)), 0);
	if (geteuid() != 0) {
		printf("sbxident: not root: the uid drop has nothing to leave "
		    "out\n");
	} else {
		CU_ASSERT_EQUAL(create_with(SIPC_G_NO_PRIVILEGE |
		    SIPC_G_SEPARATE_USER, SIPC__SBX_SKIP_SETID, err,
		    sizeof(err)), SIPC_E_PRODUCTION);
		printf("sbxident: uid drop left out: %s\n", err);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "no_privilege"));
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "separate_user"));
	}
	CU_ASSERT_EQUAL(create_with(SIPC_G_NO_PRIVILEGE, 0, err, sizeof(err)),
	    0);
	if (err[0] != '\0')
		printf("sbxident: %s\n", err);
}

/*
 * The namespace probes can fail too: the host's network namespace (no
 * network namespace of its own) fails network_isolation, the host's
 * /tmp bound in (where the bait is) fails mount_namespace; with nothing
 * left out both are proven.
 */
/* rules: PB1 PB3 */
static void
test_sbxident_namespace_probes_fail_when_left_out(void)
{
	char err[1024];

	if (!have_sandbox())
		return;
	CU_ASSERT_EQUAL(create_with(SIPC_G_NETWORK_ISOLATION,
	    SIPC__SBX_SKIP_NETNS, err, sizeof(err)), SIPC_E_PRODUCTION);
	printf("sbxident: network namespace left out: %s\n", err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "network_isolation"));
	CU_ASSERT_EQUAL(create_with(SIPC_G_MOUNT_NAMESPACE,
	    SIPC__SBX_SKIP_TMPFS, err, sizeof(err)), SIPC_E_PRODUCTION);
	printf("sbxident: empty /tmp left out: %s\n", err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "mount_namespace"));
	CU_ASSERT_EQUAL(create_with(SIPC_G_NETWORK_ISOLATION |
	    SIPC_G_MOUNT_NAMESPACE, 0, err, sizeof(err)), 0);
}

/*
 * The filter and the limits are proven, not declared: a launch without
 * sipc-init's filter fails syscall_filter (no Seccomp 2, and a nested
 * user namespace refused by bubblewrap's --disable-userns with its own
 * errno, not the filter's EPERM) while its limits still hold; one
 * without the limits fails limits while the filter holds; with nothing
 * left out both are proven.
 */
/* rules: PB1 */
static void
test_sbxident_filter_and_limits_probes_fail_when_left_out(void)
{
	char err[1024];

	if (!have_sandbox())
		return;
	CU_ASSERT_EQUAL(create_with(SIPC_G_SYSCALL_FILTER | SIPC_G_LIMITS,
	    SIPC__SBX_SKIP_FILTER, err, sizeof(err)), SIPC_E_PRODUCTION);
	printf("sbxident: filter left out: %s\n", err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "syscall_filter ("));
	CU_ASSERT_PTR_NULL(strstr(err, "limits ("));
	CU_ASSERT_EQUAL(create_with(SIPC_G_SYSCALL_FILTER | SIPC_G_LIMITS,
	    SIPC__SBX_SKIP_LIMITS, err, sizeof(err)), SIPC_E_PRODUCTION);
	printf("sbxident: limits left out: %s\n", err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, " limits ("));
	CU_ASSERT_PTR_NULL(strstr(err, "syscall_filter ("));
	CU_ASSERT_EQUAL(create_with(SIPC_G_SYSCALL_FILTER | SIPC_G_LIMITS, 0,
	    err, sizeof(err)), 0);
	if (err[0] != '\0')
		printf("sbxident: %s\n", err);
	/* unshare allowed by the configuration: bwrap refuses it, with its
	 * own errno, and the filter is proven by clone's EPERM alone */
	allow_list = "unshare";
	CU_ASSERT_EQUAL(create_with(SIPC_G_SYSCALL_FILTER, 0, err,
	    sizeof(err)), 0);
	allow_list = NULL;
	if (err[0] != '\0')
		printf("sbxident: unshare allowed: %s\n", err);
}

int
main(void)
{
	static const tl_test tests[] = {
		{ "test_sbxident_worker_unprivileged",
		  test_sbxident_worker_unprivileged },
		{ "test_sbxident_writes_outside_scratch_refused",
		  test_sbxident_writes_outside_scratch_refused },
		{ "test_sbxident_script_sees_declared_only",
		  test_sbxident_script_sees_declared_only },
		{ "test_sbxident_unreachable_program_refused",
		  test_sbxident_unreachable_program_refused },
		{ "test_sbxident_probes_fail_when_left_out",
		  test_sbxident_probes_fail_when_left_out },
		{ "test_sbxident_namespace_probes_fail_when_left_out",
		  test_sbxident_namespace_probes_fail_when_left_out },
		{ "test_sbxident_filter_and_limits_probes_fail_when_left_out",
		  test_sbxident_filter_and_limits_probes_fail_when_left_out },
		{ NULL, NULL }
	};

	tl_suite("sbxident", tests);
	return tl_run();
}

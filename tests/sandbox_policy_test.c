/*
 * sandbox_policy_test.c - the sandbox's system-call policy and resource
 * limits, seen from inside a sandboxed worker (fixtures/sysprobe.c).
 *
 * Every refused call of the default profile ends the worker
 * SIPC_EXIT_POLICY with the call's number and name, and the request it
 * ran is UNKNOWN after one attempt though it was idempotent; a call the
 * profile allows still returns.  Inside, every resource limit is finite
 * with soft = hard and cannot be raised, /tmp is the capped size, and a
 * fork loop stops at the process bound.
 *
 * The sandbox provider always (whatever SIPC_TEST_PROVIDER says); each
 * test skips where bwrap is not installed as the provider wants it.
 * Threads: the CUnit thread; callbacks run on library threads and touch
 * only the mutex-guarded captures of sipctest.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sipc.h"
#include "sipctest.h"
#include "sysfault.h"
#include "testlib.h"
#include "provider/provider.h"

#define WAIT_MS 20000

static bool
skip_no_sandbox(void)
{
	const char *bwrap;

	if (sipc__sandbox_bwrap(&bwrap) == 0)
		return false;
	tl_skip("no trusted bubblewrap at " SIPC__BWRAP_DEFAULT);
	return true;
}

static void
cfg_sysprobe(struct sipc_config *c)
{
	static char *const argv[] = { "sysprobe", NULL };

	st_cfg_base(c, "sysprobe", argv, 1);
	c->provider = "sandbox";
	c->handshake_ms = 10000;
}

/* st_start() for one sandboxed worker; a start that fails prints the
 * log first (the sandbox's and sipc-init's reasons are there). */
static sipc_supervisor *
start(const struct sipc_config *c)
{
	sipc_supervisor *s = NULL;
	char err[256] = "";
	int rc;

	st_log_reset();
	rc = sipc_create(c, err, sizeof(err), &s);
	if (rc != 0)
		fprintf(stderr, "sipc_create: %s: %s\n", sipc_strerror(rc), err);
	CU_ASSERT_FATAL(rc == 0);
	if ((rc = sipc_wait_ready(s, 1, WAIT_MS)) != 0) {
		fprintf(stderr, "not ready: %s\n", sipc_strerror(rc));
		st_log_print();
		sipc_destroy(s);
		CU_FAIL_FATAL("worker not ready");
	}
	return s;
}

/* One request; the result is the caller's to release. */
static int
ask(sipc_supervisor *s, const char *cmd, unsigned flags,
    struct sipc_result *r)
{
	struct sipc_request q = { .payload = cmd, .len = strlen(cmd),
	    .timeout_ms = WAIT_MS, .flags = flags };

	return sipc_call(s, &q, r);
}

/* The reply as a string (static buffer). */
static const char *
reply_str(const struct sipc_result *r)
{
	static char buf[512];
	size_t n = r->reply_len < sizeof(buf) - 1 ? r->reply_len :
	    sizeof(buf) - 1;

	if (r->reply != NULL)
		memcpy(buf, r->reply, n);
	buf[r->reply != NULL ? n : 0] = '\0';
	return buf;
}

struct refused_call { const char *name; int nr; };

/* rules: R10 PB25 */
static void
test_policy_default_refused(void)
{
	static const struct refused_call calls[] = {
		{ "io_uring_setup", __NR_io_uring_setup },
		{ "keyctl", __NR_keyctl },
		{ "add_key", __NR_add_key },
		{ "perf_event_open", __NR_perf_event_open },
		{ "ptrace", __NR_ptrace },
		{ "mount", __NR_mount },
	};
	struct sipc_config c;
	struct sipc_result r;
	struct sipc_stats st;
	sipc_supervisor *s;
	char cmd[64];

	if (skip_no_sandbox())
		return;
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		cfg_sysprobe(&c);
		s = start(&c);
		/* allowed: it returns */
		TL_EQ_FATAL(ask(s, "call getpid", 0, &r), 0);
		TL_EQ(r.outcome, SIPC_OUTCOME_OK);
		CU_ASSERT(strncmp(reply_str(&r), "ret=", 4) == 0);
		sipc_result_release(&r);
		snprintf(cmd, sizeof(cmd), "call %s", calls[i].name);
		TL_EQ_FATAL(ask(s, cmd, SIPC_REQ_IDEMPOTENT, &r), 0);
		if (r.outcome == SIPC_OUTCOME_OK)
			fprintf(stderr, "%s returned: %s\n", calls[i].name,
			    reply_str(&r));
		TL_EQ(r.outcome, SIPC_OUTCOME_UNKNOWN);
		TL_EQ(r.attempts, 1);
		TL_EQ(r.exit.kind, SIPC_EXIT_POLICY);
		TL_EQ(r.exit.syscall, calls[i].nr);
		TL_STREQ(r.exit.syscall_name, calls[i].name);
		sipc_result_release(&r);
		st = st_pool_stats(s);
		TL_EQ(st.retried, 0);
		sipc_stats_release(&st);
		sipc_destroy(s);
	}
	/* a namespace call fails with EPERM and the worker lives on */
	cfg_sysprobe(&c);
	s = start(&c);
	TL_EQ_FATAL(ask(s, "call unshare", 0, &r), 0);
	TL_EQ(r.outcome, SIPC_OUTCOME_OK);
	TL_STREQ(reply_str(&r), "ret=-1 errno=1");
	sipc_result_release(&r);
	TL_EQ_FATAL(ask(s, "call getpid", 0, &r), 0);
	TL_EQ(r.outcome, SIPC_OUTCOME_OK);
	sipc_result_release(&r);
	st = st_pool_stats(s);
	TL_EQ(st.restarts, 0);
	sipc_stats_release(&st);
	sipc_destroy(s);
}

/* The sanitizer builds leave the address space unlimited (their shadow
 * memory reserves terabytes; src/provider/sandbox_argv.c). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SAN_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SAN_BUILD 1
#endif
#endif

/* "as=S/H fsize=S/H ..." of sysprobe's rlimits: each finite, S = H. */
static void
check_limits(const char *rep)
{
	static const char *const names[] = {
#ifndef SAN_BUILD
	    "as",
#endif
	    "fsize", "nofile", "cpu", "nproc" };
	char key[16];
	const char *p;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		unsigned long long soft, hard;

		snprintf(key, sizeof(key), "%s=", names[i]);
		p = strstr(rep, key);
		CU_ASSERT_FATAL(p != NULL);
		if (sscanf(p + strlen(key), "%llu/%llu", &soft, &hard) != 2) {
			fprintf(stderr, "%s not finite: %s\n", names[i], rep);
			CU_FAIL("a limit is unlimited");
			continue;
		}
		TL_EQ(soft, hard);
	}
	CU_ASSERT(strstr(rep, " raised=0") != NULL);
#ifdef SAN_BUILD
	CU_ASSERT(strstr(rep, "as=inf/inf") != NULL);
#endif
}

/* rules: PB29 */
static void
test_policy_limits_inside(void)
{
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;

	if (skip_no_sandbox())
		return;
	cfg_sysprobe(&c);
	s = start(&c);
	TL_EQ_FATAL(ask(s, "rlimits", 0, &r), 0);
	TL_EQ_FATAL(r.outcome, SIPC_OUTCOME_OK);
	fprintf(stderr, "limits inside: %s\n", reply_str(&r));
	check_limits(reply_str(&r));
	sipc_result_release(&r);
	TL_EQ_FATAL(ask(s, "tmpsize", 0, &r), 0);
	TL_EQ(r.outcome, SIPC_OUTCOME_OK);
	TL_EQ(strtoull(reply_str(&r), NULL, 10), 256ULL << 20);
	sipc_result_release(&r);
	sipc_destroy(s);
}

/* rules: PB29 */
static void
test_policy_fork_bound(void)
{
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	int forked = -1, err = -1;

	if (skip_no_sandbox())
		return;
	cfg_sysprobe(&c);
	s = start(&c);
	TL_EQ_FATAL(ask(s, "forkloop", 0, &r), 0);
	if (r.outcome != SIPC_OUTCOME_OK) {
		char how[160];

		sipc_exit_format(&r.exit, how, sizeof(how));
		fprintf(stderr, "fork loop: %s, error %d (%s)\n", how, r.error,
		    r.diag_tail != NULL ? r.diag_tail : "");
	}
	TL_EQ_FATAL(r.outcome, SIPC_OUTCOME_OK);
	fprintf(stderr, "fork loop (uid %d): %s\n", (int)getuid(),
	    reply_str(&r));
	CU_ASSERT(sscanf(reply_str(&r), "forked=%d errno=%d", &forked,
	    &err) == 2);
	sipc_result_release(&r);
	sipc_destroy(s);
	/* the worker and its children count: fewer than the bound, as
	 * root too (its workers run as sandbox_uid, which it bounds) */
	CU_ASSERT(forked > 0 && forked < 512);
	TL_EQ(err, EAGAIN);
}

/* One request that the worker dies of: a resource limit's end. */
static void
limit_end(const char *cmd, size_t cpu, int want_rlimit, int want_signo)
{
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	char how[160];

	if (skip_no_sandbox())
		return;
	cfg_sysprobe(&c);
	c.rlimit_cpu = cpu;
	c.stall_ms = 60000;     /* a spinning worker reads no frame */
	s = start(&c);
	TL_EQ_FATAL(ask(s, cmd, 0, &r), 0);
	sipc_exit_format(&r.exit, how, sizeof(how));
	fprintf(stderr, "%s: %s\n", cmd, how);
	TL_EQ(r.outcome, SIPC_OUTCOME_UNKNOWN);
	TL_EQ(r.exit.kind, SIPC_EXIT_LIMIT);
	TL_EQ(r.exit.rlimit, want_rlimit);
	TL_EQ(r.exit.signo, want_signo);
	sipc_result_release(&r);
	sipc_destroy(s);
}

/* rules: PB29 */
static void
test_policy_cpu_limit_ends(void)
{
	/* soft = hard: the kernel's SIGKILL at the hard limit */
	limit_end("spin 1", 0, RLIMIT_CPU, SIGKILL);
}

/* The same limit set low by the configuration. */
static void
test_policy_cpu_limit_configured(void)
{
	limit_end("spin -", 1, RLIMIT_CPU, SIGKILL);
}

/* rules: PB29 */
static void
test_policy_fsize_limit_ends(void)
{
	limit_end("bigfile 1000000", 0, RLIMIT_FSIZE, SIGXFSZ);
}

/* A refused call's end: POLICY, number and name, one attempt. */
static void
expect_refused(sipc_supervisor *s, const char *name, int nr)
{
	struct sipc_result r;
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "call %s", name);
	TL_EQ_FATAL(ask(s, cmd, SIPC_REQ_IDEMPOTENT, &r), 0);
	TL_EQ(r.outcome, SIPC_OUTCOME_UNKNOWN);
	TL_EQ(r.attempts, 1);
	TL_EQ(r.exit.kind, SIPC_EXIT_POLICY);
	TL_EQ(r.exit.syscall, nr);
	TL_STREQ(r.exit.syscall_name, name);
	sipc_result_release(&r);
}

/* A call that returns: its reply "ret=..." */
static void
expect_runs(sipc_supervisor *s, const char *name)
{
	struct sipc_result r;
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "call %s", name);
	TL_EQ_FATAL(ask(s, cmd, 0, &r), 0);
	TL_EQ(r.outcome, SIPC_OUTCOME_OK);
	CU_ASSERT(strncmp(reply_str(&r), "ret=", 4) == 0);
	sipc_result_release(&r);
}

/* rules: R10 PB25 */
static void
test_policy_config_refuse_and_allow(void)
{
	struct sipc_config c;
	sipc_supervisor *s;

	if (skip_no_sandbox())
		return;
	cfg_sysprobe(&c);
	/* not getppid: the worker runtime asks it at its start */
	c.syscalls_refuse = "getcwd";
	c.syscalls_allow = "keyctl,add_key";
	s = start(&c);
	expect_runs(s, "keyctl");
	expect_runs(s, "add_key");
	expect_runs(s, "getpid");
	expect_refused(s, "getcwd", __NR_getcwd);
	sipc_destroy(s);
}

/* sipc_create() refuses c; errbuf holds want. */
static void
expect_create_refused(const struct sipc_config *c, const char *want)
{
	sipc_supervisor *s = NULL;
	char err[256] = "";
	int rc = sipc_create(c, err, sizeof(err), &s);

	CU_ASSERT(rc == SIPC_E_CONFIG || rc == SIPC_E_PRODUCTION);
	CU_ASSERT(s == NULL);
	if (strstr(err, want) == NULL) {
		fprintf(stderr, "errbuf \"%s\" does not say %s\n", err, want);
		CU_FAIL("errbuf does not name the cause");
	}
	if (s != NULL)
		sipc_destroy(s);
}

static void
test_policy_config_bad_names(void)
{
	struct sipc_config c;

	if (skip_no_sandbox())
		return;
	cfg_sysprobe(&c);
	c.syscalls_refuse = "getcwd,no_such_call";
	expect_create_refused(&c, "no_such_call");
	cfg_sysprobe(&c);
	c.syscalls_refuse = "Bad Name";
	expect_create_refused(&c, "syscalls_refuse");
	cfg_sysprobe(&c);
	c.syscalls_allow = "getpid";    /* not refused by the default */
	expect_create_refused(&c, "getpid");
	cfg_sysprobe(&c);
	c.syscalls_refuse = "keyctl";
	c.syscalls_allow = "keyctl";
	expect_create_refused(&c, "keyctl");
}

static void
test_policy_audit_logs_and_runs(void)
{
	struct sipc_config c;
	sipc_supervisor *s;

	if (skip_no_sandbox())
		return;
	cfg_sysprobe(&c);
	c.syscalls_audit = true;
	s = start(&c);
	expect_runs(s, "keyctl");
	CU_ASSERT(tl_wait_until(st_log_has_cb,
	    (void *)"audit: system call keyctl", WAIT_MS));
	sipc_destroy(s);
}

static void
test_policy_audit_refused_under_production(void)
{
	struct sipc_config c;

	cfg_sysprobe(&c);
	c.syscalls_audit = true;
	c.environment = SIPC_ENV_PRODUCTION;
	expect_create_refused(&c, "syscalls_audit");
	cfg_sysprobe(&c);
	c.syscalls_audit = true;
	c.environment = SIPC_ENV_UNSET;
	expect_create_refused(&c, "syscalls_audit");
}

/* rules: PB29 */
static void
test_policy_limits_configured(void)
{
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;

	if (skip_no_sandbox())
		return;
	cfg_sysprobe(&c);
	c.rlimit_nofile = 100;
	c.rlimit_cpu = 50;
	c.rlimit_fsize = SIPC_UNLIMITED;
	c.tmp_size = 64u << 20;
	s = start(&c);
	TL_EQ_FATAL(ask(s, "rlimits", 0, &r), 0);
	TL_EQ_FATAL(r.outcome, SIPC_OUTCOME_OK);
	CU_ASSERT(strstr(reply_str(&r), "nofile=100/100") != NULL);
	CU_ASSERT(strstr(reply_str(&r), "cpu=50/50") != NULL);
	CU_ASSERT(strstr(reply_str(&r), "fsize=inf/inf") != NULL);
	CU_ASSERT(strstr(reply_str(&r), "nproc=512/512") != NULL);
	sipc_result_release(&r);
	TL_EQ_FATAL(ask(s, "tmpsize", 0, &r), 0);
	TL_EQ(strtoull(reply_str(&r), NULL, 10), 64ULL << 20);
	sipc_result_release(&r);
	sipc_destroy(s);
}

/* The keys load from the environment's form (a file's values have the
 * same syntax), "unlimited" included. */
static void
test_policy_keys_load(void)
{
	char *const env[] = { "SIPC_SYSCALLS_REFUSE=getppid,getcwd",
	    "SIPC_SYSCALLS_ALLOW=keyctl", "SIPC_SYSCALLS_AUDIT=true",
	    "SIPC_RLIMIT_AS=unlimited", "SIPC_RLIMIT_CPU=30",
	    "SIPC_TMP_SIZE=1048576", NULL };
	char *const bad[] = { "SIPC_RLIMIT_NOFILE=lots", NULL };
	struct sipc_config c;
	sipc_config_store *st = NULL;
	char err[256] = "";

	sipc_config_init(&c);
	TL_EQ_FATAL(sipc_config_load_env(env, &c, &st, err, sizeof(err)), 0);
	TL_STREQ(c.syscalls_refuse, "getppid,getcwd");
	TL_STREQ(c.syscalls_allow, "keyctl");
	CU_ASSERT(c.syscalls_audit);
	CU_ASSERT(c.rlimit_as == SIPC_UNLIMITED);
	TL_EQ(c.rlimit_cpu, 30);
	TL_EQ(c.tmp_size, 1048576);
	TL_EQ(c.rlimit_nofile, 0);
	TL_EQ(sipc_config_load_env(bad, &c, &st, err, sizeof(err)),
	    SIPC_E_CONFIG);
	CU_ASSERT(strstr(err, "SIPC_RLIMIT_NOFILE") != NULL);
	TL_EQ(c.rlimit_nofile, 0);      /* nothing lost */
	sipc_config_store_free(st);
}

/* In the broker's filtered child: a sandbox worker started under a
 * filter that holds the one listener the kernel allows.  Exit status:
 * 0 when a refused call ended it POLICY, unnamed (-1), by SIGSYS and
 * its request was not written again; 100 + the step that failed. */
static int
under_listener_body(void *arg)
{
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	char err[256] = "", how[160];
	int ret;

	(void)arg;
	cfg_sysprobe(&c);
	c.log = NULL;
	if (sipc_create(&c, err, sizeof(err), &s) != 0) {
		fprintf(stderr, "create: %s\n", err);
		return 101;
	}
	if ((ret = sipc_wait_ready(s, 1, WAIT_MS)) != 0) {
		struct sipc_worker_stats w = st_worker_stats(s, 0);

		sipc_exit_format(&w.last_exit, how, sizeof(how));
		fprintf(stderr, "not ready (%s): %s\n", sipc_strerror(ret), how);
		sipc_destroy(s);
		return 102;
	}
	if (ask(s, "call keyctl", SIPC_REQ_IDEMPOTENT, &r) != 0) {
		sipc_destroy(s);
		return 103;
	}
	sipc_exit_format(&r.exit, how, sizeof(how));
	fprintf(stderr, "under a host listener: %s\n", how);
	ret = r.outcome == SIPC_OUTCOME_UNKNOWN && r.attempts == 1 &&
	    r.exit.kind == SIPC_EXIT_POLICY && r.exit.syscall == -1 &&
	    r.exit.signo == SIGSYS ? 0 : 104;
	sipc_result_release(&r);
	sipc_destroy(s);
	return ret;
}

static int
let_run(pid_t pid, const uint64_t args[6], void *arg)
{
	(void)pid;
	(void)args;
	(void)arg;
	return 0;
}

/* The host runs under a filter with a listener (a container runtime's
 * notification, or these tests' own fault broker): the kernel allows no
 * second one, so the sandbox's refusals kill with SIGSYS, unnamed;
 * before, no sandboxed worker could start there. */
/* rules: PB25 */
static void
test_policy_under_host_listener(void)
{
	int seen = 0;

	if (skip_no_sandbox())
		return;
	if (!sf_supported()) {
		tl_skip("seccomp user notification is not available here");
		return;
	}
	TL_EQ(sf_broker(__NR_getcwd, let_run, &seen, sizeof(seen),
	    under_listener_body, NULL), 0);
}

/* A supervisor of one sysprobe worker with the hook `skip` set (read
 * at launch: reset once the worker is ready). */
static sipc_supervisor *
start_skip(unsigned skip)
{
	struct sipc_config c;
	sipc_supervisor *s;

	cfg_sysprobe(&c);
	sipc__sbx_test_skip = skip;
	s = start(&c);
	sipc__sbx_test_skip = 0;
	return s;
}

/*
 * The hooks the bench's sandbox_hardening section prices leave out one
 * hardening each: SIPC__SBX_SKIP_FILTER the system-call filter (and
 * the privileges it drops: a refused call runs; the limits and the
 * capped /tmp stay), SIPC__SBX_SKIP_LIMITS the limits and the cap of
 * /tmp (the filter still ends a refused call POLICY).
 */
static void
test_policy_skip_hooks_leave_out_one_each(void)
{
	struct sipc_result r;
	sipc_supervisor *s;

	if (skip_no_sandbox())
		return;
	s = start_skip(SIPC__SBX_SKIP_FILTER);
	expect_runs(s, "keyctl");
	TL_EQ_FATAL(ask(s, "rlimits", 0, &r), 0);
	TL_EQ_FATAL(r.outcome, SIPC_OUTCOME_OK);
	fprintf(stderr, "limits without the filter: %s\n", reply_str(&r));
	check_limits(reply_str(&r));
	sipc_result_release(&r);
	TL_EQ_FATAL(ask(s, "tmpsize", 0, &r), 0);
	TL_EQ(strtoull(reply_str(&r), NULL, 10), 256ULL << 20);
	sipc_result_release(&r);
	sipc_destroy(s);

	s = start_skip(SIPC__SBX_SKIP_LIMITS);
	TL_EQ_FATAL(ask(s, "rlimits", 0, &r), 0);
	TL_EQ_FATAL(r.outcome, SIPC_OUTCOME_OK);
	fprintf(stderr, "limits left out: %s\n", reply_str(&r));
	CU_ASSERT(strstr(reply_str(&r), "nofile=256/256") == NULL);
	sipc_result_release(&r);
	TL_EQ_FATAL(ask(s, "tmpsize", 0, &r), 0);
	fprintf(stderr, "/tmp left uncapped: %s\n", reply_str(&r));
	CU_ASSERT(strtoull(reply_str(&r), NULL, 10) != 256ULL << 20);
	sipc_result_release(&r);
	expect_refused(s, "keyctl", __NR_keyctl);
	sipc_destroy(s);
}

static const tl_test tests[] = {
	{ "test_policy_skip_hooks_leave_out_one_each",
	  test_policy_skip_hooks_leave_out_one_each },
	{ "test_policy_under_host_listener", test_policy_under_host_listener },
	{ "test_policy_config_refuse_and_allow",
	  test_policy_config_refuse_and_allow },
	{ "test_policy_config_bad_names", test_policy_config_bad_names },
	{ "test_policy_audit_logs_and_runs", test_policy_audit_logs_and_runs },
	{ "test_policy_audit_refused_under_production",
	  test_policy_audit_refused_under_production },
	{ "test_policy_limits_configured", test_policy_limits_configured },
	{ "test_policy_keys_load", test_policy_keys_load },
	{ "test_policy_cpu_limit_configured",
	  test_policy_cpu_limit_configured },
	{ "test_policy_cpu_limit_ends", test_policy_cpu_limit_ends },
	{ "test_policy_fsize_limit_ends", test_policy_fsize_limit_ends },
	{ "test_policy_default_refused", test_policy_default_refused },
	{ "test_policy_limits_inside", test_policy_limits_inside },
	{ "test_policy_fork_bound", test_policy_fork_bound },
	{ NULL, NULL }
};

int
main(void)
{
	st_no_core_files();
	tl_suite("sandbox_policy", tests);
	return tl_run();
}

/*
 * startprobe_test.c - a declared guarantee is believed only once the
 * start-up probe proved it.  Providers defined here wrap the local one
 * (registered as a host would) and declare what they are told to; the
 * library launches sipc-probe through them at sipc_create() and refuses
 * each required guarantee the probe did not confirm, naming it and the
 * reason.  A guarantee the wrapped provider really gives passes.  A
 * probe program that is missing, or that never answers, is a refusal,
 * the latter within the probe's deadline.
 *
 * Threads: the CUnit thread; the ops run on it (sipc_create) and on the
 * library's reaper thread, and share only `leak_env`, set before any.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "provider/provider.h"
#include "sipc.h"
#include "sipc_provider.h"
#include "sipctest.h"
#include "testlib.h"

#define DEADLINE_MS 20000
#define LEAK_NAME "SIPC_TEST_HOST_SECRET"

static const struct sipc_provider_ops *local_ops = &sipc__provider_local;

static unsigned
declares_pid_tree(const struct sipc_config *cfg)
{
	return SIPC_G_PID_NAMESPACE | SIPC_G_TREE_CONTAINMENT;
}

static unsigned
declares_all(const struct sipc_config *cfg)
{
	return SIPC_G_ALL;
}

/* Local's launch, with one host variable added to the worker's
 * environment: a provider that leaks what it declares it does not. */
static int
leaky_launch(void *state, const struct sipc_provider_launch *l,
             struct sipc_provider_chan *ret_chan, void **ret_handle,
             int *ret_errno)
{
	static char leak[128];
	struct sipc_provider_launch m = *l;
	char *env[64];
	size_t n = 0;

	for (; l->envp[n] != NULL && n < 62; n++)
		env[n] = l->envp[n];
	snprintf(leak, sizeof(leak), "%s=%s", LEAK_NAME, getenv(LEAK_NAME));
	env[n++] = leak;
	env[n] = NULL;
	m.envp = env;
	return local_ops->launch(state, &m, ret_chan, ret_handle, ret_errno);
}

#define UNSHARE "/usr/bin/unshare"

/* Local's launch through unshare(1) with the options `how` (one word). */
static int
unshare_launch(const char *how, void *state,
               const struct sipc_provider_launch *l,
               struct sipc_provider_chan *ret_chan, void **ret_handle,
               int *ret_errno)
{
	struct sipc_provider_launch m = *l;
	char *argv[64] = { UNSHARE, (char *)how, "--" };
	size_t n = 3;

	for (size_t i = 0; l->argv[i] != NULL && n < 63; i++)
		argv[n++] = l->argv[i];
	argv[n] = NULL;
	m.path = UNSHARE;
	m.argv = argv;
	return local_ops->launch(state, &m, ret_chan, ret_handle, ret_errno);
}

/* A new PID namespace that keeps the host's /proc: the worker cannot
 * signal host pids, but sees them. */
static int
hostproc_launch(void *state, const struct sipc_provider_launch *l,
                struct sipc_provider_chan *ret_chan, void **ret_handle,
                int *ret_errno)
{
	return unshare_launch("-pf", state, l, ret_chan, ret_handle,
	    ret_errno);
}

/* A new network namespace on the host's filesystem: no host port nor
 * abstract socket, but the host's socket paths are there. */
static int
netns_launch(void *state, const struct sipc_provider_launch *l,
             struct sipc_provider_chan *ret_chan, void **ret_handle,
             int *ret_errno)
{
	return unshare_launch("-n", state, l, ret_chan, ret_handle,
	    ret_errno);
}

static struct sipc_provider_ops claims_pid_tree, claims_all, leaky, hostproc,
    netns;

static void
make_ops(void)
{
	claims_pid_tree = *local_ops;
	claims_pid_tree.name = "claims-pid-tree";
	claims_pid_tree.declared = declares_pid_tree;
	claims_all = *local_ops;
	claims_all.name = "claims-all";
	claims_all.declared = declares_all;
	leaky = claims_all;
	leaky.name = "leaky";
	leaky.launch = leaky_launch;
	leaky.launch_start = NULL;
	leaky.launch_finish = NULL;
	hostproc = claims_pid_tree;
	hostproc.name = "pidns-host-proc";
	hostproc.launch = hostproc_launch;
	hostproc.launch_start = NULL;
	hostproc.launch_finish = NULL;
	netns = hostproc;
	netns.name = "netns-host-fs";
	netns.declared = declares_all;
	netns.launch = netns_launch;
}

static struct sipc_config
cfg_for(const char *provider, unsigned required,
        enum sipc_containment contain)
{
	struct sipc_config c;

	st_cfg_base(&c, "echo", NULL, 1);
	c.provider = provider;
	c.required_guarantees = required;
	c.containment = contain;
	c.cgroup = SIPC_CGROUP_OFF;
	return c;
}

/* sipc_create() refused with SIPC_E_PRODUCTION, the message holding
 * each of the NULL-terminated needles; how long it took in *ret_ms. */
static void
expect_refused(const struct sipc_config *c, const char *const *needles,
               int64_t *ret_ms)
{
	sipc_supervisor *s = NULL;
	char err[2048] = "";
	int64_t t0 = tl_now_ms();
	int rc = sipc_create(c, err, sizeof(err), &s);

	if (ret_ms != NULL)
		*ret_ms = tl_now_ms() - t0;
	CU_ASSERT_EQUAL(rc, SIPC_E_PRODUCTION);
	CU_ASSERT_PTR_NULL(s);
	for (; *needles != NULL; needles++)
		if (strstr(err, *needles) == NULL) {
			fprintf(stderr, "startprobe_test: \"%s\" not in: %s\n",
			    *needles, err);
			CU_FAIL("refusal does not say why");
		}
	if (rc == 0 && s != NULL)
		sipc_destroy(s);
}

/* A provider that declares every guarantee and gives none (process
 * group, no cgroup): before the probe it was accepted in production. */
/* rules: PV4 PB1 */
static void
test_startprobe_claims_refused_in_production(void)
{
	struct sipc_config c = cfg_for("claims-all", 0,
	    SIPC_CONTAIN_PROCESS_GROUP);

	c.environment = SIPC_ENV_PRODUCTION;
	expect_refused(&c, (const char *const[]){ "claims-all",
	    "not proven by the start-up probe",
	    "pid_namespace (the worker can signal host pid",
	    "mount_namespace (the worker read the host's file",
	    "network_isolation (host 127.0.0.1:",
	    "resource_limits (no pids limit configured",
	    "tree_containment (a process the worker put in a new session "
	    "outlived stop and sweep", NULL }, NULL);
}

/* What is asked is what is probed: in a test environment only the
 * required guarantee, here tree containment in process-group mode. */
/* rules: PV4 */
static void
test_startprobe_tree_escapee_refused(void)
{
	struct sipc_config c = cfg_for("claims-pid-tree",
	    SIPC_G_TREE_CONTAINMENT, SIPC_CONTAIN_PROCESS_GROUP);

	expect_refused(&c, (const char *const[]){ "tree_containment (a "
	    "process the worker put in a new session outlived", NULL }, NULL);
}

/* The local provider in a PID namespace gives both it declares: the
 * probe confirms them and the supervisor runs. */
/* rules: PV4 */
static void
test_startprobe_pidns_passes(void)
{
	struct sipc_config c = cfg_for("claims-pid-tree",
	    SIPC_G_PID_NAMESPACE | SIPC_G_TREE_CONTAINMENT,
	    SIPC_CONTAIN_PID_NAMESPACE);
	struct sipc_result r;
	sipc_supervisor *s;

	if (st_can_unshare(CLONE_NEWPID) < 0) {
		tl_skip("no PID namespace here");
		return;
	}
	s = st_start(&c, 1, DEADLINE_MS);
	st_call_cmd(s, NULL, DEADLINE_MS, 0, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_OK);
	sipc_result_release(&r);
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
	/* ... and the same required of process-group mode is refused. */
	c.containment = SIPC_CONTAIN_PROCESS_GROUP;
	c.required_guarantees = SIPC_G_PID_NAMESPACE;
	expect_refused(&c, (const char *const[]){ "pid_namespace (the "
	    "worker can signal host pid", NULL }, NULL);
}

/* A PID namespace whose /proc is the host's: kill(host pid) fails with
 * ESRCH, yet the host's pid is in the worker's /proc.  Not a PID
 * namespace guarantee; before, ESRCH alone was taken for one. */
/* rules: PV4 */
static void
test_startprobe_pidns_with_host_proc_refused(void)
{
	struct sipc_config c = cfg_for("pidns-host-proc", SIPC_G_PID_NAMESPACE,
	    SIPC_CONTAIN_PROCESS_GROUP);
	char needle[96];

	if (access(UNSHARE, X_OK) < 0 || st_can_unshare(CLONE_NEWPID) < 0) {
		tl_skip("no unshare(1) or no PID namespace here");
		return;
	}
	snprintf(needle, sizeof(needle), "pid_namespace (host pid %ld is "
	    "visible in the worker's /proc", (long)getpid());
	expect_refused(&c, (const char *const[]){ needle, NULL }, NULL);
}

/* A network namespace alone keeps out the host's port and abstract
 * socket, not a socket path the worker's view of the filesystem holds.
 * Before, the path was not probed and network_isolation confirmed. */
/* rules: PV4 PB3 */
static void
test_startprobe_netns_with_host_fs_refused(void)
{
	struct sipc_config c = cfg_for("netns-host-fs",
	    SIPC_G_NETWORK_ISOLATION, SIPC_CONTAIN_PROCESS_GROUP);

	if (access(UNSHARE, X_OK) < 0 || st_can_unshare(CLONE_NEWNET) < 0) {
		tl_skip("no unshare(1) or no network namespace here");
		return;
	}
	expect_refused(&c, (const char *const[]){ "network_isolation (host "
	    "127.0.0.1:", "; host unix socket ", ": the worker connected)",
	    NULL }, NULL);
}

/* No inherited secrets: local passes (it closes the host's descriptors
 * and builds the environment from the launch); a provider that adds a
 * host variable is caught, the variable named. */
/* rules: PV4 */
static void
test_startprobe_secrets(void)
{
	struct sipc_config c = cfg_for("claims-all",
	    SIPC_G_NO_INHERITED_SECRETS, SIPC_CONTAIN_PROCESS_GROUP);
	sipc_supervisor *s;

	s = st_start(&c, 1, DEADLINE_MS);
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
	c.provider = "leaky";
	expect_refused(&c, (const char *const[]){ "no_inherited_secrets (the "
	    "host's environment variable " LEAK_NAME " reached", NULL }, NULL);
}

/* Resource limits with none configured: nothing to prove, refused. */
/* rules: PV4 PB4 */
static void
test_startprobe_limits_unset_refused(void)
{
	struct sipc_config c = cfg_for("claims-all", SIPC_G_RESOURCE_LIMITS,
	    SIPC_CONTAIN_PROCESS_GROUP);

	expect_refused(&c, (const char *const[]){ "resource_limits (no pids "
	    "limit configured (pids_max): nothing to prove", NULL }, NULL);
}

/* A pids limit in the worker's cgroup holds the probe's forks. */
/* rules: PV4 */
static void
test_startprobe_limits_pids_max_passes(void)
{
	struct sipc_config c = cfg_for("claims-all", SIPC_G_RESOURCE_LIMITS,
	    SIPC_CONTAIN_PROCESS_GROUP);
	sipc_supervisor *s = NULL;
	char err[1024] = "";
	int rc;

	c.cgroup = SIPC_CGROUP_AUTO;
	c.pids_max = 8;
	rc = sipc_create(&c, err, sizeof(err), &s);
	if (rc == SIPC_E_CGROUP) {
		tl_skip(err);
		return;
	}
	if (rc != 0)
		fprintf(stderr, "startprobe_test: %s\n", err);
	CU_ASSERT_EQUAL_FATAL(rc, 0);
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
}

/* rules: PV4 */
static void
test_startprobe_program_missing_refused(void)
{
	struct sipc_config c = cfg_for("claims-all",
	    SIPC_G_NO_INHERITED_SECRETS, SIPC_CONTAIN_PROCESS_GROUP);

	c.probe_path = "/nonexistent/sipc-probe";
	expect_refused(&c, (const char *const[]){ "no_inherited_secrets "
	    "(probe program /nonexistent/sipc-probe: No such file", NULL },
	    NULL);
}

/* A program that answers, but not as the probe does (the echo fixture
 * sends each request back): no reply of the probe's grammar, so nothing
 * is confirmed.  Before, anything but "the worker read/connected" was
 * taken for isolation. */
/* rules: PV4 */
static void
test_startprobe_echo_confirms_nothing(void)
{
	struct sipc_config c = cfg_for("claims-all", SIPC_G_MOUNT_NAMESPACE |
	    SIPC_G_NETWORK_ISOLATION, SIPC_CONTAIN_PROCESS_GROUP);
	char echo[4096];

	snprintf(echo, sizeof(echo), "%s", tl_fixture("echo"));
	c.probe_path = echo;
	expect_refused(&c, (const char *const[]){ "mount_namespace (no "
	    "answer from the probe: ", "network_isolation (no answer from "
	    "the probe: ", NULL }, NULL);
}

/* A probe that accepts requests and never answers: refused, and by
 * the deadline (handshake + grace + slack), not later. */
/* rules: PV4 PB2 */
static void
test_startprobe_hang_refused_in_deadline(void)
{
	struct sipc_config c = cfg_for("claims-all",
	    SIPC_G_NO_INHERITED_SECRETS, SIPC_CONTAIN_PROCESS_GROUP);
	char hang[4096];
	int64_t ms = 0;

	snprintf(hang, sizeof(hang), "%s", tl_fixture("hang"));
	c.probe_path = hang;
	c.handshake_ms = 500;
	c.grace_ms = 100;
	expect_refused(&c, (const char *const[]){ "no_inherited_secrets (no "
	    "answer from the probe", NULL }, &ms);
	/* it waited for the answer, then gave up within the bound */
	CU_ASSERT(ms >= 500);
	CU_ASSERT(ms < 500 + 100 + SIPC__PROBE_SLACK_MS + 1000);
}

int
main(void)
{
	make_ops();
	setenv(LEAK_NAME, "host-only-value", 1);
	if (sipc_provider_register(&claims_pid_tree) < 0 ||
	    sipc_provider_register(&claims_all) < 0 ||
	    sipc_provider_register(&leaky) < 0 ||
	    sipc_provider_register(&hostproc) < 0 ||
	    sipc_provider_register(&netns) < 0)
		return 1;
	tl_suite("startprobe", (tl_test[]){
	    { "test_startprobe_claims_refused_in_production",
	      test_startprobe_claims_refused_in_production },
	    { "test_startprobe_tree_escapee_refused",
	      test_startprobe_tree_escapee_refused },
	    { "test_startprobe_pidns_passes", test_startprobe_pidns_passes },
	    { "test_startprobe_pidns_with_host_proc_refused",
	      test_startprobe_pidns_with_host_proc_refused },
	    { "test_startprobe_netns_with_host_fs_refused",
	      test_startprobe_netns_with_host_fs_refused },
	    { "test_startprobe_secrets", test_startprobe_secrets },
	    { "test_startprobe_limits_unset_refused",
	      test_startprobe_limits_unset_refused },
	    { "test_startprobe_limits_pids_max_passes",
	      test_startprobe_limits_pids_max_passes },
	    { "test_startprobe_program_missing_refused",
	      test_startprobe_program_missing_refused },
	    { "test_startprobe_echo_confirms_nothing",
	      test_startprobe_echo_confirms_nothing },
	    { "test_startprobe_hang_refused_in_deadline",
	      test_startprobe_hang_refused_in_deadline },
	    { NULL, NULL } });
	return tl_run();
}

/*
 * main_local.c - runs the provider conformance suite against the local
 * adapter.  The local adapter must pass every functional rule and must
 * report every isolation rule as not provided.
 *
 * Beside the suite, two self-checks prove that the isolation verifiers
 * can fail (a verifier that always passed would make a future
 * provider's declaration worthless):
 *   - the pid-namespace verifier, run against the local adapter, must
 *     find the host's pid visible;
 *   - the no-inherited-secrets verifier, run against a deliberately
 *     leaky wrapper of the local adapter (it adds the host environment
 *     to every launch), must find the leak.
 *
 * Threads: the CUnit thread only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgroup.h"
#include "conformance.h"
#include "driver.h"
#include "testlib.h"

extern char **environ;

/* Launch with the launch environment followed by the host's. */
static int
leaky_launch(void *prov, const struct sipc__launch *l,
             struct sipc__chan *ret_chan, void **ret_handle, int *ret_errno)
{
	struct sipc__launch l2 = *l;
	size_t n = 0, m = 0, i;
	char **env;
	int rc;

	while (l->envp[n] != NULL)
		n++;
	while (environ[m] != NULL)
		m++;
	if ((env = calloc(n + m + 1, sizeof(*env))) == NULL)
		return -12;
	for (i = 0; i < n; i++)
		env[i] = l->envp[i];
	for (i = 0; i < m; i++)
		env[n + i] = environ[i];
	l2.envp = env;
	rc = sipc__provider_local.launch(prov, &l2, ret_chan, ret_handle,
	    ret_errno);
	free(env);
	return rc;
}

static struct sipc__provider leaky;

static void
test_conformance_selfcheck_pid_namespace_probe_fails_on_local(void)
{
	char why[256] = "";

	CU_ASSERT_EQUAL(conf_verify_pid_namespace(&sipc__provider_local,
	    NULL, why, sizeof(why)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "is visible"));
}

static void
test_conformance_selfcheck_secrets_probe_fails_on_leaky(void)
{
	char why[256] = "";

	leaky = sipc__provider_local;
	leaky.name = "leaky";
	leaky.launch = leaky_launch;
	CU_ASSERT_EQUAL(conf_verify_no_inherited_secrets(&leaky, NULL, why,
	    sizeof(why)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "reached the worker"));
	/* And the local adapter itself passes only what it was given. */
	CU_ASSERT_EQUAL(conf_verify_no_inherited_secrets(
	    &sipc__provider_local, NULL, why, sizeof(why)), 1);
}

/*
 * The local adapter per containment mode: the pid_namespace and
 * tree_containment probes run for real in each, and the result is
 * printed as "conformance: mode M: RULE: provided|not provided (why)".
 * Process-group mode must fail both probes (it gives neither); the PID
 * namespace modes must pass both where they can be had here.
 */
static void
probe_mode(enum sipc_containment mode, bool want)
{
	static const struct {
		const char *name;
		int (*fn)(const struct sipc__provider *, void *, char *, size_t);
	} probes[] = {
		{ "pid_namespace", conf_verify_pid_namespace },
		{ "tree_containment", conf_verify_tree_containment },
	};
	char why[256];
	int r;

	conf_contain = mode;
	conf_init_path = tl_init_path();
	for (size_t i = 0; i < 2; i++) {
		why[0] = '\0';
		r = probes[i].fn(&sipc__provider_local, NULL, why, sizeof(why));
		printf("conformance: mode %s: %s: %s (%s)\n",
		    sipc_containment_name(mode), probes[i].name,
		    r == 1 ? "provided" : r == 0 ? "not provided" :
		    "could not run", r < 0 ? sipc_strerror(r) : why);
		if (r < 0 && mode != SIPC_CONTAIN_PROCESS_GROUP)
			continue;       /* mode unavailable here: reported */
		CU_ASSERT_EQUAL(r, want ? 1 : 0);
	}
	conf_contain = SIPC_CONTAIN_PROCESS_GROUP;
	conf_init_path = NULL;
}

static void
test_conformance_modes_report_containment(void)
{
	probe_mode(SIPC_CONTAIN_PROCESS_GROUP, false);
	probe_mode(SIPC_CONTAIN_PID_NAMESPACE, true);
	probe_mode(SIPC_CONTAIN_USER_NAMESPACE, true);
}

/*
 * The cgroup, probed for real: "conformance: cgroup: provided (path)" or
 * "not provided (why)".  Where provided, process-group mode inside it
 * must contain the tree that it alone does not (its setsid() escapee
 * dies at the worker's end).
 */
static void
test_conformance_cgroup_reports(void)
{
	const struct sipc__cg_limits none = { 0, 0, 0 };
	char why[256] = "";
	int r;

	CU_ASSERT_EQUAL_FATAL(sipc__cg_open(SIPC_CGROUP_AUTO, &none, &conf_cg,
	    why, sizeof(why)), 0);
	printf("conformance: cgroup: %s (%s)\n", conf_cg != NULL ?
	    "provided" : "not provided", why);
	if (conf_cg == NULL)
		return;
	conf_contain = SIPC_CONTAIN_PROCESS_GROUP;
	why[0] = '\0';
	r = conf_verify_tree_containment(&sipc__provider_local, NULL, why,
	    sizeof(why));
	printf("conformance: mode process_group+cgroup: tree_containment: "
	    "%s (%s)\n", r == 1 ? "provided" : r == 0 ? "not provided" :
	    "could not run", r < 0 ? sipc_strerror(r) : why);
	CU_ASSERT_EQUAL(r, 1);
	CU_ASSERT_EQUAL(sipc__cg_close(conf_cg), 0);
	conf_cg = NULL;
}

int
main(void)
{
	int rc;

	setvbuf(stdout, NULL, _IONBF, 0);
	conf_register(&sipc__provider_local, NULL);
	tl_suite("conformance_selfcheck", (tl_test[]){
	    { "test_conformance_selfcheck_pid_namespace_probe_fails_on_local",
	      test_conformance_selfcheck_pid_namespace_probe_fails_on_local },
	    { "test_conformance_selfcheck_secrets_probe_fails_on_leaky",
	      test_conformance_selfcheck_secrets_probe_fails_on_leaky },
	    { "test_conformance_modes_report_containment",
	      test_conformance_modes_report_containment },
	    { "test_conformance_cgroup_reports",
	      test_conformance_cgroup_reports },
	    { NULL, NULL } });
	rc = tl_run();
	conf_print_summary();
	return rc;
}

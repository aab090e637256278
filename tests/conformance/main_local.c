/*
 * main_local.c - runs the provider conformance suite against the local
 * adapter.  The local adapter must pass every functional rule and must
 * report every isolation rule as not provided.
 *
 * Beside the suite, self-checks prove that the isolation verifiers can
 * fail and can pass (a verifier that always passed would make a future
 * provider's declaration worthless; one that never passed, its probe):
 *   - the pid-namespace verifier, run against the local adapter, must
 *     find the host's pid visible;
 *   - the no-inherited-secrets verifier, run against deliberately leaky
 *     wrappers of the local adapter (one adds the host environment to
 *     every launch, one passes the host's inheritable descriptors on),
 *     must find each leak;
 *   - the resource-limits verifier fails a provider that declares
 *     limits and sets none, and passes one whose workers run in a pids
 *     cgroup with a small pids.max;
 *   - under bwrap in front of the local adapter the pid, file, socket,
 *     secrets and termination probes pass.
 * The table test prints "guarantee | local" with every probe run for
 * real against the local adapter, and checks what it finds.
 *
 * Threads: the CUnit thread only.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <grp.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "os/os.h"
#include "conformance.h"
#include "driver.h"
#include "testlib.h"

extern char **environ;

/* Launch with the launch environment followed by the host's. */
static int
leaky_launch(void *prov, const struct sipc_provider_launch *l,
             struct sipc_provider_chan *ret_chan, void **ret_handle, int *ret_errno)
{
	struct sipc_provider_launch l2 = *l;
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

static struct sipc_provider_ops leaky;

/*
 * A launcher in front of the local adapter: the worker is started as
 * prefix[0] with argv prefix + the worker's argv (a shell trampoline,
 * or bwrap).  env_to_args turns the launch environment into bwrap
 * --setenv pairs (the launcher's own environment is then cleared).
 */
#define WRAP_MAX 96
struct wrap {
	const char *prefix[WRAP_MAX];  /* NULL-terminated */
	bool env_to_args;
};

static int
wrap_launch(void *prov, const struct sipc_provider_launch *l,
            struct sipc_provider_chan *ret_chan, void **ret_handle, int *ret_errno)
{
	static char name[WRAP_MAX][64];
	const struct wrap *wr = prov;
	struct sipc_provider_launch l2 = *l;
	const char *argv[WRAP_MAX * 4];
	size_t n = 0, i, cap = WRAP_MAX * 4 - 1;
	const char *eq;

	for (i = 0; wr->prefix[i] != NULL && n < cap; i++)
		argv[n++] = wr->prefix[i];
	for (i = 0; wr->env_to_args && l->envp[i] != NULL; i++) {
		eq = strchr(l->envp[i], '=');
		if (eq == NULL || i >= WRAP_MAX || eq - l->envp[i] >= 64 ||
		    n + 3 > cap)
			return -E2BIG;
		snprintf(name[i], sizeof(name[i]), "%.*s",
		    (int)(eq - l->envp[i]), l->envp[i]);
		argv[n++] = "--setenv";
		argv[n++] = name[i];
		/* Inside the PID namespace the parent is bwrap, pid 1. */
		argv[n++] = strcmp(name[i], "SIPC_PARENT_PID") == 0 ? "1" :
		    eq + 1;
	}
	if (wr->env_to_args && n < cap)
		argv[n++] = "--";
	for (i = 0; l->argv[i] != NULL; i++) {
		if (n >= cap)
			return -E2BIG;
		argv[n++] = l->argv[i];
	}
	argv[n] = NULL;
	l2.path = argv[0];
	l2.argv = (char *const *)argv;
	return sipc__provider_local.launch(NULL, &l2, ret_chan, ret_handle,
	    ret_errno);
}

/* Declares resource limits, whatever it enforces. */
static unsigned
declare_limits(const struct sipc_config *cfg)
{
	return SIPC_G_RESOURCE_LIMITS;
}

static struct sipc_provider_ops
wrap_provider(const char *name, unsigned (*declared)(const struct sipc_config *))
{
	struct sipc_provider_ops p = sipc__provider_local;

	p.name = name;
	p.launch = wrap_launch;
	p.launch_start = NULL;
	p.launch_finish = NULL;
	p.declared = declared;
	return p;
}

#define FDLEAK_MAX 8

/*
 * Reopens each of the host's regular files open without close-on-exec
 * (up to FDLEAK_MAX) as the worker's descriptors 7, 8, ..., as a
 * launcher that passed every inheritable descriptor on would.
 */
static int
fdleak_launch(void *prov, const struct sipc_provider_launch *l,
              struct sipc_provider_chan *ret_chan, void **ret_handle, int *ret_errno)
{
	static char script[256], path[FDLEAK_MAX][64];
	struct wrap wr = { .prefix = { "/bin/sh", "-c", script, "sh" } };
	size_t k = 0, off;
	struct stat st;
	int fd, fl;

	off = (size_t)snprintf(script, sizeof(script), "exec");
	for (fd = 3; fd < 1024 && k < FDLEAK_MAX; fd++) {
		if ((fl = fcntl(fd, F_GETFD)) < 0 || (fl & FD_CLOEXEC) ||
		    fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		snprintf(path[k], sizeof(path[k]), "/proc/%d/fd/%d",
		    (int)getpid(), fd);
		wr.prefix[4 + k] = path[k];
		off += (size_t)snprintf(script + off, sizeof(script) - off,
		    " %zu<\"$%zu\"", 7 + k, k + 1);
		k++;
	}
	if (k == 0)             /* nothing to pass on: a plain launch */
		return sipc__provider_local.launch(prov, l, ret_chan,
		    ret_handle, ret_errno);
	snprintf(script + off, sizeof(script) - off, " && shift %zu && "
	    "exec \"$@\"", k);
	return wrap_launch(&wr, l, ret_chan, ret_handle, ret_errno);
}

static void
test_conformance_selfcheck_fd_probe_fails_on_inheriting_launcher(void)
{
	struct sipc_provider_ops p = wrap_provider("fdleak", NULL);
	char why[256] = "";

	p.launch = fdleak_launch;
	CU_ASSERT_EQUAL(conf_verify_no_inherited_fds(&p, NULL, why,
	    sizeof(why)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "reached the worker"));
	printf("conformance: selfcheck: fdleak: %s\n", why);
	/* The whole secrets rule fails with it. */
	CU_ASSERT_EQUAL(conf_verify_no_inherited_secrets(&p, NULL, why,
	    sizeof(why)), 0);
}

/*
 * The resource-limits probe, both ways: a provider that declares limits
 * but sets none fails it; one whose workers run in a pids cgroup with a
 * small pids.max passes it (where a pids cgroup can be made here).
 */
static int
pids_cgroup_make(char *dir, size_t len, int max)
{
	static const char *const roots[] = {
		"/sys/fs/cgroup/pids", "/sys/fs/cgroup/unified", "/sys/fs/cgroup",
	};
	char file[512];
	int fd;

	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		snprintf(file, sizeof(file), "%s/pids.max", roots[i]);
		if (access(roots[i], W_OK) < 0)
			continue;
		snprintf(dir, len, "%s/sipc-probe-%d", roots[i], (int)getpid());
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			continue;
		snprintf(file, sizeof(file), "%s/pids.max", dir);
		if ((fd = open(file, O_WRONLY | O_CLOEXEC)) < 0) {
			(void)rmdir(dir);
			continue;
		}
		if (dprintf(fd, "%d", max) < 0 || close(fd) < 0) {
			(void)rmdir(dir);
			continue;
		}
		return 0;
	}
	return -ENOTSUP;
}

static void
test_conformance_selfcheck_limits_probe_both_ways(void)
{
	char dir[256], why[256] = "", procs[300];
	struct sipc_provider_ops p = sipc__provider_local;
	struct wrap cg = { .prefix = { "/bin/sh", "-c",
	    "echo $$ > \"$1\" && shift && exec \"$@\"", "sh", procs } };

	p.name = "nolimits";
	p.declared = declare_limits;
	CU_ASSERT_EQUAL(conf_verify_resource_limits(&p, NULL, why,
	    sizeof(why)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "no pids limit"));
	printf("conformance: selfcheck: nolimits: %s\n", why);
	if (pids_cgroup_make(dir, sizeof(dir), 24) < 0) {
		tl_skip("no writable pids cgroup here to set a limit in");
		return;
	}
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", dir);
	p = wrap_provider("pidscgroup", declare_limits);
	CU_ASSERT_EQUAL(conf_verify_resource_limits(&p, &cg, why,
	    sizeof(why)), 1);
	printf("conformance: selfcheck: pidscgroup: %s\n", why);
	/* Every worker of the cgroup has ended and been reaped. */
	CU_ASSERT_EQUAL(rmdir(dir), 0);
}

static void
test_conformance_selfcheck_pid_namespace_probe_fails_on_local(void)
{
	char why[256] = "";

	CU_ASSERT_EQUAL(conf_verify_pid_namespace(&sipc__provider_local,
	    NULL, why, sizeof(why)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "is visible"));
}

/* The local adapter sets neither a system-call filter nor limits: both
 * probes fail there (and pass under the sandbox, conformance_sandbox). */
static void
test_conformance_selfcheck_filter_and_limits_probes_fail_on_local(void)
{
	char why[256] = "";

	CU_ASSERT_EQUAL(conf_verify_syscall_filter(&sipc__provider_local,
	    NULL, why, sizeof(why)), 0);
	printf("conformance: local: syscall_filter: %s\n", why);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "Seccomp"));
	why[0] = '\0';
	CU_ASSERT_EQUAL(conf_verify_limits(&sipc__provider_local, NULL, why,
	    sizeof(why)), 0);
	printf("conformance: local: limits: %s\n", why);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "RLIMIT_"));
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
/* Write `text` to /proc/self/`name`; 0 or -errno.  Forked child only. */
static int
write_self(const char *name, const char *text)
{
	char path[64];
	int fd, r = 0;

	snprintf(path, sizeof(path), "/proc/self/%s", name);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
		return -errno;
	if (write(fd, text, strlen(text)) < 0)
		r = -errno;
	close(fd);
	return r;
}

/*
 * Can a new user namespace mount a /proc of its own PID namespace here?
 * The kernel refuses it to an unprivileged caller when the host's /proc
 * has parts hidden under other mounts (as container runtimes do); then
 * sipc-init's workers in user-namespace mode see host pids (they still
 * cannot signal them), which PRODUCTION_BOUNDARY.md section 5 states.
 * Asked of the kernel directly, in a forked child: 0 (it can), or the
 * errno of the refused step.
 */
static int
userns_proc_errno(void)
{
	pid_t pid, kid;
	int st;

	if ((pid = fork()) < 0)
		return errno;
	if (pid == 0) {
		char map[32];
		uid_t uid = geteuid();
		gid_t gid = getegid();

		if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID) < 0)
			_exit(errno & 0xff);
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid,
		    (unsigned)uid);
		if (write_self("uid_map", map) < 0)
			_exit(errno & 0xff);
		(void)write_self("setgroups", "deny");
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid,
		    (unsigned)gid);
		if (write_self("gid_map", map) < 0)
			_exit(errno & 0xff);
		if ((kid = fork()) < 0)
			_exit(errno & 0xff);
		if (kid == 0) {
			if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE,
			    NULL) < 0 || mount("proc", "/proc", "proc",
			    MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
				_exit(errno & 0xff);
			_exit(0);
		}
		if (waitpid(kid, &st, 0) != kid || !WIFEXITED(st))
			_exit(EIO);
		_exit(WEXITSTATUS(st));
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return EIO;
	return WEXITSTATUS(st);
}

static void
probe_mode(enum sipc_containment mode, bool want)
{
	static const struct {
		const char *name;
		int (*fn)(const struct sipc_provider_ops *, void *, char *, size_t);
	} probes[] = {
		{ "pid_namespace", conf_verify_pid_namespace },
		{ "tree_containment", conf_verify_tree_containment },
	};
	char why[256];
	int r, e;

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
		if (r == 0 && i == 0 && mode == SIPC_CONTAIN_USER_NAMESPACE &&
		    (e = userns_proc_errno()) != 0) {
			/* Reported, and true to PRODUCTION_BOUNDARY.md. */
			printf("conformance: mode %s: pid_namespace: the kernel "
			    "refuses a user namespace a /proc of its own here "
			    "(%s): host pids stay visible\n",
			    sipc_containment_name(mode), strerror(e));
			continue;
		}
		CU_ASSERT_EQUAL(r, want ? 1 : 0);
	}
	conf_contain = SIPC_CONTAIN_PROCESS_GROUP;
	conf_init_path = NULL;
}

/*
 * The table's local column: every probe runs for real against the local
 * adapter in process-group mode.  It gives none of the isolation; the
 * secrets row is provided because the adapter passes only the launch
 * environment (the allow-list is applied by the core before launch) and
 * closes every descriptor but the channel's.
 */
static void
test_conformance_table_local(void)
{
	int cell[CONF_P_COUNT];

	conf_table_column("local", &sipc__provider_local, NULL, cell);
	conf_table_print();
	CU_ASSERT_EQUAL(cell[CONF_P_HOST_PID], 0);
	CU_ASSERT_EQUAL(cell[CONF_P_HOST_FILES], 0);
	CU_ASSERT_EQUAL(cell[CONF_P_HOST_SOCKETS], 0);
	CU_ASSERT_EQUAL(cell[CONF_P_SECRETS], 1);
	CU_ASSERT_EQUAL(cell[CONF_P_TERMINATION], 0);
	CU_ASSERT_EQUAL(cell[CONF_P_LIMITS], 0);
}

#define BWRAP "/usr/bin/bwrap"

/*
 * The probes can pass: the local adapter with bwrap in front (every
 * namespace unshared, a read-only view of /usr and the fixtures, fresh
 * /proc, /dev and /tmp, only the launch environment, the working
 * directory / so that bwrap's own PWD does not carry the host's) must
 * pass the pid, file, socket, secrets and termination probes.  Skipped where bwrap is not
 * installed or cannot make its namespaces here.
 */
static void
test_conformance_selfcheck_probes_pass_under_bwrap(void)
{
	char fixdir[4096];
	struct wrap bw = { .prefix = { BWRAP, "--unshare-all",
	    "--die-with-parent", "--new-session", "--clearenv",
	    "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib",
	    "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin",
	    /* the empty /tmp before the bind: a tree under /tmp stays seen */
	    "--tmpfs", "/tmp", "--ro-bind", fixdir, fixdir,
	    "--proc", "/proc", "--dev", "/dev", "--chdir", "/" },
	    .env_to_args = true };
	struct sipc_provider_ops p = wrap_provider("bwrap", NULL);
	int cell[CONF_P_COUNT], st;
	char *slash;

	if (access(BWRAP, X_OK) < 0) {
		tl_skip("bwrap is not installed");
		return;
	}
	st = system(BWRAP " --unshare-all --ro-bind / / /bin/true "
	    ">/dev/null 2>&1");
	if (st != 0) {
		tl_skip("bwrap cannot create its namespaces here");
		return;
	}
	if (realpath(tl_fixture("probe"), fixdir) == NULL) {
		CU_FAIL("no probe fixture");
		return;
	}
	if ((slash = strrchr(fixdir, '/')) != NULL)
		*slash = '\0';
	conf_table_column("local", &sipc__provider_local, NULL, NULL);
	conf_table_column("local+bwrap", &p, &bw, cell);
	conf_table_print();
	CU_ASSERT_EQUAL(cell[CONF_P_HOST_PID], 1);
	CU_ASSERT_EQUAL(cell[CONF_P_HOST_FILES], 1);
	CU_ASSERT_EQUAL(cell[CONF_P_HOST_SOCKETS], 1);
	CU_ASSERT_EQUAL(cell[CONF_P_SECRETS], 1);
	CU_ASSERT_EQUAL(cell[CONF_P_TERMINATION], 1);
}

/*
 * User-namespace mode for an unprivileged host: the worker must not see
 * the host's pids.  sipc-init is not root of a user namespace that maps
 * the caller's own uid, and has no capability after its exec, so the
 * /proc of the namespace is mounted by the supervisor's child before
 * that exec.  Run as uid/gid 65534 in a forked child (skipped unless we
 * are root, so that we can drop to it, and where the kernel refuses a
 * user namespace its /proc).  The child exits with the probe's verdict:
 * 1 provided, 0 not provided, 2 could not run, 3 setup refused.
 */
/* rules: D5 */
static void
test_conformance_user_namespace_unprivileged_hides_host_pids(void)
{
	char why[256];
	pid_t pid;
	int st, r, e;

	if (geteuid() != 0) {
		tl_skip("needs root to drop to an unprivileged uid");
		return;
	}
	fflush(stdout);
	if ((pid = fork()) == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0)
			_exit(3);
		/* A uid change clears it, and /proc/self would stay root's. */
		if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
			_exit(3);
		if ((e = userns_proc_errno()) != 0) {
			printf("conformance: unprivileged user namespace: no "
			    "/proc of its own here (%s)\n", strerror(e));
			fflush(stdout);
			_exit(3);
		}
		conf_contain = SIPC_CONTAIN_USER_NAMESPACE;
		conf_init_path = tl_init_path();
		why[0] = '\0';
		r = conf_verify_pid_namespace(&sipc__provider_local, NULL, why,
		    sizeof(why));
		printf("conformance: unprivileged user namespace: "
		    "pid_namespace: %s (%s)\n", r == 1 ? "provided" : r == 0 ?
		    "not provided" : "could not run", r < 0 ?
		    sipc_strerror(r) : why);
		fflush(stdout);
		_exit(r == 1 ? 1 : r == 0 ? 0 : 2);
	}
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_FATAL(waitpid(pid, &st, 0) == pid);
	CU_ASSERT_FATAL(WIFEXITED(st));
	if (WEXITSTATUS(st) == 3 || WEXITSTATUS(st) == 2) {
		tl_skip("no unprivileged user namespace with its own /proc "
		    "here, or the build tree is not readable by uid 65534");
		return;
	}
	CU_ASSERT_EQUAL(WEXITSTATUS(st), 1);
}

/* rules: D5 */
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
/* rules: CG1 */
static void
test_conformance_cgroup_reports(void)
{
	struct sipc_provider_info in;
	struct sipc_config cfg;
	char why[256] = "";
	void *st = NULL;
	int r;

	sipc_config_init(&cfg);
	cfg.environment = SIPC_ENV_TEST;
	cfg.cgroup = SIPC_CGROUP_AUTO;
	CU_ASSERT_EQUAL_FATAL(sipc__provider_local.create(&cfg, &st, why,
	    sizeof(why)), 0);
	sipc__provider_local.info(st, &in);
	printf("conformance: cgroup: %s (%s)\n", in.cgroup ?
	    "provided" : "not provided", in.text);
	if (!in.cgroup) {
		sipc__provider_local.destroy(st);
		return;
	}
	conf_contain = SIPC_CONTAIN_PROCESS_GROUP;
	why[0] = '\0';
	r = conf_verify_tree_containment(&sipc__provider_local, st, why,
	    sizeof(why));
	printf("conformance: mode process_group+cgroup: tree_containment: "
	    "%s (%s)\n", r == 1 ? "provided" : r == 0 ? "not provided" :
	    "could not run", r < 0 ? sipc_strerror(r) : why);
	CU_ASSERT_EQUAL(r, 1);
	sipc__provider_local.destroy(st);
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
	    { "test_conformance_selfcheck_filter_and_limits_probes_fail_on_local",
	      test_conformance_selfcheck_filter_and_limits_probes_fail_on_local },
	    { "test_conformance_selfcheck_secrets_probe_fails_on_leaky",
	      test_conformance_selfcheck_secrets_probe_fails_on_leaky },
	    { "test_conformance_modes_report_containment",
	      test_conformance_modes_report_containment },
	    { "test_conformance_user_namespace_unprivileged_hides_host_pids",
	      test_conformance_user_namespace_unprivileged_hides_host_pids },
	    { "test_conformance_cgroup_reports",
	      test_conformance_cgroup_reports },
	    { "test_conformance_selfcheck_fd_probe_fails_on_inheriting_launcher",
	      test_conformance_selfcheck_fd_probe_fails_on_inheriting_launcher },
	    { "test_conformance_selfcheck_limits_probe_both_ways",
	      test_conformance_selfcheck_limits_probe_both_ways },
	    { "test_conformance_selfcheck_probes_pass_under_bwrap",
	      test_conformance_selfcheck_probes_pass_under_bwrap },
	    { NULL, NULL } });
	tl_suite("conformance_table", (tl_test[]){
	    { "test_conformance_table_local", test_conformance_table_local },
	    { NULL, NULL } });
	rc = tl_run();
	conf_print_summary();
	return rc;
}

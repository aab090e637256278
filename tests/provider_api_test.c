/*
 * provider_api_test.c - the provider interface as a host provider sees
 * it (sipc_provider.h, sipc_provider_register(3), sipc_stats_get(3),
 * CONTRACT.md PV1-PV4 and SB1-SB9, PRODUCTION_BOUNDARY.md section 13)
 * checked from outside: only the public headers, the fixtures and the
 * installed programs, no internal header.  Each test names the document
 * it checks.
 *
 * The first host provider, "fake", launches nothing: its launch fails
 * the way a test asks, which is enough for every rule that concerns
 * registration, selection and what the core makes of an op's return.
 * The second, "mute", hands back real descriptors of a worker that
 * never speaks, to see what the core does with failing try_end and
 * sweep ops.
 *
 * Threads: the CUnit thread drives everything; the provider ops run on
 * sipc_create()'s thread or the reaper, so their counters are atomics.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sipc.h"
#include "sipc_provider.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 20000          /* generous deadline for any event */

/* ------------------------------------------------------ host provider */

static atomic_int n_create, n_destroy, n_launch;
static atomic_int launch_rc = -EIO, launch_errno;
static atomic_uintptr_t destroyed_state;
static int fake_state;                 /* the state create hands back */

static int
fake_create(const struct sipc_config *cfg, void **ret_state, char *errbuf,
            size_t errlen)
{
	atomic_fetch_add(&n_create, 1);
	*ret_state = &fake_state;
	return 0;
}

/* A create that fails the way sipc_provider.h lets it: a negative
 * error and its reason in errbuf. */
static int
fake_create_fails(const struct sipc_config *cfg, void **ret_state,
                  char *errbuf, size_t errlen)
{
	atomic_fetch_add(&n_create, 1);
	snprintf(errbuf, errlen, "fake backend: not attached");
	return -ENODEV;
}

static void
fake_destroy(void *state)
{
	atomic_fetch_add(&n_destroy, 1);
	atomic_store(&destroyed_state, (uintptr_t)state);
}

/* Nothing is started: the error the test chose, nothing left behind. */
static int
fake_launch(void *state, const struct sipc_provider_launch *l,
            struct sipc_provider_chan *ret_chan, void **ret_handle,
            int *ret_errno)
{
	atomic_fetch_add(&n_launch, 1);
	*ret_errno = atomic_load(&launch_errno);
	return atomic_load(&launch_rc);
}

static int
fake_try_end(void *handle, struct sipc_exit *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->kind = SIPC_EXIT_LOST;
	return 1;
}

static int
fake_stop(void *handle, enum sipc_provider_stop how)
{
	return 0;
}

static void
fake_release(void *handle)
{
}

static int
fake_leftover(void *state, const struct sipc_provider_id *id,
              unsigned grace_ms)
{
	return 0;
}

/* No declared, info or sweep: all three are optional. */
static const struct sipc_provider_ops fake_base = {
	.abi = SIPC_PROVIDER_ABI,
	.name = "fake",
	.create = fake_create,
	.destroy = fake_destroy,
	.launch = fake_launch,
	.try_end = fake_try_end,
	.stop = fake_stop,
	.release = fake_release,
	.leftover = fake_leftover,
};

/* ----------------------------------------------- a provider that "runs"
 * A worker that never speaks: the channel's far end, a diagnostics pipe
 * and an eventfd as the end descriptor, all held by the handle.  stop
 * "ends" it (the eventfd turns readable); try_end then fails
 * `mute_try_fails` times before it reports the end; sweep fails. */

struct mute {
	int peer, diag_w, end_fd;
	atomic_bool ended;
};

static atomic_int mute_try_fails, n_try_end, n_sweep, n_release;

static int
mute_launch(void *state, const struct sipc_provider_launch *l,
            struct sipc_provider_chan *ret_chan, void **ret_handle,
            int *ret_errno)
{
	struct mute *m = calloc(1, sizeof(*m));
	int sv[2], pf[2];

	if (m == NULL)
		return -ENOMEM;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		free(m);
		return -errno;
	}
	if (pipe2(pf, O_CLOEXEC) < 0 ||
	    (m->end_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
		close(sv[0]);
		close(sv[1]);
		free(m);
		return -EMFILE;
	}
	m->peer = sv[1];
	m->diag_w = pf[1];
	memset(ret_chan, 0, sizeof(*ret_chan));
	ret_chan->proto_fd = sv[0];
	ret_chan->diag_fd = pf[0];
	ret_chan->end_fd = m->end_fd;
	ret_chan->contain = SIPC_CONTAIN_PROCESS_GROUP;
	*ret_handle = m;
	atomic_fetch_add(&n_launch, 1);
	return 0;
}

static int
mute_try_end(void *handle, struct sipc_exit *ret)
{
	struct mute *m = handle;

	atomic_fetch_add(&n_try_end, 1);
	if (!atomic_load(&m->ended))
		return 0;
	if (atomic_fetch_sub(&mute_try_fails, 1) > 0)
		return -EIO;
	memset(ret, 0, sizeof(*ret));
	ret->kind = SIPC_EXIT_SIGNAL;
	ret->signo = 9;
	return 1;
}

static int
mute_stop(void *handle, enum sipc_provider_stop how)
{
	struct mute *m = handle;
	uint64_t one = 1;

	atomic_store(&m->ended, true);
	return write(m->end_fd, &one, sizeof(one)) == sizeof(one) ? 0 : -errno;
}

static int
mute_sweep(void *handle)
{
	atomic_fetch_add(&n_sweep, 1);
	return -ENOTRECOVERABLE;
}

static void
mute_release(void *handle)
{
	struct mute *m = handle;

	atomic_fetch_add(&n_release, 1);
	close(m->peer);
	close(m->diag_w);
	close(m->end_fd);
	free(m);
}

/* The configuration every provider test starts from: test environment,
 * one worker, a real executable (the provider never runs it). */
static void
fake_cfg(struct sipc_config *c, const char *provider)
{
	st_cfg_init(c, "echo", NULL, 1);
	c->provider = provider;
	c->restart_base_ms = 60000;     /* one launch per test is enough */
	c->restart_cap_ms = 60000;
}

/* --------------------------------------------------------- providers */

/* sipc_provider_register(3), CONTRACT.md PV1: each required op (create,
 * destroy, launch, try_end, stop, release) missing is SIPC_E_CONFIG and
 * the name stays unknown to sipc_create(); a name of exactly
 * SIPC_PROVIDER_NAME_MAX characters is accepted and selectable, one with
 * an upper-case letter is not.  (provider_host_test covers leftover,
 * the ABI, the pair, 32 characters and -EEXIST.) */
/* rules: PV1 */
static void
test_provider_api_provider_register_required_ops(void)
{
	static struct sipc_provider_ops miss[6], longest, upper;
	static const char *const names[6] = { "out-no-create",
	    "out-no-destroy", "out-no-launch", "out-no-try-end",
	    "out-no-stop", "out-no-release" };
	static char name31[SIPC_PROVIDER_NAME_MAX + 1];
	struct sipc_config c;
	sipc_supervisor *s = NULL;
	char err[256];
	int i, creates;

	for (i = 0; i < 6; i++) {
		miss[i] = fake_base;
		miss[i].name = names[i];
	}
	miss[0].create = NULL;
	miss[1].destroy = NULL;
	miss[2].launch = NULL;
	miss[3].try_end = NULL;
	miss[4].stop = NULL;
	miss[5].release = NULL;
	for (i = 0; i < 6; i++) {
		TL_EQ(sipc_provider_register(&miss[i]),
		    SIPC_E_CONFIG);
		fake_cfg(&c, names[i]);
		err[0] = '\0';
		TL_EQ(sipc_create(&c, err, sizeof(err), &s),
		    SIPC_E_CONFIG);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "unknown provider"));
	}
	upper = fake_base;
	upper.name = "Out-upper";
	TL_EQ(sipc_provider_register(&upper), SIPC_E_CONFIG);

	memset(name31, 'z', SIPC_PROVIDER_NAME_MAX);
	memcpy(name31, "out_31-", 7);
	longest = fake_base;
	longest.name = name31;
	longest.create = fake_create_fails;
	TL_EQ_FATAL(sipc_provider_register(&longest), 0);
	/* selected: its own create ran and said why it failed */
	creates = atomic_load(&n_create);
	fake_cfg(&c, name31);
	TL_EQ(sipc_create(&c, err, sizeof(err), &s), -ENODEV);
	TL_EQ(atomic_load(&n_create), creates + 1);
	CU_ASSERT_PTR_NULL(s);
}

/* sipc_provider_register(3), sipc_provider.h: registering makes a
 * provider selectable "for every supervisor created afterwards", also
 * while another supervisor exists; the running one is not disturbed. */
/* rules: PV1 */
static void
test_provider_api_provider_register_while_supervisor_runs(void)
{
	static struct sipc_provider_ops late;
	struct sipc_config c, lc;
	struct sipc_result r;
	sipc_supervisor *s, *s2 = NULL;
	char err[256] = "";
	int creates;

	st_cfg_init(&c, "echo", NULL, 1);
	s = st_start(&c, 1, WAIT_MS);
	late = fake_base;
	late.name = "out-late";
	late.create = fake_create_fails;
	TL_EQ(sipc_provider_register(&late), 0);
	creates = atomic_load(&n_create);
	fake_cfg(&lc, "out-late");
	TL_EQ(sipc_create(&lc, err, sizeof(err), &s2), -ENODEV);
	TL_EQ(atomic_load(&n_create), creates + 1);
	CU_ASSERT_PTR_NULL(s2);
	st_call_cmd(s, NULL, WAIT_MS, 0, &r);
	TL_EQ(r.outcome, SIPC_OUTCOME_OK);
	sipc_result_release(&r);
	TL_EQ(sipc_destroy(s), 0);
}

/* sipc_provider.h, create: "a negative error with a reason in errbuf":
 * sipc_create() returns that error and that reason, leaves *ret alone,
 * never calls destroy for a state that was not made, launches nothing. */
static void
test_provider_api_provider_create_error_reaches_caller(void)
{
	static struct sipc_provider_ops o;
	struct sipc_config c;
	sipc_supervisor *sentinel = (sipc_supervisor *)&sentinel, *s = sentinel;
	char err[256] = "";
	int destroys = atomic_load(&n_destroy), launches = atomic_load(&n_launch);
	int children = tl_count_children();

	o = fake_base;
	o.name = "out-create-fails";
	o.create = fake_create_fails;
	TL_EQ_FATAL(sipc_provider_register(&o), 0);
	fake_cfg(&c, "out-create-fails");
	TL_EQ(sipc_create(&c, err, sizeof(err), &s), -ENODEV);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "fake backend: not attached"));
	CU_ASSERT(s == sentinel);
	TL_EQ(atomic_load(&n_destroy), destroys);
	TL_EQ(atomic_load(&n_launch), launches);
	TL_EQ(tl_count_children(), children);
}

/* sipc_provider.h, declared "May be NULL (none)", CONTRACT.md PV2: a
 * provider without declared declares nothing: refused as soon as one
 * guarantee is required (in test, by required_guarantees; in production,
 * all seven, each named), before its create runs. */
static void
test_provider_api_provider_without_declared_declares_nothing(void)
{
	static struct sipc_provider_ops o;
	struct sipc_config c;
	sipc_supervisor *s = NULL;
	char err[512] = "";
	int creates = atomic_load(&n_create);
	unsigned bit;

	o = fake_base;
	o.name = "out-undeclared";
	TL_EQ_FATAL(sipc_provider_register(&o), 0);
	fake_cfg(&c, "out-undeclared");
	c.required_guarantees = SIPC_G_NETWORK_ISOLATION;
	TL_EQ(sipc_create(&c, err, sizeof(err), &s),
	    SIPC_E_PRODUCTION);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "out-undeclared"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "network_isolation"));
	CU_ASSERT_PTR_NULL(strstr(err, "pid_namespace"));
	c.required_guarantees = 0;
	c.environment = SIPC_ENV_PRODUCTION;
	TL_EQ(sipc_create(&c, err, sizeof(err), &s),
	    SIPC_E_PRODUCTION);
	for (bit = 1; bit <= SIPC_G_ALL && bit != 0; bit <<= 1)
		if (bit & SIPC_G_ALL)
			CU_ASSERT_PTR_NOT_NULL(strstr(err,
			    sipc_guarantee_name(bit)));
	TL_EQ(atomic_load(&n_create), creates);
	CU_ASSERT_PTR_NULL(s);
}

/* sipc.h sipc_wait_ready(), sipc_provider.h launch: a launch that fails
 * with SIPC_E_EXEC and *ret_errno is an exec failure (wait_ready
 * SIPC_E_EXEC, last_exit EXEC_FAILED with that errno); any other error
 * is SIPC_E_HANDSHAKE and the slot's last_exit has the errno.  The
 * state create made goes to destroy, once, at sipc_destroy(). */
/* rules: H5 */
static void
test_provider_api_provider_launch_errors_reach_wait_ready(void)
{
	static struct sipc_provider_ops o;
	static const struct { int rc, eno, want, kind, code; } cases[] = {
		{ -EIO, 0, SIPC_E_HANDSHAKE, SIPC_EXIT_HANDSHAKE, EIO },
		{ SIPC_E_EXEC, ENOENT, SIPC_E_EXEC, SIPC_EXIT_EXEC_FAILED,
		  ENOENT },
	};
	struct sipc_config c;
	struct sipc_worker_stats w;
	sipc_supervisor *s;
	size_t i;
	int destroys, rc;

	o = fake_base;
	o.name = "out-launch-fails";
	TL_EQ_FATAL(sipc_provider_register(&o), 0);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		atomic_store(&launch_rc, cases[i].rc);
		atomic_store(&launch_errno, cases[i].eno);
		fake_cfg(&c, "out-launch-fails");
		s = st_start(&c, 0, 0);
		rc = sipc_wait_ready(s, 1, WAIT_MS);
		TL_EQ(rc, cases[i].want);
		w = st_worker_stats(s, 0);
		TL_EQ(w.last_exit.kind, cases[i].kind);
		TL_EQ(w.last_exit.code, cases[i].code);
		CU_ASSERT(w.state != SIPC_WS_READY);
		destroys = atomic_load(&n_destroy);
		TL_EQ(sipc_destroy(s), 0);
		TL_EQ(atomic_load(&n_destroy), destroys + 1);
		TL_EQ(atomic_load(&destroyed_state),
		    (uintptr_t)&fake_state);
	}
	atomic_store(&launch_rc, -EIO);
	atomic_store(&launch_errno, 0);
}

/* sipc_provider.h, try_end: "<0: error (the core logs it and asks
 * again)"; sweep: "0 or a negative error (logged)"; release frees every
 * handle.  A worker whose end the provider fails to report three times
 * is still settled once it does, each error in the log, and nothing of
 * the provider's is leaked (its descriptors close in release). */
static void
test_provider_api_provider_try_end_and_sweep_errors(void)
{
	static struct sipc_provider_ops o;
	struct sipc_config c;
	struct st_exit_want want = { 0, SIPC_EXIT_HANDSHAKE };
	struct st_base base = st_baseline();
	sipc_supervisor *s;
	int tries, releases = atomic_load(&n_release);

	o = fake_base;
	o.name = "out-mute";
	o.launch = mute_launch;
	o.try_end = mute_try_end;
	o.stop = mute_stop;
	o.sweep = mute_sweep;
	o.release = mute_release;
	TL_EQ_FATAL(sipc_provider_register(&o), 0);
	st_cfg_base(&c, "echo", NULL, 1);
	c.provider = "out-mute";
	c.handshake_ms = 100;       /* it never says HELLO */
	c.restart_base_ms = 60000;
	c.restart_cap_ms = 60000;
	atomic_store(&mute_try_fails, 3);
	tries = atomic_load(&n_try_end);
	s = st_start(&c, 0, 0);
	TL_EQ(sipc_wait_ready(s, 1, WAIT_MS), SIPC_E_HANDSHAKE);
	CU_ASSERT(st_stats_wait(s, st_pred_exit_kind, &want, WAIT_MS));
	CU_ASSERT(atomic_load(&n_try_end) >= tries + 4);
	CU_ASSERT(st_log_has("observing worker: "));
	CU_ASSERT(st_log_has(strerror(EIO)));
	CU_ASSERT(st_log_has("sweeping worker: "));
	CU_ASSERT(st_log_has(strerror(ENOTRECOVERABLE)));
	CU_ASSERT(atomic_load(&n_sweep) >= 1);
	TL_EQ(sipc_destroy(s), 0);
	TL_EQ(atomic_load(&n_release), releases + 1);
	st_check_nothing_left(&base, WAIT_MS);
}

/* sipc_stats_get(3): "cgroup_path names the supervisor's cgroup
 * directory, empty when it has none, and then cgroup_why says why".  A
 * provider without the (optional) info op left both empty: no path and
 * no reason. */
static void
test_provider_api_stats_cgroup_why_without_info_op(void)
{
	static struct sipc_provider_ops o;
	struct sipc_config c;
	struct sipc_stats st;
	sipc_supervisor *s;

	o = fake_base;
	o.name = "out-no-info";
	TL_EQ_FATAL(sipc_provider_register(&o), 0);
	fake_cfg(&c, "out-no-info");
	s = st_start(&c, 0, 0);
	TL_EQ_FATAL(sipc_stats_get(s, &st), 0);
	TL_STREQ(st.cgroup_path, "");
	CU_ASSERT(st.cgroup_why[0] != '\0');
	CU_ASSERT_PTR_NOT_NULL(strstr(st.cgroup_why, "out-no-info"));
	sipc_stats_release(&st);
	TL_EQ(sipc_stats_get(s, NULL), -EINVAL);
	TL_EQ(sipc_stats_get(NULL, &st), -EINVAL);
	TL_EQ(sipc_destroy(s), 0);
}

/* -------------------------------------------------------------- sandbox */

/* Can bubblewrap, the first on PATH, make its namespaces here? */
static bool
sandbox_usable(void)
{
	return system("bwrap --unshare-all --ro-bind / / /bin/true "
	    ">/dev/null 2>&1") == 0;
}

static void
probe_call(sipc_supervisor *s, const char *req, char *reply, size_t len)
{
	struct sipc_request q = { .payload = req, .len = strlen(req) };
	struct sipc_result r;

	reply[0] = '\0';
	TL_EQ_FATAL(sipc_call(s, &q, &r), 0);
	TL_EQ(r.outcome, SIPC_OUTCOME_OK);
	if (r.outcome == SIPC_OUTCOME_OK)
		snprintf(reply, len, "%.*s", (int)r.reply_len,
		    (const char *)r.reply);
	sipc_result_release(&r);
}

/*
 * CONTRACT.md SB2, SB7, SB9 and PRODUCTION_BOUNDARY.md, through
 * sipc_create() as a host configures it: the worker's environment is
 * the allow-list (env_allow, env_set, the SIPC_* variables) and nothing
 * of the host's (not even the PWD=/ bubblewrap sets after its --chdir:
 * sipc-init removes it); no host file
 * outside the minimal view (/etc/passwd, /etc/hostname, /usr/bin/env),
 * a /proc of its own (it is PID 2, its init PID 1); a PID namespace
 * although process_group was asked for.
 */
/* rules: SB2 SB9 */
static void
test_provider_api_sandbox_worker_view_through_create(void)
{
	static const char *const allow[] = { "OUTSIDE_ALLOWED", NULL };
	static const char *const set[] = { "OUTSIDE_SET=2", NULL };
	static const char *const want[] = { "OUTSIDE_ALLOWED=1",
	    "OUTSIDE_SET=2", "SIPC_FD=3", "SIPC_PARENT_PID=1",
	    "SIPC_WORKER_ID=0", "SIPC_GENERATION=1", NULL };
	struct sipc_config c;
	struct sipc_worker_stats w;
	sipc_supervisor *s;
	char reply[4096], *line, *save;
	size_t i, seen = 0;

	if (!sandbox_usable()) {
		tl_skip("bubblewrap missing or cannot make namespaces here");
		return;
	}
	setenv("OUTSIDE_ALLOWED", "1", 1);
	setenv("OUTSIDE_SECRET", "host-only", 1);
	st_cfg_init(&c, "probe", NULL, 1);
	c.provider = "sandbox";
	c.containment = SIPC_CONTAIN_PROCESS_GROUP;
	c.env_allow = allow;
	c.env_set = set;
	s = st_start(&c, 1, WAIT_MS);
	probe_call(s, "environ", reply, sizeof(reply));
	for (line = strtok_r(reply, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		bool known = strncmp(line, "SIPC_MAX_PAYLOAD=", 17) == 0;

		for (i = 0; want[i] != NULL && !known; i++)
			if (strcmp(line, want[i]) == 0) {
				known = true;
				seen++;
			}
		if (!known) {
			fprintf(stderr, "\n    worker sees \"%s\"\n", line);
			CU_FAIL("a variable the launch did not carry");
		}
	}
	TL_EQ(seen, sizeof(want) / sizeof(want[0]) - 1);
	probe_call(s, "read /etc/passwd", reply, sizeof(reply));
	TL_STREQ(reply, "read=0 errno=2");
	probe_call(s, "read /etc/hostname", reply, sizeof(reply));
	TL_STREQ(reply, "read=0 errno=2");
	probe_call(s, "read /usr/bin/env", reply, sizeof(reply));
	TL_STREQ(reply, "read=0 errno=2");
	probe_call(s, "read /proc/self/status", reply, sizeof(reply));
	CU_ASSERT_PTR_NOT_NULL(strstr(reply, "\nPid:\t2\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(reply, "\nPPid:\t1\n"));
	w = st_worker_stats(s, 0);
	TL_EQ(w.containment, SIPC_CONTAIN_PID_NAMESPACE);
	CU_ASSERT(w.pid > 1 && w.pid != getpid());
	TL_EQ(sipc_destroy(s), 0);
	unsetenv("OUTSIDE_ALLOWED");
	unsetenv("OUTSIDE_SECRET");
}

/*
 * CONTRACT.md PV4, sipc_create(3), sipc.conf(5) probe_path: "a probe
 * program that cannot be executed" refuses creation with
 * SIPC_E_PRODUCTION, errbuf naming each required guarantee with the
 * reason.  startprobe_test covers a missing path; here a file without
 * execute permission and a directory, under the sandbox, with the five
 * guarantees it declares required in test.
 */
/* rules: PV4 */
static void
test_provider_api_probe_path_not_executable_refused(void)
{
	static const char *const gnames[] = { "pid_namespace",
	    "mount_namespace", "network_isolation", "no_inherited_secrets",
	    "tree_containment", NULL };
	char dir[] = "/tmp/sipc-outside-XXXXXX", file[64], err[2048];
	const char *paths[2];
	struct sipc_config c;
	sipc_supervisor *s;
	FILE *f;
	size_t i, k;
	struct st_base base = st_baseline();

	if (!sandbox_usable()) {
		tl_skip("bubblewrap missing or cannot make namespaces here");
		return;
	}
	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(file, sizeof(file), "%s/sipc-probe", dir);
	CU_ASSERT_FATAL((f = fopen(file, "w")) != NULL);
	fputs("#!/bin/sh\nexit 0\n", f);
	fclose(f);
	CU_ASSERT_FATAL(chmod(file, 0644) == 0);
	paths[0] = file;
	paths[1] = dir;
	for (k = 0; k < 2; k++) {
		st_cfg_init(&c, "echo", NULL, 1);
		c.provider = "sandbox";
		c.required_guarantees = SIPC_G_PID_NAMESPACE |
		    SIPC_G_MOUNT_NAMESPACE | SIPC_G_NETWORK_ISOLATION |
		    SIPC_G_NO_INHERITED_SECRETS | SIPC_G_TREE_CONTAINMENT;
		c.probe_path = paths[k];
		s = NULL;
		err[0] = '\0';
		TL_EQ(sipc_create(&c, err, sizeof(err), &s),
		    SIPC_E_PRODUCTION);
		CU_ASSERT_PTR_NULL(s);
		for (i = 0; gnames[i] != NULL; i++)
			CU_ASSERT_PTR_NOT_NULL(strstr(err, gnames[i]));
		CU_ASSERT_PTR_NOT_NULL(strstr(err, paths[k]));
		CU_ASSERT_PTR_NOT_NULL(strstr(err, strerror(EACCES)));
		if (s != NULL)
			sipc_destroy(s);
	}
	st_check_nothing_left(&base, WAIT_MS);   /* the probe is gone */
	unlink(file);
	rmdir(dir);
}

int
main(void)
{
	st_no_core_files();
	tl_suite("provider_api", (tl_test[]){
	    { "test_provider_api_provider_register_required_ops",
	      test_provider_api_provider_register_required_ops },
	    { "test_provider_api_provider_register_while_supervisor_runs",
	      test_provider_api_provider_register_while_supervisor_runs },
	    { "test_provider_api_provider_create_error_reaches_caller",
	      test_provider_api_provider_create_error_reaches_caller },
	    { "test_provider_api_provider_without_declared_declares_nothing",
	      test_provider_api_provider_without_declared_declares_nothing },
	    { "test_provider_api_provider_launch_errors_reach_wait_ready",
	      test_provider_api_provider_launch_errors_reach_wait_ready },
	    { "test_provider_api_provider_try_end_and_sweep_errors",
	      test_provider_api_provider_try_end_and_sweep_errors },
	    { "test_provider_api_stats_cgroup_why_without_info_op",
	      test_provider_api_stats_cgroup_why_without_info_op },
	    { "test_provider_api_sandbox_worker_view_through_create",
	      test_provider_api_sandbox_worker_view_through_create },
	    { "test_provider_api_probe_path_not_executable_refused",
	      test_provider_api_probe_path_not_executable_refused },
	    { NULL, NULL } });
	return tl_run();
}

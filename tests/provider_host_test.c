/*
 * provider_host_test.c - the provider seam from a host's side: a
 * provider defined here, registered with sipc_provider_register(), runs
 * real workers; the library journals the identity IT returned, and
 * after the supervisor is SIGKILLed the next instance hands that
 * identity to ITS leftover op, which proves and terminates the worker.
 * Registration errors, and the fail-closed rules a registered provider
 * meets, are tested too.
 *
 * The provider ("hostwrap") wraps the local provider's ops (the library
 * is not edited for it): its identity is "HW" followed by the local
 * identity, so only this provider can make sense of it, and each op
 * counts its calls.  A forked child runs the doomed supervisor; this
 * process is a child subreaper, so the leftover worker is reparented
 * here and its exit status can be read.
 *
 * Threads: the CUnit thread; the counters are atomics because the ops
 * run on the library's reaper thread.
 */
/* rules-skip: PV6: no remote transport is built in, so none can be tested here */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "provider/provider.h"
#include "sipc.h"
#include "sipc_provider.h"
#include "sipctest.h"
#include "statedir.h"
#include "testlib.h"

#define DEADLINE_MS 20000
#define HW_TAG "HW"

static const struct sipc_provider_ops *local_ops = &sipc__provider_local;

static atomic_uint n_create, n_launch, n_leftover, n_leftover_hw;
static atomic_bool end_fd_hidden;       /* launch returns end_fd = -1 */

static int
hw_create(const struct sipc_config *cfg, void **ret_state, char *errbuf,
          size_t errlen)
{
	atomic_fetch_add(&n_create, 1);
	return local_ops->create(cfg, ret_state, errbuf, errlen);
}

/* Local's launch, then its identity wrapped in ours. */
static int
hw_launch(void *state, const struct sipc_provider_launch *l,
          struct sipc_provider_chan *ret_chan, void **ret_handle,
          int *ret_errno)
{
	struct sipc_provider_id id;
	int rc;

	if ((rc = local_ops->launch(state, l, ret_chan, ret_handle,
	    ret_errno)) < 0)
		return rc;
	atomic_fetch_add(&n_launch, 1);
	id = ret_chan->id;
	memcpy(ret_chan->id.bytes, HW_TAG, 2);
	memcpy(ret_chan->id.bytes + 2, id.bytes, id.len);
	ret_chan->id.len = (uint16_t)(id.len + 2);
	if (atomic_load(&end_fd_hidden))
		ret_chan->end_fd = -1;
	return 0;
}

/* Only an identity of ours is unwrapped and handed on. */
static int
hw_leftover(void *state, const struct sipc_provider_id *id,
            unsigned grace_ms)
{
	struct sipc_provider_id inner;

	atomic_fetch_add(&n_leftover, 1);
	if (id->len < 2 || memcmp(id->bytes, HW_TAG, 2) != 0)
		return -EINVAL;
	atomic_fetch_add(&n_leftover_hw, 1);
	inner.len = (uint16_t)(id->len - 2);
	memcpy(inner.bytes, id->bytes + 2, inner.len);
	return local_ops->leftover(state, &inner, grace_ms);
}

/* The local sweep, then "not yet" for ever: a provider that never
 * finishes reclaiming a worker. */
static int
hw_sweep_stuck(void *handle)
{
	(void)local_ops->sweep(handle);
	return 1;
}

static unsigned
hw_declared_all(const struct sipc_config *cfg)
{
	return SIPC_G_ALL;
}

static struct sipc_provider_ops hostwrap;
/* The same ops, declaring every guarantee (it gives none). */
static struct sipc_provider_ops hostwrap_claims;
/* The same ops, with a sweep that never finishes. */
static struct sipc_provider_ops hostwrap_stuck;

static void
make_ops(void)
{
	hostwrap = *local_ops;
	hostwrap.name = "hostwrap";
	hostwrap.create = hw_create;
	hostwrap.launch = hw_launch;
	hostwrap.launch_start = NULL;   /* the one-call path */
	hostwrap.launch_finish = NULL;
	hostwrap.leftover = hw_leftover;
	hostwrap_claims = hostwrap;
	hostwrap_claims.name = "hostwrap-claims";
	hostwrap_claims.declared = hw_declared_all;
	hostwrap_stuck = hostwrap;
	hostwrap_stuck.name = "hostwrap-stuck";
	hostwrap_stuck.sweep = hw_sweep_stuck;
}

static struct sipc_config
cfg_for(const char *dir, const char *fixture)
{
	struct sipc_config c;

	st_cfg_base(&c, fixture, NULL, 1);
	c.provider = "hostwrap";
	/* A leftover outlives its supervisor only in process-group mode
	 * (a namespace dies with it). */
	c.containment = SIPC_CONTAIN_PROCESS_GROUP;
	c.state_dir = dir;
	c.durability = SIPC_DURABLE_EACH;
	return c;
}

/* ------------------------------------------------------ registration */

/* rules: PV1 */
static void
test_provider_host_register_errors(void)
{
	struct sipc_provider_ops o = hostwrap;
	static char long_name[40];

	CU_ASSERT_EQUAL(sipc_provider_register(NULL), SIPC_E_CONFIG);
	o.name = "hw-abi";
	o.abi = SIPC_PROVIDER_ABI + 1;
	CU_ASSERT_EQUAL(sipc_provider_register(&o), SIPC_E_CONFIG);
	o = hostwrap;
	o.name = "Bad Name";
	CU_ASSERT_EQUAL(sipc_provider_register(&o), SIPC_E_CONFIG);
	o.name = "";
	CU_ASSERT_EQUAL(sipc_provider_register(&o), SIPC_E_CONFIG);
	o.name = NULL;
	CU_ASSERT_EQUAL(sipc_provider_register(&o), SIPC_E_CONFIG);
	memset(long_name, 'a', 32);   /* one past SIPC_PROVIDER_NAME_MAX */
	o.name = long_name;
	CU_ASSERT_EQUAL(sipc_provider_register(&o), SIPC_E_CONFIG);
	o = hostwrap;
	o.name = "hw-noleftover";
	o.leftover = NULL;
	CU_ASSERT_EQUAL(sipc_provider_register(&o), SIPC_E_CONFIG);
	o = hostwrap;
	o.name = "hw-halfpair";
	o.launch_start = local_ops->launch_start;
	CU_ASSERT_EQUAL(sipc_provider_register(&o), SIPC_E_CONFIG);
	/* A built-in's name, and a name registered already. */
	o = hostwrap;
	o.name = "local";
	CU_ASSERT_EQUAL(sipc_provider_register(&o), -EEXIST);
	CU_ASSERT_EQUAL(sipc_provider_register(&hostwrap), 0);
	CU_ASSERT_EQUAL(sipc_provider_register(&hostwrap), -EEXIST);
	CU_ASSERT_EQUAL(sipc_provider_register(&hostwrap_claims), 0);
	/* None of the refused ones became selectable. */
	CU_ASSERT_PTR_NULL(sipc__provider_find("hw-abi"));
	CU_ASSERT_PTR_NULL(sipc__provider_find("hw-noleftover"));
	CU_ASSERT_PTR_EQUAL(sipc__provider_find("hostwrap"), &hostwrap);
}

/* Production still fails closed for a registered provider that does not
 * declare every guarantee, before anything is made (no create call). */
static void
test_provider_host_production_refused(void)
{
	struct sipc_config c = cfg_for(NULL, "echo");
	unsigned creates = atomic_load(&n_create);
	sipc_supervisor *s = NULL;
	char err[256] = "";

	c.state_dir = NULL;
	c.environment = SIPC_ENV_PRODUCTION;
	CU_ASSERT_EQUAL(sipc_create(&c, err, sizeof(err), &s),
	    SIPC_E_PRODUCTION);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "hostwrap"));
	CU_ASSERT_EQUAL(atomic_load(&n_create), creates);
	CU_ASSERT_PTR_NULL(s);
}

/* A launch without an end descriptor is rescanned in test.  (In
 * production the launch refuses it; a provider that only declares the
 * guarantees never gets that far: the start-up probe refuses it first,
 * below.) */
/* rules: PV2 */
static void
test_provider_host_no_end_fd_rescanned_in_test(void)
{
	struct sipc_config c = cfg_for(NULL, "echo");
	struct sipc_result r;
	sipc_supervisor *s;

	atomic_store(&end_fd_hidden, true);
	c.state_dir = NULL;
	s = st_start(&c, 1, DEADLINE_MS);
	st_call_cmd(s, NULL, DEADLINE_MS, 0, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_OK);
	sipc_result_release(&r);
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
	atomic_store(&end_fd_hidden, false);
}

/*
 * A provider whose sweep answers "not yet" for ever does not hold its
 * slot for ever: past the reaper's bound the end is settled anyway,
 * with an error naming the provider, and the slot starts its next
 * worker (before the bound, the end waited).
 */
/* rules: PV3 */
static void
test_provider_host_stuck_sweep_is_given_up(void)
{
	struct sipc_config c = cfg_for(NULL, "echo");
	struct sipc_worker_stats w;
	struct st_gen_want want;
	struct sipc_result r;
	sipc_supervisor *s;

	c.provider = "hostwrap-stuck";
	c.state_dir = NULL;
	CU_ASSERT_FATAL(sipc_provider_register(&hostwrap_stuck) == 0 ||
	    sipc__provider_find("hostwrap-stuck") == &hostwrap_stuck);
	st_log_reset();
	s = st_start(&c, 1, DEADLINE_MS);
	w = st_worker_stats(s, 0);
	CU_ASSERT_FATAL(w.pid > 0 && kill(w.pid, SIGKILL) == 0);
	want = (struct st_gen_want){ 0, w.generation + 1 };
	CU_ASSERT(st_stats_wait(s, st_pred_gen_ready, &want, DEADLINE_MS));
	CU_ASSERT(st_log_has("provider hostwrap-stuck: sweep not done"));
	st_call_cmd(s, NULL, DEADLINE_MS, 0, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_OK);
	sipc_result_release(&r);
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
}

/*
 * A registered provider that declares every guarantee and gives none
 * (it is the local provider in process-group mode): a declaration is
 * not proof, the start-up probe refuses it in production, naming each
 * guarantee with what the probe saw.  Its create ran (the probe runs on
 * its state); nothing it launched is left.
 */
/* rules: PV4 PV5 PB1 PB16 */
static void
test_provider_host_claims_refused_by_probe(void)
{
	struct sipc_config c = cfg_for(NULL, "echo");
	unsigned launches = atomic_load(&n_launch);
	sipc_supervisor *s = NULL;
	char err[2048] = "";

	c.state_dir = NULL;
	c.provider = "hostwrap-claims";
	c.environment = SIPC_ENV_PRODUCTION;
	CU_ASSERT_EQUAL(sipc_create(&c, err, sizeof(err), &s),
	    SIPC_E_PRODUCTION);
	CU_ASSERT_PTR_NULL(s);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "provider \"hostwrap-claims\" "
	    "refused: guarantee(s) not proven by the start-up probe"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "pid_namespace (the worker can "
	    "signal host pid"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "mount_namespace (the worker read "
	    "the host's file"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "separate_user (the worker runs as "
	    "host uid"));
	/* the probe ran through the registered ops, once */
	CU_ASSERT_EQUAL(atomic_load(&n_launch), launches + 1);
}

/*
 * PV2 at start-up: outside development and test, a provider whose
 * launch hands back no end descriptor is refused when the probe is
 * launched, before any worker of it runs, and the message says why.
 */
/* rules: PV2 PB17 */
static void
test_provider_host_no_end_fd_refused_in_production(void)
{
	struct sipc_config c = cfg_for(NULL, "echo");
	sipc_supervisor *s = NULL;
	char err[2048] = "";

	atomic_store(&end_fd_hidden, true);
	c.state_dir = NULL;
	c.provider = "hostwrap-claims";
	c.environment = SIPC_ENV_PRODUCTION;
	CU_ASSERT_EQUAL(sipc_create(&c, err, sizeof(err), &s),
	    SIPC_E_PRODUCTION);
	CU_ASSERT_PTR_NULL(s);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "without an end descriptor"));
	atomic_store(&end_fd_hidden, false);
}

/* --------------------------------------------------- crash and leftover */

static void __attribute__((noreturn))
child_run(int fd, void *arg)
{
	struct sipc_config c = cfg_for(arg, "survivor");
	struct sipc_request q = { .payload = "x", .len = 1 };
	struct sipc_result r;
	struct sipc_stats st;
	sipc_supervisor *s = NULL;
	int rc;

	/* A fresh process image shares nothing with the parent's
	 * registry but what fork copied: register as a host would. */
	if ((rc = sipc_provider_register(&hostwrap)) < 0 && rc != -EEXIST)
		goto fail;
	/* One answered call: the worker is past its start-up (where it
	 * drops the parent-death signal) and will outlive us. */
	if ((rc = sipc_create(&c, NULL, 0, &s)) < 0 ||
	    (rc = sipc_wait_ready(s, 1, DEADLINE_MS)) < 0 ||
	    (rc = sipc_call(s, &q, &r)) < 0)
		goto fail;
	if ((rc = r.outcome == SIPC_OUTCOME_OK ? 0 : -EPROTO) < 0 ||
	    (rc = sipc_stats_get(s, &st)) < 0)
		goto fail;
	dprintf(fd, "ready %d %u %u\n", (int)st.workers[0].pid,
	    atomic_load(&n_launch), atomic_load(&n_create));
	for (;;)
		pause();
fail:
	sd_child_fail(fd, "supervisor", rc);
}

/* Run a supervisor on `dir` in a child, SIGKILL the child; return the
 * worker it left. */
static pid_t
crash_instance(const char *dir)
{
	unsigned launches = 0, creates = 0;
	char line[128];
	int worker = 0;
	pid_t pid;

	pid = sd_fork_instance(child_run, (void *)dir, line, sizeof(line),
	    DEADLINE_MS);
	CU_ASSERT(sscanf(line, "ready %d %u %u", &worker, &launches,
	    &creates) == 3);
	sd_kill_instance(pid);
	CU_ASSERT_FATAL(worker > 0);
	/* the child's supervisor ran through our ops */
	CU_ASSERT(launches >= 1);
	CU_ASSERT(creates >= 1);
	return worker;
}

/* rules: PV9 */
static void
test_provider_host_leftover_goes_to_its_provider(void)
{
	char *dir = sd_make();
	struct sipc_config c = cfg_for(dir, "echo");
	struct sipc_leftover *l = NULL;
	unsigned before = atomic_load(&n_leftover_hw);
	sipc_supervisor *s;
	size_t n = 0;
	pid_t worker;

	worker = crash_instance(dir);
	CU_ASSERT_FATAL(tl_pid_alive(worker));
	s = st_start(&c, 1, DEADLINE_MS);
	/* Our op got our identity ("HW" + local), and proved it. */
	CU_ASSERT_EQUAL(atomic_load(&n_leftover_hw), before + 1);
	CU_ASSERT(tl_reap_signaled(worker, SIGTERM, DEADLINE_MS));
	CU_ASSERT_FATAL(sipc_reconcile_leftovers(s, &l, &n) == 0);
	CU_ASSERT_EQUAL_FATAL(n, 1);
	CU_ASSERT_STRING_EQUAL(l[0].provider, "hostwrap");
	CU_ASSERT_EQUAL(l[0].verdict, SIPC_LEFTOVER_TERMINATED);
	/* opaque identity: no pid outside the local provider */
	CU_ASSERT_EQUAL(l[0].pid, 0);
	CU_ASSERT_EQUAL(l[0].generation, 1);
	sipc_reconcile_leftovers_free(l);
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
	sd_remove(dir);
}

/*
 * A record naming a provider this process does not have: reported,
 * left alone, not fatal; its record stays for an instance that has it.
 */
/* rules: CG2 J6 PB18 */
static void
test_provider_host_leftover_of_unknown_provider_left_alone(void)
{
	char *dir = sd_make();
	struct sipc_config c = cfg_for(dir, "echo");
	struct sipc_leftover *l = NULL;
	sipc_supervisor *s;
	size_t n = 0;
	pid_t worker;
	int i, rc;

	worker = crash_instance(dir);
	c.provider = "local";
	for (i = 0; i < 2; i++) {
		/* This process registered "hostwrap": the registry keeps
		 * the ops by pointer, so renaming them for the create
		 * makes the name unknown, as in a process that never
		 * registered it. */
		hostwrap.name = "hostwrap-gone";
		st_log_reset();
		s = NULL;
		rc = sipc_create(&c, NULL, 0, &s);
		hostwrap.name = "hostwrap";
		CU_ASSERT_EQUAL_FATAL(rc, 0);
		CU_ASSERT_FATAL(sipc_reconcile_leftovers(s, &l, &n) == 0);
		CU_ASSERT_EQUAL_FATAL(n, 1);
		CU_ASSERT_STRING_EQUAL(l[0].provider, "hostwrap");
		CU_ASSERT_EQUAL(l[0].verdict, SIPC_LEFTOVER_NO_PROVIDER);
		sipc_reconcile_leftovers_free(l);
		CU_ASSERT(st_log_has("provider not available here"));
		CU_ASSERT(tl_pid_alive(worker));
		CU_ASSERT_EQUAL(sipc_destroy(s), 0);
	}
	/* With the provider back, the next instance ends it. */
	c.provider = "hostwrap";
	s = st_start(&c, 0, 0);
	CU_ASSERT(tl_reap_signaled(worker, SIGTERM, DEADLINE_MS));
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
	sd_remove(dir);
}

int
main(void)
{
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
		perror("PR_SET_CHILD_SUBREAPER");
		return 1;
	}
	make_ops();
	tl_suite("provider_host", (tl_test[]){
	    { "test_provider_host_register_errors",
	      test_provider_host_register_errors },
	    { "test_provider_host_production_refused",
	      test_provider_host_production_refused },
	    { "test_provider_host_no_end_fd_rescanned_in_test",
	      test_provider_host_no_end_fd_rescanned_in_test },
	    { "test_provider_host_stuck_sweep_is_given_up",
	      test_provider_host_stuck_sweep_is_given_up },
	    { "test_provider_host_claims_refused_by_probe",
	      test_provider_host_claims_refused_by_probe },
	    { "test_provider_host_no_end_fd_refused_in_production",
	      test_provider_host_no_end_fd_refused_in_production },
	    { "test_provider_host_leftover_goes_to_its_provider",
	      test_provider_host_leftover_goes_to_its_provider },
	    { "test_provider_host_leftover_of_unknown_provider_left_alone",
	      test_provider_host_leftover_of_unknown_provider_left_alone },
	    { NULL, NULL } });
	return tl_run();
}

/*
 * probes.c - the isolation verifiers that run the probe fixture (the
 * library's sipc-probe) inside a worker.  What the host sets up and the
 * verdict on each reply are the start-up probe's own (src/provider/provider.h:
 * one judge per guarantee); this file only drives the provider under
 * test: one worker per verifier, launched with the bait held, asked
 * through the suite's driver.
 *
 * Threads: the CUnit thread only.  No locks.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conformance.h"
#include "driver.h"
#include "provider/provider.h"
#include "testlib.h"

/* An asked worker: the judge's context. */
struct asked {
	struct cw w;
	uint64_t id;
};

static int
cw_ask(void *ctx, const char *req, char *out, size_t cap)
{
	struct asked *a = ctx;
	struct sipc_frame f;
	int r;

	if ((r = cw_roundtrip(&a->w, ++a->id, req, (uint32_t)strlen(req),
	    &f)) < 0)
		return r;
	snprintf(out, cap, "%.*s", (int)f.hdr.len, f.payload != NULL ?
	    (char *)f.payload : "");
	free(f.payload);
	return 0;
}

/* Why the worker did not answer, from what it wrote. */
static void
say_diag(const struct cw *w, const struct sipc_provider_ops *p,
         const char *fixture)
{
	if (w->diag_len > 0)
		fprintf(stderr, "conformance: %s under %s said: %.*s\n",
		    fixture, p->name, (int)(w->diag_len > 2000 ? 2000 :
		    w->diag_len), (char *)w->diag);
}

int
conf_ask(const struct sipc_provider_ops *p, void *st, const char *fixture,
         const char *req, char *text, size_t len)
{
	const struct sipc_provider_ops *saved = conf_prov;
	void *saved_st = conf_prov_state;
	struct sipc_hello hello;
	struct asked a = { .id = 0 };
	int r;

	conf_prov = p;
	conf_prov_state = st;
	if ((r = cw_launch(&a.w, fixture, NULL, NULL)) == 0 &&
	    (r = cw_hello(&a.w, &hello)) == 0)
		r = cw_ask(&a, req, text, len);
	if (r < 0)
		say_diag(&a.w, p, fixture);
	cw_finish(&a.w);
	conf_prov = saved;
	conf_prov_state = saved_st;
	return r;
}

/*
 * Launch the probe through p with the start-up probe's bait held (its
 * secret descriptor open, without close-on-exec, across the launch) and
 * judge guarantee `bit` (0: the descriptor half of the secrets rule
 * alone) as the start-up probe does.  The suite's launch environment is
 * the channel convention only, none of it the host's.  Everything the
 * host set up is dropped before returning.
 */
int
conf_judge(const struct sipc_provider_ops *p, void *st, unsigned bit,
           unsigned fork_limit, char *why, size_t len)
{
	const struct sipc_provider_ops *saved = conf_prov;
	void *saved_st = conf_prov_state;
	struct sipc__bait b;
	struct sipc_hello hello;
	struct asked a = { .id = 0 };
	struct sipc__judge j = { .ask = cw_ask, .ctx = &a, .b = &b,
	    .envp = NULL, .fork_limit = fork_limit };
	struct sipc__sbx_policy pol;
	struct sipc_config cfg;
	int r;

	/* limits: what a launch under the default configuration sets */
	sipc_config_init(&cfg);
	sipc__sbx_policy_from_config(&cfg, &pol);
	j.limits = pol.limits;
	j.tmp_size = pol.tmp_size;
	if ((r = sipc__bait_make(&b)) < 0)
		return r;
	conf_prov = p;
	conf_prov_state = st;
	if ((r = cw_launch(&a.w, "probe", NULL, NULL)) == 0 &&
	    (r = cw_hello(&a.w, &hello)) == 0 &&
	    (j.pid = a.w.ch.display_pid) >= 0)
		r = bit != 0 ? sipc__judge(bit, &j, why, len) :
		    sipc__judge_fds(&j, why, len);
	if (r < 0)
		say_diag(&a.w, p, "probe");
	cw_finish(&a.w);
	conf_prov = saved;
	conf_prov_state = saved_st;
	sipc__bait_drop(&b);
	return r;
}

int
conf_verify_pid_namespace(const struct sipc_provider_ops *p, void *st,
                          char *why, size_t len)
{
	return conf_judge(p, st, SIPC_G_PID_NAMESPACE, 0, why, len);
}

int
conf_verify_host_files(const struct sipc_provider_ops *p, void *st,
                       char *why, size_t len)
{
	return conf_judge(p, st, SIPC_G_MOUNT_NAMESPACE, 0, why, len);
}

int
conf_verify_host_sockets(const struct sipc_provider_ops *p, void *st,
                         char *why, size_t len)
{
	return conf_judge(p, st, SIPC_G_NETWORK_ISOLATION, 0, why, len);
}

int
conf_verify_no_inherited_fds(const struct sipc_provider_ops *p, void *st,
                             char *why, size_t len)
{
	return conf_judge(p, st, 0, 0, why, len);
}

/* A canary set in the host's environment just before the launch: there
 * is always a host variable that must not reach the worker. */
int
conf_verify_no_inherited_secrets(const struct sipc_provider_ops *p, void *st,
                                 char *why, size_t len)
{
	static const char canary[] = "SIPC_CONFORMANCE_CANARY";
	int r;

	setenv(canary, "host-secret", 1);
	r = conf_judge(p, st, SIPC_G_NO_INHERITED_SECRETS, 0, why, len);
	unsetenv(canary);
	return r;
}

int
conf_verify_separate_user(const struct sipc_provider_ops *p, void *st,
                          char *why, size_t len)
{
	return conf_judge(p, st, SIPC_G_SEPARATE_USER, 0, why, len);
}

int
conf_verify_no_privilege(const struct sipc_provider_ops *p, void *st,
                         char *why, size_t len)
{
	return conf_judge(p, st, SIPC_G_NO_PRIVILEGE, 0, why, len);
}

int
conf_verify_filesystem_rules(const struct sipc_provider_ops *p, void *st,
                             char *why, size_t len)
{
	return conf_judge(p, st, SIPC_G_FILESYSTEM_RULES, 0, why, len);
}

int
conf_verify_syscall_filter(const struct sipc_provider_ops *p, void *st,
                           char *why, size_t len)
{
	return conf_judge(p, st, SIPC_G_SYSCALL_FILTER, 0, why, len);
}

int
conf_verify_limits(const struct sipc_provider_ops *p, void *st, char *why,
                   size_t len)
{
	return conf_judge(p, st, SIPC_G_LIMITS, 0, why, len);
}

/* Forks asked of the worker: a limit must refuse one of them. */
#define FORK_PROBE 128

/*
 * Resource limits: only a provider that declares limits has any to
 * probe (the launch carries no other), and the suite does not know the
 * one it set: a pids limit below FORK_PROBE must refuse a fork with
 * EAGAIN.
 */
int
conf_verify_resource_limits(const struct sipc_provider_ops *p, void *st,
                            char *why, size_t len)
{
	if (!(conf_declared(p) & SIPC_G_RESOURCE_LIMITS)) {
		snprintf(why, len, "provider %s declares no resource limit, "
		    "so none is set on its workers to probe", p->name);
		return 0;
	}
	return conf_judge(p, st, SIPC_G_RESOURCE_LIMITS, FORK_PROBE - 1, why,
	    len);
}

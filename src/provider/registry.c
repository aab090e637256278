/*
 * provider/registry.c - the provider registry and selection, failing closed.
 *
 * The rule: a configuration must say which environment it is for.  An
 * unset environment is treated as production.  In production every
 * isolation guarantee (SIPC_G_ALL) is required, plus whatever the
 * configuration asks for; in development and test only what it asks
 * for.  A provider that does not declare every required guarantee is
 * refused, each missing guarantee named, before anything is made or
 * spawned.  A declaration is not proof: sipc_create() then runs the
 * start-up probes (provider/probe.c) for every required guarantee, and
 * refuses the provider for each one not confirmed.  There is no override: not a flag, not an environment
 * variable, not a build option.  A provider a host registers is held to
 * the same rule as a built-in.
 *
 * Threads: any.  reg_lock guards the registry (reg, nreg); entries are
 * never removed, so a pointer found stays valid.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "provider/provider.h"

static const struct sipc_provider_ops *const builtins[] = {
	&sipc__provider_local,
	&sipc__provider_sandbox,
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static const struct sipc_provider_ops **reg;   /* [reg_lock] */
static size_t nreg;                            /* [reg_lock] */

static bool
name_ok(const char *name)
{
	size_t n = name != NULL ? strnlen(name, SIPC_PROVIDER_NAME_MAX + 1) : 0;

	if (n == 0 || n > SIPC_PROVIDER_NAME_MAX)
		return false;
	return strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_-") == n;
}

static bool
ops_ok(const struct sipc_provider_ops *o)
{
	return o->abi == SIPC_PROVIDER_ABI && name_ok(o->name) &&
	    o->create != NULL && o->destroy != NULL && o->launch != NULL &&
	    o->try_end != NULL && o->stop != NULL && o->release != NULL && o->leftover != NULL &&
	    (o->launch_start == NULL) == (o->launch_finish == NULL);
}

static const struct sipc_provider_ops *
find_locked(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++)
		if (strcmp(builtins[i]->name, name) == 0)
			return builtins[i];
	for (i = 0; i < nreg; i++)
		if (strcmp(reg[i]->name, name) == 0)
			return reg[i];
	return NULL;
}

const struct sipc_provider_ops *
sipc__provider_find(const char *name)
{
	const struct sipc_provider_ops *p;

	pthread_mutex_lock(&reg_lock);
	p = find_locked(name);
	pthread_mutex_unlock(&reg_lock);
	return p;
}

int
sipc_provider_register(const struct sipc_provider_ops *ops)
{
	const struct sipc_provider_ops **nv;
	int rc = 0;

	if (ops == NULL || !ops_ok(ops))
		return SIPC_E_CONFIG;
	pthread_mutex_lock(&reg_lock);
	if (find_locked(ops->name) != NULL)
		rc = -EEXIST;
	else if ((nv = reallocarray(reg, nreg + 1, sizeof(*nv))) == NULL)
		rc = -ENOMEM;
	else {
		reg = nv;
		reg[nreg++] = ops;
	}
	pthread_mutex_unlock(&reg_lock);
	return rc;
}

unsigned
sipc__provider_required(const struct sipc_config *cfg)
{
	unsigned required = cfg->required_guarantees;

	if (cfg->environment != SIPC_ENV_DEVELOPMENT &&
	    cfg->environment != SIPC_ENV_TEST)
		required |= SIPC_G_ALL;
	return required;
}

int
sipc__provider_select(const struct sipc_config *cfg, char *errbuf,
                      size_t errlen, const struct sipc_provider_ops **ret)
{
	const struct sipc_provider_ops *p;
	const char *want = cfg->provider ? cfg->provider : "local";
	unsigned required = sipc__provider_required(cfg), missing, bit;
	size_t off;

	if ((p = sipc__provider_find(want)) == NULL) {
		snprintf(errbuf, errlen, "provider: unknown provider \"%s\"",
		    want);
		return SIPC_E_CONFIG;
	}
	missing = required & ~(p->declared != NULL ? p->declared(cfg) : 0);
	if (missing == 0 && cfg->environment == SIPC_ENV_UNSET) {
		/* Even a provider that declares everything: a configuration
		 * that does not say what it is for is refused. */
		snprintf(errbuf, errlen, "environment: not stated (development, "
		    "test or production); refused");
		return SIPC_E_NOENV;
	}
	if (missing == 0) {
		*ret = p;
		return 0;
	}
	off = (size_t)snprintf(errbuf, errlen,
	    "provider \"%s\" refused for environment %s%s: missing "
	    "guarantee(s):", p->name, sipc__environment_name(cfg->environment),
	    cfg->environment == SIPC_ENV_UNSET ? " (treated as production)" :
	    "");
	for (bit = 1; bit <= SIPC_G_ALL && bit != 0; bit <<= 1) {
		if (!(missing & bit) || off >= errlen)
			continue;
		off += (size_t)snprintf(errbuf + off, errlen - off, " %s",
		    sipc_guarantee_name(bit));
	}
	if (cfg->environment == SIPC_ENV_UNSET)
		return SIPC_E_NOENV;
	return SIPC_E_PRODUCTION;
}

int
sipc__provider_end_dead(const struct sipc_provider_ops *p, void *state,
                        bool journal_settled, sipc__cg_dead_fn *say,
                        void *arg)
{
	const struct sipc__cg_state *cgs;

	if (p == &sipc__provider_local)
		cgs = state;              /* made by sipc__cg_state_create */
	else if (p == &sipc__provider_sandbox)
		cgs = sipc__sandbox_cg_state(state);
	else
		return 0;
	return cgs != NULL ? sipc__cg_end_dead(cgs->cg,
	    journal_settled, say, arg) : 0;
}

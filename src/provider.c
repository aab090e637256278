/*
 * provider.c - provider selection, failing closed.
 *
 * The rule: a configuration must say which environment it is for.  An
 * unset environment is treated as production.  In production every
 * isolation guarantee (SIPC_G_ALL) is required, plus whatever the
 * configuration asks for; in development and test only what it asks
 * for.  A provider that does not declare every required guarantee is
 * refused, each missing guarantee named, before anything is spawned.
 * There is no override: not a flag, not an environment variable, not a
 * build option.
 *
 * Threads: any (pure).
 */
#include <stdio.h>
#include <string.h>

#include "provider.h"
#include "unix/sandbox.h"

static const struct sipc__provider *const providers[] = {
	&sipc__provider_local,
	&sipc__provider_sandbox,
};

static const char *
env_name(enum sipc_environment e)
{
	switch (e) {
	case SIPC_ENV_DEVELOPMENT: return "development";
	case SIPC_ENV_TEST: return "test";
	case SIPC_ENV_PRODUCTION: return "production";
	default: return "unset (treated as production)";
	}
}

int
sipc__provider_select(const struct sipc_config *cfg, char *errbuf,
                      size_t errlen, const struct sipc__provider **ret)
{
	const struct sipc__provider *p = NULL;
	const char *want = cfg->provider ? cfg->provider : "local";
	unsigned required = cfg->required_guarantees, missing, bit;
	size_t i, off;

	for (i = 0; i < sizeof(providers) / sizeof(providers[0]); i++)
		if (strcmp(providers[i]->name, want) == 0)
			p = providers[i];
	if (p == NULL) {
		snprintf(errbuf, errlen, "provider: unknown provider \"%s\"",
		    want);
		return SIPC_E_CONFIG;
	}
	if (cfg->environment != SIPC_ENV_DEVELOPMENT &&
	    cfg->environment != SIPC_ENV_TEST)
		required |= SIPC_G_ALL;
	missing = required & ~p->guarantees;
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
	    "provider \"%s\" refused for environment %s: missing guarantee(s):",
	    p->name, env_name(cfg->environment));
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

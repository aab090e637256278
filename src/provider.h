/*
 * provider.h - the built-in providers and selection.  The interface
 * itself is public: include/sipc_provider.h.  The core calls providers
 * only through those ops.
 */
#ifndef SIPC__PROVIDER_H
#define SIPC__PROVIDER_H

#include <stddef.h>

#include "sipc_provider.h"

/* Built in (unix/local.c). */
extern const struct sipc_provider_ops sipc__provider_local;

/* The provider called `name`: a built-in, else a registered one; NULL
 * when there is none.  Any thread. */
const struct sipc_provider_ops *sipc__provider_find(const char *name);

/* The guarantees cfg requires: its own, plus SIPC_G_ALL outside
 * development and test.  Pure; any thread. */
unsigned sipc__provider_required(const struct sipc_config *cfg);

/*
 * Select the provider named in cfg and check it against the
 * configuration's environment, before anything is made.  Fails closed:
 * SIPC_E_CONFIG for an unknown name, SIPC_E_NOENV when the environment
 * is unset, SIPC_E_PRODUCTION (each missing guarantee named in errbuf)
 * when the provider does not declare a required guarantee.  Any
 * thread.
 */
int sipc__provider_select(const struct sipc_config *cfg, char *errbuf,
                          size_t errlen,
                          const struct sipc_provider_ops **ret);

#endif

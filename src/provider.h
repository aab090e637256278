/*
 * provider.h - the built-in providers and selection.  The interface
 * itself is public: include/sipc_provider.h.  The core calls providers
 * only through those ops.
 */
#ifndef SIPC__PROVIDER_H
#define SIPC__PROVIDER_H

#include <stdbool.h>
#include <stddef.h>

#include "sipc_provider.h"
#include "unix/cgroup.h"

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

/*
 * After the leftover verdicts of sipc_create() (right after the
 * provider's state was made when there is no state directory, hence no
 * verdict): a built-in provider's state with a cgroup ends what crashed
 * supervisors left in theirs (sipc__cg_end_dead: its rules,
 * journal_settled and `say`).  The state of a registered provider is
 * its own: nothing is done.  The number of cgroups killed, or -errno.
 * sipc_create()'s thread.
 */
int sipc__provider_end_dead(const struct sipc_provider_ops *p, void *state,
                            bool journal_settled, sipc__cg_dead_fn *say,
                            void *arg);

#endif

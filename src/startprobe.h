/*
 * startprobe.h - the guarantees a provider declares, proven at
 * sipc_create() by running sipc-probe once through it.
 */
#ifndef SIPC__STARTPROBE_H
#define SIPC__STARTPROBE_H

#include <stddef.h>

#include "sipc_provider.h"

/*
 * Launch the probe program through provider `p` (its state `state`,
 * made by its create op), prove each guarantee of `required` from the
 * host side, then stop, sweep and release the probe.  Bounded: the
 * whole run ends within handshake_ms + grace_ms + SIPC__PROBE_SLACK_MS
 * of cfg, whatever the probe does (requests until handshake_ms + 2 s,
 * the end after a forced stop within grace_ms + 1 s).  Returns 0 when every required
 * guarantee was confirmed; SIPC_E_PRODUCTION with each guarantee not
 * confirmed and the reason in errbuf otherwise (a probe program that
 * cannot be executed, does not answer or hangs confirms nothing).
 * sipc_create()'s thread, before the reaper starts: the ops' per-handle
 * calls are then the only ones on this state.
 */
#define SIPC__PROBE_SLACK_MS 3000
int sipc__startprobe_run(const struct sipc_provider_ops *p, void *state,
                         const struct sipc_config *cfg, unsigned required,
                         char *errbuf, size_t errlen);

#endif

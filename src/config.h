/*
 * config.h - internal side of the configuration module: validation of a
 * struct sipc_config and guarantee names.  Pure functions, no shared
 * state, any thread.
 */
#ifndef SIPC_CONFIG_H
#define SIPC_CONFIG_H

#include <stddef.h>

#include "sipc.h"

/*
 * Check every field of `cfg` against its documented range (the table at
 * the top of config.c) and the cross-field rules:
 *   ring_bytes >= max_payload + SIPC_FRAME_HDR_LEN  (one frame fits a ring)
 *   mem_ceiling >= ring_bytes                       (one ring fits memory)
 *   restart_cap_ms >= restart_base_ms
 * plus: environment and durability are known enum values,
 * required_guarantees has no bit outside SIPC_G_ALL, provider and path
 * are non-NULL and non-empty, env_allow entries are variable names and
 * env_set entries are "NAME=value".
 * The environment's *meaning* (fail-closed provider selection) is not
 * judged here: that is the provider module's job.
 * Returns 0, or SIPC_E_CONFIG with a message naming the field in
 * errbuf (may be NULL).  Any thread.
 */
int sipc__config_validate(const struct sipc_config *cfg, char *errbuf,
                          size_t errlen);

/* Map a guarantee name ("pid_namespace", ...) to its bit.  Returns 0, or
 * SIPC_E_CONFIG for an unknown name (ret_bit untouched).  Any thread. */
int sipc__guarantee_parse(const char *name, unsigned *ret_bit);

/* Name of an environment value ("development", ...; "unset" for UNSET,
 * "invalid" for anything else).  Never NULL.  Any thread. */
const char *sipc__environment_name(enum sipc_environment e);

#endif

/*
 * config.h - internal side of the configuration module (config.c: key
 * table, defaults, names, validation; config_load.c: file and environment
 * parsing).  Validation of a struct sipc_config, guarantee names, and the
 * key table and helpers the two files share.  Read-only data and pure
 * functions, no shared state, any thread.
 */
#ifndef SIPC_CONFIG_H
#define SIPC_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "sipc.h"

/*
 * Check every field of `cfg` against its documented range (the table at
 * the top of config_load.c) and the cross-field rules:
 *   ring_bytes >= max_payload + SIPC_FRAME_HDR_LEN  (one frame fits a ring)
 *   mem_ceiling >= ring_bytes                       (one ring fits memory)
 *   restart_cap_ms >= restart_base_ms
 *   cgroup != off when a limit (pids_max, memory_max, cpu_max_percent)
 *   is set
 * plus: environment, durability, containment and cgroup are known enum
 * values,
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

/* ------------------------------------------- shared by config*.c only */

/* The first seven kinds are integers checked against min..max (an enum's
 * names, a guarantee mask's bits); the rest are checked by kind. */
enum sipc__cfg_kind {
	SIPC__CK_NUM,            /* unsigned, uint32_t or size_t in min..max */
	SIPC__CK_ENVIRONMENT,
	SIPC__CK_DURABILITY,
	SIPC__CK_CONTAINMENT,    /* enum sipc_containment */
	SIPC__CK_CGROUP,         /* enum sipc_cgroup_mode */
	SIPC__CK_GUARANTEES,
	SIPC__CK_LIMIT,          /* size_t in min..max, or SIPC_UNLIMITED */
	SIPC__CK_BOOL,
	SIPC__CK_STRING,         /* required, non-empty */
	SIPC__CK_OPTSTRING,      /* empty = NULL */
	SIPC__CK_ARGV,
	SIPC__CK_NAMES,          /* comma-separated variable names */
	SIPC__CK_ENVSET,         /* repeatable NAME=value */
};

struct sipc__cfg_key {
	const char *name;
	enum sipc__cfg_kind kind;
	size_t off, size;
	long long min, max;
};

/* One entry per field of struct sipc_config, in the order of the format
 * description at the top of config_load.c.  Defined in config.c; the
 * count is checked there against the table.  The loader keeps a
 * uint64_t mask of keys seen. */
#define SIPC__CFG_NKEYS 61
_Static_assert(SIPC__CFG_NKEYS <= 64, "seen-key mask is a uint64_t");
extern const struct sipc__cfg_key sipc__cfg_keys[];

/* Value names indexed by enum value ("unset" is not accepted as input). */
#define SIPC__CFG_NENV 4
#define SIPC__CFG_NDURABILITY 3
extern const char *const sipc__cfg_env_names[SIPC__CFG_NENV];
extern const char *const sipc__cfg_durability_names[SIPC__CFG_NDURABILITY];

/* True when the SIPC_* variable `name` (n bytes, the name only) is one
 * that shares the prefix but is not configuration: set by the supervisor
 * for each worker, or used by the library's own build and tests (the
 * list is in config.c and sipc.conf(5)).  sipc_config_load_env() skips
 * these and refuses every other SIPC_* name that is not a key.  Any
 * thread. */
bool sipc__cfg_env_reserved(const char *name, size_t n);

/* True when the n bytes at s form a variable name: [A-Za-z_][A-Za-z0-9_]*.
 * Any thread. */
bool sipc__cfg_valid_varname(const char *s, size_t n);

#endif

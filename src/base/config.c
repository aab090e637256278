/*
 * config.c - configuration: the key table (name, kind, field and range of
 * every setting), defaults, guarantee and environment names, and
 * validation of a filled-in struct sipc_config.  The file and
 * environment formats, and their parsing, are in config_load.c; the
 * comment at its top documents them, including the ranges below.
 *
 * Threads: any.  No shared state, no locks.
 */
#include <stdio.h>
#include <string.h>

#include "base/base.h"
#include "wire/wire.h"
#include "init/syscall_profile.h"
#include "request/request.h"

#define MIB (1024LL * 1024)
#define DAY_MS 86400000LL
#define SIZE_CAP (1LL << 40)

#define F(f) offsetof(struct sipc_config, f), \
	sizeof(((struct sipc_config *)0)->f)
#define NUM(f, lo, hi) { #f, SIPC__CK_NUM, F(f), (lo), (hi) }
#define OTHER(f, kind) { #f, kind, F(f), 0, 0 }
#define LIMIT(f, hi) { #f, SIPC__CK_LIMIT, F(f), 0, (hi) }

const struct sipc__cfg_key sipc__cfg_keys[] = {
	{ "environment", SIPC__CK_ENVIRONMENT, F(environment), 0,
	  SIPC_ENV_PRODUCTION },
	{ "required_guarantees", SIPC__CK_GUARANTEES, F(required_guarantees), 0,
	  SIPC_G_ALL },
	OTHER(provider, SIPC__CK_STRING),
	OTHER(path, SIPC__CK_STRING),
	OTHER(argv, SIPC__CK_ARGV),
	OTHER(env_allow, SIPC__CK_NAMES),
	OTHER(env_set, SIPC__CK_ENVSET),
	NUM(workers, 1, 1024),
	NUM(max_inflight, 1, 65536),
	NUM(max_fds_in_flight, 1, 65536),
	/* At least a HELLO: the limit applies to every frame a worker
	 * sends, its handshake included, so a smaller one starts nothing. */
	NUM(max_payload, SIPC_HELLO_LEN, SIPC_FRAME_MAX_PAYLOAD),
	NUM(ring_frames, 1, 1048576),
	NUM(ring_bytes, SIPC_FRAME_HDR_LEN + SIPC_HELLO_LEN, SIZE_CAP),
	NUM(mem_ceiling, SIPC_FRAME_HDR_LEN + SIPC_HELLO_LEN, SIZE_CAP),
	NUM(diag_line_max, 16, MIB),
	NUM(diag_tail_bytes, 64, 16 * MIB),
	/* Default 30 s (config_defaults()): a converter (LibreOffice,
	 * Ghostscript with fonts to load) may take seconds to start on a
	 * loaded machine, and converter pools wait 20 to 240 s for theirs;
	 * 5 s failed such workers as HANDSHAKE.  A dead or wedged start
	 * is still seen at once (its exit, the start probe); only a
	 * worker that lives and never says HELLO takes the whole time. */
	NUM(handshake_ms, 1, 600000),
	NUM(grace_ms, 0, 600000),
	NUM(drain_ms, 0, 600000),
	NUM(stall_ms, 1, DAY_MS),
	NUM(cancel_grace_ms, 0, 600000),
	NUM(queue_timeout_ms, 0, DAY_MS),
	NUM(max_requests, 0, UINT32_MAX),
	NUM(max_age_ms, 0, DAY_MS),
	NUM(spares, 0, 1024),
	NUM(max_rss, 0, SIZE_CAP),
	NUM(request_figures, 0, 1),
	NUM(idempotent_retries, 0, 100),
	NUM(restart_base_ms, 1, 3600000),
	NUM(restart_cap_ms, 1, DAY_MS),
	NUM(restart_reset_ms, 0, DAY_MS),
	NUM(restart_intensity, 1, SIPC__RESTART_INTENSITY_MAX),
	NUM(restart_window_ms, 1, DAY_MS),
	NUM(pool_restart_budget, 1, SIPC__POOL_BUDGET_MAX),
	NUM(cooldown_ms, 1, DAY_MS),
	OTHER(owner, SIPC__CK_BOOL),
	{ "containment", SIPC__CK_CONTAINMENT, F(containment), 0,
	  SIPC_CONTAIN_PROCESS_GROUP },
	OTHER(init_path, SIPC__CK_OPTSTRING),
	NUM(worker_nproc_limit, 0, 4194304),
	OTHER(state_dir, SIPC__CK_OPTSTRING),
	{ "durability", SIPC__CK_DURABILITY, F(durability), 0, SIPC_DURABLE_EACH },
	NUM(group_commit_ms, 0, 60000),
	{ "cgroup", SIPC__CK_CGROUP, F(cgroup), 0, SIPC_CGROUP_REQUIRED },
	NUM(pids_max, 0, 4194304),
	NUM(memory_max, 0, SIZE_CAP),
	NUM(cpu_max_percent, 0, 100000),
	OTHER(probe_path, SIPC__CK_OPTSTRING),
	OTHER(scratch_root, SIPC__CK_OPTSTRING),
	NUM(gather_us, 0, 1000000),
	/* never 0: root is what the sandbox's identity is not */
	NUM(sandbox_uid, 1, 4294967294LL),
	NUM(sandbox_gid, 1, 4294967294LL),
	OTHER(sandbox_ro_paths, SIPC__CK_OPTSTRING),
	OTHER(syscalls_refuse, SIPC__CK_OPTSTRING),
	OTHER(syscalls_allow, SIPC__CK_OPTSTRING),
	OTHER(syscalls_audit, SIPC__CK_BOOL),
	LIMIT(rlimit_as, 1LL << 50),
	LIMIT(rlimit_fsize, 1LL << 50),
	LIMIT(rlimit_nofile, 1048576),
	LIMIT(rlimit_cpu, 31536000),
	LIMIT(max_procs, 4194304),
	LIMIT(tmp_size, SIZE_CAP),
};
_Static_assert(sizeof(sipc__cfg_keys) / sizeof(sipc__cfg_keys[0]) ==
    SIPC__CFG_NKEYS, "SIPC__CFG_NKEYS counts the key table");

/*
 * SIPC_* names that are not configuration (sipc.conf(5), "Not
 * configuration").  Exact names end without '_'; a name ending in '_' is
 * a prefix, and only names longer than it match.  Keep this list, the
 * page and tests/config_test.c:test_config_env_reserved_names_ignored in
 * step: a variable the tree uses that is missing here makes every host
 * that loads its environment under that variable fail (the examples run
 * by `make check` load theirs).
 */
static const char *const env_reserved[] = {
	/* set by the supervisor for each worker (sipc.conf(5)); a worker
	 * that is itself a host loads an environment holding them */
	"SIPC_FD", "SIPC_PARENT_PID", "SIPC_WORKER_ID", "SIPC_GENERATION",
	"SIPC_SCRATCH",
	/* the library's build and test harness (GNUmakefile, tests/run.sh,
	 * .ci/run) */
	"SIPC_BUILD", "SIPC_FIXTURES", "SIPC_INIT", "SIPC_MAKE",
	"SIPC_NO_DEPS", "SIPC_SAN", "SIPC_XML_DIR", "SIPC_TEST_",
	/* test fixtures (fixtures/) and the drill (tests/drill/) */
	"SIPC_FX_", "SIPC_ECHO_", "SIPC_DRILL_", "SIPC_EXEC_LOG",
	"SIPC_FRAME_LOG", "SIPC_STARTCTR_LOG",
};

bool
sipc__cfg_env_reserved(const char *name, size_t n)
{
	for (size_t i = 0; i < sizeof(env_reserved) / sizeof(*env_reserved);
	    i++) {
		const char *r = env_reserved[i];
		size_t rl = strlen(r);

		if (r[rl - 1] == '_' ? n > rl && memcmp(name, r, rl) == 0 :
		    n == rl && memcmp(name, r, rl) == 0)
			return true;
	}
	return false;
}

const char *const sipc__cfg_env_names[SIPC__CFG_NENV] = {
	[SIPC_ENV_UNSET] = "unset",
	[SIPC_ENV_DEVELOPMENT] = "development",
	[SIPC_ENV_TEST] = "test",
	[SIPC_ENV_PRODUCTION] = "production",
};
const char *const sipc__cfg_durability_names[SIPC__CFG_NDURABILITY] = {
	[SIPC_DURABLE_OFF] = "off",
	[SIPC_DURABLE_GROUP] = "group",
	[SIPC_DURABLE_EACH] = "each",
};
/* Indexed by bit position; order of enum sipc_guarantee.  Because the
 * bits are contiguous from bit 0, "no unknown bit" is the range check
 * 0..SIPC_G_ALL used for required_guarantees. */
static const char *const guarantee_names[] = {
	"pid_namespace", "mount_namespace", "network_isolation",
	"no_inherited_secrets", "resource_limits", "separate_user",
	"tree_containment", "syscall_filter", "limits", "no_privilege", "filesystem_rules",
};
_Static_assert(SIPC_G_ALL >> (sizeof(guarantee_names) /
    sizeof(guarantee_names[0])) == 0, "a name for every guarantee");

/* ------------------------------------------------------------ defaults */

static void
config_defaults(struct sipc_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->environment = SIPC_ENV_UNSET;
	cfg->provider = "local";
	cfg->workers = 2;
	cfg->max_inflight = 16;
	cfg->max_fds_in_flight = 64;
	cfg->gather_us = 1000;
	cfg->max_payload = 16 * 1024 * 1024;
	cfg->ring_frames = 256;
	cfg->ring_bytes = (size_t)64 * 1024 * 1024;
	cfg->mem_ceiling = (size_t)256 * 1024 * 1024;
	cfg->diag_line_max = 1024;
	cfg->diag_tail_bytes = 4096;
	cfg->handshake_ms = 30000;  /* why: the key table above */
	cfg->grace_ms = 5000;
	cfg->drain_ms = 5000;
	cfg->stall_ms = 10000;
	cfg->cancel_grace_ms = 2000;
	cfg->idempotent_retries = 2;
	cfg->restart_base_ms = 100;
	cfg->restart_cap_ms = 30000;
	cfg->restart_reset_ms = 10000;
	cfg->restart_intensity = 5;
	cfg->restart_window_ms = 10000;
	cfg->pool_restart_budget = 20;
	cfg->cooldown_ms = 30000;
	cfg->owner = false;
	cfg->worker_nproc_limit = 0;
	cfg->state_dir = NULL;
	cfg->durability = SIPC_DURABLE_GROUP;
	cfg->group_commit_ms = 10;
	cfg->sandbox_uid = 65534;     /* "nobody" */
	cfg->sandbox_gid = 65534;
}

/* The caller's struct is `size` bytes (its header's sizeof): write the
 * defaults into at most that much, zero what lies beyond ours, and stamp
 * it with the caller's figures so sipc_create() can tell a mismatch. */
void
sipc_config_init_abi(struct sipc_config *cfg, size_t size, unsigned version)
{
	struct sipc_config d;

	config_defaults(&d);
	d.struct_size = (uint32_t)size;
	d.version = version;
	if (size > sizeof(d)) {
		memset((char *)cfg + sizeof(d), 0, size - sizeof(d));
		size = sizeof(d);
	}
	memcpy(cfg, &d, size);
}

/* The stamp first: with the wrong size every other field is read at the
 * wrong offset.  Only this header's size is known so far (NEWS.md). */
static bool
validate_stamp(const struct sipc_config *cfg, char *msg, size_t len)
{
	unsigned v = cfg->version;

	if (cfg->struct_size == 0 && v == 0)
		snprintf(msg, len, "struct sipc_config has no stamp: start from "
		    "sipc_config_init()");
	else if (v > SIPC_VERSION_HEX || (v >> 16) != SIPC_VERSION_MAJOR)
		snprintf(msg, len, "struct sipc_config from %s sipc headers "
		    "(%u.%u.%u) than this library (%s): rebuild against its "
		    "headers", v > SIPC_VERSION_HEX ? "newer" : "older major",
		    v >> 16, (v >> 8) & 0xff, v & 0xff, SIPC_VERSION_STRING);
	else if (cfg->struct_size != sizeof(*cfg))
		snprintf(msg, len, "struct sipc_config of unknown size %u "
		    "(this library knows %zu): rebuild against its headers",
		    cfg->struct_size, sizeof(*cfg));
	else
		return true;
	return false;
}

/* --------------------------------------------------------------- names */

const char *
sipc_guarantee_name(unsigned one_bit)
{
	if (one_bit == 0 || (one_bit & (one_bit - 1)) != 0 ||
	    (one_bit & ~SIPC_G_ALL) != 0)
		return "unknown";
	return guarantee_names[__builtin_ctz(one_bit)] != NULL ?
	    guarantee_names[__builtin_ctz(one_bit)] : "unknown";
}

int
sipc__guarantee_parse(const char *name, unsigned *ret_bit)
{
	size_t i;

	for (i = 0; i < sizeof(guarantee_names) / sizeof(guarantee_names[0]);
	    i++)
		if (guarantee_names[i] != NULL &&
		    strcmp(name, guarantee_names[i]) == 0) {
			*ret_bit = 1u << i;
			return 0;
		}
	return SIPC_E_CONFIG;
}

const char *
sipc__environment_name(enum sipc_environment e)
{
	if ((unsigned)e < SIPC__CFG_NENV)
		return sipc__cfg_env_names[e];
	return "invalid";
}

/* ---------------------------------------------------------- validation */

bool
sipc__cfg_valid_varname(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || (s[0] >= '0' && s[0] <= '9'))
		return false;
	for (i = 0; i < n; i++)
		if (!(s[i] == '_' || (s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9')))
			return false;
	return true;
}

static unsigned long long
num_get(const struct sipc_config *cfg, const struct sipc__cfg_key *k)
{
	uint32_t v32;
	uint64_t v64;

	if (k->size == sizeof(v32)) {
		memcpy(&v32, (const char *)cfg + k->off, sizeof(v32));
		return v32;
	}
	memcpy(&v64, (const char *)cfg + k->off, sizeof(v64));
	return v64;
}

static bool
valid_list(const char *const *list, bool assignments)
{
	const char *eq;

	for (; list != NULL && *list != NULL; list++) {
		eq = assignments ? strchr(*list, '=') : NULL;
		if (assignments && eq == NULL)
			return false;
		if (!sipc__cfg_valid_varname(*list, assignments ?
		    (size_t)(eq - *list) : strlen(*list)))
			return false;
	}
	return true;
}

/* Check one field on its own; on failure write "field: reason". */
static bool
validate_key(const struct sipc_config *cfg, const struct sipc__cfg_key *k,
             char *msg, size_t len)
{
	unsigned long long v;

	if (k->kind == SIPC__CK_NAMES || k->kind == SIPC__CK_ENVSET) {
		if (valid_list(k->kind == SIPC__CK_NAMES ? cfg->env_allow :
		    cfg->env_set, k->kind == SIPC__CK_ENVSET))
			return true;
		snprintf(msg, len, "%s: %s", k->name, k->kind == SIPC__CK_NAMES ?
		    "entry is not a variable name" : "entry is not NAME=value");
		return false;
	}
	if (k->kind > SIPC__CK_GUARANTEES)
		return true;      /* strings: validate_strings() */
	v = num_get(cfg, k);
	/* guarantees are bits, not a range: a bit no guarantee has fails */
	if (k->kind == SIPC__CK_GUARANTEES ? (v & ~(unsigned long long)k->max)
	    == 0 : v >= (unsigned long long)k->min &&
	    v <= (unsigned long long)k->max)
		return true;
	if (k->kind == SIPC__CK_LIMIT && v == SIPC_UNLIMITED)
		return true;
	if (k->kind == SIPC__CK_NUM || k->kind == SIPC__CK_LIMIT)
		snprintf(msg, len, "%s: value %llu out of range %lld..%lld",
		    k->name, v, k->min, k->max);
	else
		snprintf(msg, len, "%s: unknown value %llu", k->name, v);
	return false;
}

/* Each ':'-separated entry an absolute path, none empty; no newline
 * (the filesystem rules' lists are '\n'-separated). */
static bool
ro_paths_ok(const char *v, char *msg, size_t len)
{
	const char *p = v, *end;

	if (v != NULL && strchr(v, '\n') != NULL) {
		snprintf(msg, len, "sandbox_ro_paths: a path holds a newline");
		return false;
	}
	while (p != NULL) {
		end = strchr(p, ':');
		if (p[0] != '/') {
			snprintf(msg, len, "sandbox_ro_paths: entry \"%.*s\" is "
			    "not an absolute path", end ? (int)(end - p) :
			    (int)strlen(p), p);
			return false;
		}
		p = end != NULL ? end + 1 : NULL;
	}
	return true;
}

static bool
validate_strings(const struct sipc_config *cfg, char *msg, size_t len)
{
	if (cfg->provider == NULL || cfg->provider[0] == '\0')
		snprintf(msg, len, "provider: missing");
	else if (cfg->path == NULL || cfg->path[0] == '\0')
		snprintf(msg, len, "path: missing (worker executable)");
	else if (cfg->scratch_root != NULL && cfg->scratch_root[0] != '/')
		snprintf(msg, len, "scratch_root: %s is not an absolute path",
		    cfg->scratch_root);
	else if (!ro_paths_ok(cfg->sandbox_ro_paths, msg, len))
		return false;
	else if (cfg->state_dir != NULL && cfg->state_dir[0] == '\0')
		snprintf(msg, len, "state_dir: empty (use NULL to disable)");
	else if (cfg->init_path != NULL && cfg->init_path[0] == '\0')
		snprintf(msg, len, "init_path: empty (use NULL for the "
		    "installed sipc-init)");
	else if (cfg->probe_path != NULL && cfg->probe_path[0] == '\0')
		snprintf(msg, len, "probe_path: empty (use NULL for the "
		    "installed sipc-probe)");
	else
		return true;
	return false;
}

/* ------------------------------------------------ system-call lists */

static const char *const profile[] = { SIPC__SYSCALLS_REFUSED };

/* Does the comma-separated list hold name (n bytes)? */
static bool
list_has(const char *list, const char *name, size_t n)
{
	const char *p = list, *c;
	size_t len;

	for (; p != NULL && *p != '\0'; p = c != NULL ? c + 1 : NULL) {
		c = strchr(p, ',');
		len = c != NULL ? (size_t)(c - p) : strlen(p);
		if (len == n && memcmp(p, name, n) == 0)
			return true;
	}
	return false;
}

static bool
in_profile(const char *name, size_t n)
{
	for (size_t i = 0; i < sizeof(profile) / sizeof(profile[0]); i++)
		if (strlen(profile[i]) == n && memcmp(profile[i], name, n) == 0)
			return true;
	return false;
}

/* Every entry of a syscalls_* list a name's syntax (a-z, 0-9, '_', at
 * most 31); allowed back only what the profile refuses; none both
 * refused and allowed.  Whether libseccomp knows each refused name is
 * the sandbox provider's check (it asks sipc-init, which installs them). */
static bool
syscall_list_valid(const char *key, const char *list, const char *other,
                   bool allow, char *msg, size_t len)
{
	const char *p = list, *c;
	size_t n, i;

	for (; p != NULL && *p != '\0'; p = c != NULL ? c + 1 : NULL) {
		c = strchr(p, ',');
		n = c != NULL ? (size_t)(c - p) : strlen(p);
		for (i = 0; i < n; i++)
			if (!((p[i] >= 'a' && p[i] <= 'z') || p[i] == '_' ||
			    (p[i] >= '0' && p[i] <= '9')))
				break;
		if (n == 0 || n > 31 || i < n) {
			snprintf(msg, len, "%s: \"%.*s\" is not a system call "
			    "name", key, (int)(n > 40 ? 40 : n), p);
			return false;
		}
		if (allow && !in_profile(p, n)) {
			snprintf(msg, len, "%s: %.*s is not refused by the "
			    "default profile (sipc.conf(5))", key, (int)n, p);
			return false;
		}
		if (!allow && list_has(other, p, n)) {
			snprintf(msg, len, "%s: %.*s is also in syscalls_allow",
			    key, (int)n, p);
			return false;
		}
	}
	return true;
}

static bool
syscalls_valid(const struct sipc_config *cfg, char *msg, size_t len)
{
	if (!syscall_list_valid("syscalls_refuse", cfg->syscalls_refuse,
	    cfg->syscalls_allow, false, msg, len) ||
	    !syscall_list_valid("syscalls_allow", cfg->syscalls_allow, NULL,
	    true, msg, len))
		return false;
	if (cfg->syscalls_audit && (cfg->environment == SIPC_ENV_PRODUCTION ||
	    cfg->environment == SIPC_ENV_UNSET)) {
		snprintf(msg, len, "syscalls_audit: refused under production "
		    "(environment %s): it lets every refused call run",
		    sipc__environment_name(cfg->environment));
		return false;
	}
	return true;
}

static bool
validate_cross(const struct sipc_config *cfg, char *msg, size_t len)
{
	if (cfg->ring_bytes < (size_t)cfg->max_payload + SIPC_FRAME_HDR_LEN)
		snprintf(msg, len, "ring_bytes: %zu must be >= max_payload + "
		    "%d (%zu)", cfg->ring_bytes, SIPC_FRAME_HDR_LEN,
		    (size_t)cfg->max_payload + SIPC_FRAME_HDR_LEN);
	else if (cfg->mem_ceiling < cfg->ring_bytes)
		snprintf(msg, len, "mem_ceiling: %zu must be >= ring_bytes "
		    "(%zu)", cfg->mem_ceiling, cfg->ring_bytes);
	else if (cfg->workers + cfg->spares > 1024)
		snprintf(msg, len, "spares: workers + spares must be <= 1024 "
		    "(%u)", cfg->workers + cfg->spares);
	else if (cfg->restart_cap_ms < cfg->restart_base_ms)
		snprintf(msg, len, "restart_cap_ms: %u must be >= "
		    "restart_base_ms (%u)", cfg->restart_cap_ms,
		    cfg->restart_base_ms);
	else if (!syscalls_valid(cfg, msg, len))
		return false;
	else if (cfg->cgroup == SIPC_CGROUP_OFF && (cfg->pids_max != 0 ||
	    cfg->memory_max != 0 || cfg->cpu_max_percent != 0))
		snprintf(msg, len, "cgroup: off, but %s is set (limits are "
		    "enforced through the worker's cgroup)",
		    cfg->pids_max ? "pids_max" : cfg->memory_max ? "memory_max" :
		    "cpu_max_percent");
	else
		return true;
	return false;
}

int
sipc__config_validate(const struct sipc_config *cfg, char *errbuf,
                      size_t errlen)
{
	char msg[256];
	size_t i;
	bool ok = true;

	if (cfg == NULL) {
		snprintf(msg, sizeof(msg), "no configuration");
		ok = false;
	}
	else
		ok = validate_stamp(cfg, msg, sizeof(msg));
	for (i = 0; ok && i < SIPC__CFG_NKEYS; i++)
		ok = validate_key(cfg, &sipc__cfg_keys[i], msg, sizeof(msg));
	if (ok)
		ok = validate_strings(cfg, msg, sizeof(msg)) &&
		    validate_cross(cfg, msg, sizeof(msg));
	if (ok)
		return 0;
	if (errbuf != NULL && errlen > 0)
		snprintf(errbuf, errlen, "%s", msg);
	return SIPC_E_CONFIG;
}

/*
 * config_load.c - strict parsing of a configuration file and of SIPC_*
 * environment variables into a struct sipc_config, and the store that owns
 * the strings and arrays a loaded configuration points at.  The key table,
 * defaults and validation are in config.c.
 *
 * Threads: any.  No shared state, no locks.  sipc_config_load_env() with
 * envp == NULL reads `environ`, which must not change concurrently
 * (setenv/putenv in another thread).
 *
 * ---- Configuration file format ----------------------------------------
 *
 *   # comment                      whole line; first non-blank char is '#'
 *   key = value                    blanks around key and value ignored
 *
 * One setting per line; blank lines are ignored.  A '#' after a value is
 * part of the value (paths may contain it).  Keys are the field names of
 * struct sipc_config.  Every key may appear once, except env_set, which
 * may repeat.  Values:
 *
 *   environment          development | test | production
 *   required_guarantees  comma-separated: pid_namespace, mount_namespace,
 *                        network_isolation, no_inherited_secrets,
 *                        resource_limits, separate_user, tree_containment,
 *                        no_privilege, filesystem_rules;
 *                        or "all"; empty or "none" = 0
 *   provider, path       text (rest of the line), non-empty
 *   argv                 words separated by blanks; a double-quoted part
 *                        may hold blanks, and inside it \" and \\ stand
 *                        for " and \; empty = argv[0] is the path
 *   env_allow            comma-separated variable names; empty = none
 *   env_set              NAME=value (repeatable; the file's entries replace
 *                        any list set before, in file order)
 *   owner                true | false (the key subreaper, removed, is an
 *                        error that names owner)
 *   containment          auto | pid_namespace | user_namespace |
 *                        process_group
 *   init_path            text; empty = the installed sipc-init
 *   probe_path           text; empty = sipc-probe beside the init
 *   sandbox_ro_paths     absolute paths separated by ':'; empty = none
 *   state_dir            text; empty = no durable state
 *   durability           off | group | each
 *   cgroup               auto | off | required
 *   syscalls_refuse, syscalls_allow  comma-separated system call names;
 *                        empty = none
 *   syscalls_audit       true | false
 *   rlimit_as, rlimit_fsize, rlimit_nofile, rlimit_cpu, max_procs,
 *   tmp_size             a number in the range below, or "unlimited"
 *   numeric fields       decimal integers within the ranges below
 *
 * Numeric ranges (also enforced by sipc__config_validate):
 *   workers 1..1024              max_inflight 1..65536
 *   max_fds_in_flight 1..65536
 *   max_payload 16..2^30         ring_frames 1..1048576
 *   ring_bytes 40..2^40          mem_ceiling 40..2^40
 *   diag_line_max 16..2^20       diag_tail_bytes 64..2^24
 *   handshake_ms 1..600000       grace_ms 0..600000
 *   drain_ms 0..600000           stall_ms 1..86400000
 *   cancel_grace_ms 0..600000    idempotent_retries 0..100
 *   queue_timeout_ms 0..86400000 (0 = none)
 *   max_requests 0..2^32-1 (0 = off)  max_age_ms 0..86400000 (0 = off)
 *   spares 0..1024 (workers + spares <= 1024)
 *   max_rss 0..2^40 bytes (0 = off)
 *   request_figures 0..1 (0 = off)
 *   restart_base_ms 1..3600000   restart_cap_ms 1..86400000
 *   restart_reset_ms 0..86400000 restart_intensity 1..100
 *   restart_window_ms 1..86400000 pool_restart_budget 1..1000
 *   cooldown_ms 1..86400000      worker_nproc_limit 0..4194304 (0 = none)
 *   group_commit_ms 0..60000     pids_max 0..4194304 (0 = unset)
 *   memory_max 0..2^40 bytes (0 = unset)
 *   cpu_max_percent 0..100000 (0 = unset; 100 = one CPU)
 *   gather_us 0..1000000 (0 = never)
 *   sandbox_uid, sandbox_gid 1..4294967294
 *   rlimit_as, rlimit_fsize 0..2^50 bytes, rlimit_nofile 0..1048576,
 *   rlimit_cpu 0..31536000 s, max_procs 0..4194304, tmp_size 0..2^40
 *   bytes (0 = the sandbox's default)
 * Cross-field rules (checked by validation, not while loading, because a
 * later source may fix them): ring_bytes >= max_payload + 24,
 * mem_ceiling >= ring_bytes, restart_cap_ms >= restart_base_ms, no limit
 * with cgroup = off.
 *
 * ---- Environment form ---------------------------------------------------
 *
 * SIPC_<KEY in upper case> = value, same syntax, e.g. SIPC_WORKERS=4,
 * SIPC_ENVIRONMENT=development.  SIPC_ENV_SET holds NAME=value entries
 * separated by newlines.  Every other SIPC_* variable is refused like
 * an unknown key of a file ("environment: SIPC_NAME: unknown variable"),
 * so a misspelt name is detected, except the names that share the prefix
 * without being configuration (sipc__cfg_env_reserved(): the worker's
 * SIPC_FD, SIPC_PARENT_PID, SIPC_WORKER_ID, SIPC_GENERATION, and those
 * of the library's own build and tests), which are skipped.  Names are
 * matched exactly, upper case.  A variable present twice in envp is an
 * error.  Load the file first, then the environment: environment values
 * override file values (SIPC_ENV_SET replaces the whole env_set list).
 *
 * ---- Tighten only ---------------------------------------------------------
 *
 * Code may set any environment.  Of the loaders, only the first
 * configuration file loaded into a struct whose environment is unset may
 * choose development or test.  Every later source (a second file, the
 * environment form, another call of either) may only tighten: an
 * environment that is production, or still unset (which counts as
 * production), cannot become development or test, and
 * required_guarantees must keep every guarantee required before.  The
 * loaders count the sources they applied in cfg->loaded_sources.
 *
 * ---- Errors and atomicity -----------------------------------------------
 *
 * Unknown key, duplicate key, missing '=', missing value, malformed or
 * out-of-range number, bad boolean, unknown enum or guarantee name, bad
 * variable name, unterminated quote, NUL byte, line over 64 KiB: the load
 * returns SIPC_E_CONFIG with "file:line: key: reason" (or
 * "environment: SIPC_KEY: reason") in errbuf.  A load parses into a copy
 * and assigns *cfg only on success: bad input changes nothing, and the
 * store gets back exactly what it had before.
 */
#define LIBBSD_OPENBSD_VIS
#include <bsd/stdlib.h>
#include <bsd/vis.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"

#define LINE_CAP (64 * 1024)

/* --------------------------------------------------------------- store */

/* Every string and array a loaded config points at lives in one block of
 * this list.  A failed load frees the blocks it added (back to a mark). */
struct cfg_blk {
	struct cfg_blk *next;
	_Alignas(max_align_t) unsigned char data[];
};

struct sipc_config_store {
	struct cfg_blk *head;
};

static void *
store_alloc(sipc_config_store *st, size_t n)
{
	struct cfg_blk *b = malloc(sizeof(*b) + n);

	if (b == NULL)
		return NULL;
	b->next = st->head;
	st->head = b;
	return b->data;
}

static char *
store_strndup(sipc_config_store *st, const char *s, size_t n)
{
	char *p = store_alloc(st, n + 1);

	if (p != NULL) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

static void
store_rollback(sipc_config_store *st, struct cfg_blk *mark)
{
	struct cfg_blk *b;

	while (st->head != mark) {
		b = st->head;
		st->head = b->next;
		free(b);
	}
}

void
sipc_config_store_free(sipc_config_store *st)
{
	if (st == NULL)
		return;
	store_rollback(st, NULL);
	free(st);
}

/* ------------------------------------------------------ parse context */

struct pctx {
	struct sipc_config tmp;   /* the copy being filled */
	sipc_config_store *st;
	bool created;             /* st was created by this load */
	struct cfg_blk *mark;     /* st->head before this load */
	const char *where;        /* file path or "environment" */
	unsigned line;            /* 0 for the environment */
	const char *key;          /* key or variable name, for messages */
	char *errbuf;
	size_t errlen;
	const char **envset;      /* env_set entries (in the store) */
	size_t nenvset, capenvset;
	bool envset_seen;
	/* Tighten-only floor (see may_relax()): an environment at the
	 * production level may not become development or test, and these
	 * guarantee bits may not be dropped. */
	bool env_floor_prod;
	unsigned guarantees_floor;
};

static int
perr(struct pctx *c, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	if (c->errbuf == NULL || c->errlen == 0)
		return SIPC_E_CONFIG;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (c->line > 0 && c->key != NULL)
		snprintf(c->errbuf, c->errlen, "%s:%u: %s: %s", c->where,
		    c->line, c->key, msg);
	else if (c->line > 0)
		snprintf(c->errbuf, c->errlen, "%s:%u: %s", c->where, c->line,
		    msg);
	else
		snprintf(c->errbuf, c->errlen, "%s: %s: %s", c->where,
		    c->key != NULL ? c->key : "?", msg);
	return SIPC_E_CONFIG;
}

/* Escaped, length-limited copy of untrusted text for an error message. */
static const char *
shown(const char *v, char out[160])
{
	size_t n = strlen(v);

	strnvisx(out, 140, v, n > 32 ? 32 : n,
	    VIS_CSTYLE | VIS_OCTAL | VIS_WHITE | VIS_DQ);
	if (n > 32)
		strcat(out, "...");
	return out;
}

static char *
trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' ||
	    e[-1] == '\n'))
		*--e = '\0';
	return s;
}

/* UNSET and anything unknown count as production (fail closed). */
static bool
env_is_prod_level(int e)
{
	return e != SIPC_ENV_DEVELOPMENT && e != SIPC_ENV_TEST;
}

static void *
field(struct sipc_config *cfg, const struct sipc__cfg_key *k)
{
	return (char *)cfg + k->off;
}

static void
num_put(struct sipc_config *cfg, const struct sipc__cfg_key *k,
        unsigned long long v)
{
	uint32_t v32 = (uint32_t)v;
	uint64_t v64 = v;

	if (k->size == sizeof(v32))
		memcpy(field(cfg, k), &v32, sizeof(v32));
	else
		memcpy(field(cfg, k), &v64, sizeof(v64));
}

/* ------------------------------------------------------- value parsers */

static int
parse_num(struct pctx *c, const struct sipc__cfg_key *k, const char *v)
{
	const char *errstr = NULL;
	long long n;
	char vb[160];

	if (*v == '\0')
		return perr(c, "missing value");
	/* strtonum() reports "invalid", "too small" or "too large"; some
	 * versions leave errno alone, so tell them apart by the string. */
	n = strtonum(v, k->min, k->max, &errstr);
	if (errstr != NULL && strcmp(errstr, "invalid") == 0)
		return perr(c, "malformed number \"%s\"", shown(v, vb));
	if (errstr != NULL)
		return perr(c, "value %s out of range %lld..%lld",
		    shown(v, vb), k->min, k->max);
	num_put(&c->tmp, k, (unsigned long long)n);
	return 0;
}

static int
parse_enum(struct pctx *c, const char *v, const char *const *names,
           size_t nnames, size_t first, const char *expected, int *ret)
{
	char vb[160];
	size_t i;

	for (i = first; i < nnames; i++)
		if (strcmp(v, names[i]) == 0) {
			*ret = (int)i;
			return 0;
		}
	if (*v == '\0')
		return perr(c, "missing value (expected %s)", expected);
	return perr(c, "unknown value \"%s\" (expected %s)", shown(v, vb),
	    expected);
}

/* The names are sipc_containment_name()'s, so the file, the log and the
 * stats spell a mode the same way. */
static int
parse_containment(struct pctx *c, const char *v)
{
	const char *names[SIPC_CONTAIN_PROCESS_GROUP + 1];
	int e = 0, r;
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		names[i] = sipc_containment_name((enum sipc_containment)i);
	if ((r = parse_enum(c, v, names, sizeof(names) / sizeof(names[0]),
	    0, "auto, pid_namespace, user_namespace or process_group",
	    &e)) == 0)
		c->tmp.containment = (enum sipc_containment)e;
	return r;
}

static int
parse_cgroup(struct pctx *c, const char *v)
{
	const char *names[SIPC_CGROUP_REQUIRED + 1];
	int e = 0, r;
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		names[i] = sipc_cgroup_mode_name((enum sipc_cgroup_mode)i);
	if ((r = parse_enum(c, v, names, sizeof(names) / sizeof(names[0]),
	    0, "auto, off or required", &e)) == 0)
		c->tmp.cgroup = (enum sipc_cgroup_mode)e;
	return r;
}

static int
parse_guarantees(struct pctx *c, char *v)
{
	unsigned bits = 0, bit;
	char *tok, *save = NULL, vb[160];

	if (*v == '\0' || strcmp(v, "none") == 0)
		goto done;
	if (strcmp(v, "all") == 0) {
		bits = SIPC_G_ALL;
		goto done;
	}
	if (v[strlen(v) - 1] == ',' || v[0] == ',' || strstr(v, ",,"))
		return perr(c, "empty guarantee name in list");
	for (tok = strtok_r(v, ",", &save); tok != NULL;
	    tok = strtok_r(NULL, ",", &save)) {
		tok = trim(tok);
		if (*tok == '\0')
			return perr(c, "empty guarantee name in list");
		if (sipc__guarantee_parse(tok, &bit) < 0)
			return perr(c, "unknown guarantee \"%s\"", shown(tok, vb));
		bits |= bit;
	}
done:
	if ((c->guarantees_floor & ~bits) != 0)
		return perr(c, "cannot drop guarantees required by an earlier "
		    "source");
	c->tmp.required_guarantees = bits;
	return 0;
}

/* Split argv words into one store block: tokens are never longer than
 * their source, and each separator or the end yields room for a NUL. */
static int
parse_argv(struct pctx *c, const char *v)
{
	size_t n = 0, i;
	const char *p = v;
	char *buf, *o, **argv;
	bool inq;

	if (*v == '\0') {
		c->tmp.argv = NULL;
		return 0;
	}
	if ((o = buf = store_alloc(c->st, strlen(v) + 1)) == NULL)
		return -ENOMEM;
	for (;;) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\0')
			break;
		for (inq = false, n++; *p != '\0' &&
		    (inq || (*p != ' ' && *p != '\t')); p++) {
			if (*p == '"') {
				inq = !inq;
				continue;
			}
			if (inq && *p == '\\' && (p[1] == '"' || p[1] == '\\'))
				p++;
			*o++ = *p;
		}
		if (inq)
			return perr(c, "unterminated double quote");
		*o++ = '\0';
	}
	if ((argv = store_alloc(c->st, (n + 1) * sizeof(*argv))) == NULL)
		return -ENOMEM;
	for (i = 0, o = buf; i < n; i++, o += strlen(o) + 1)
		argv[i] = o;
	argv[n] = NULL;
	c->tmp.argv = argv;
	return 0;
}

static int
parse_names(struct pctx *c, char *v)
{
	size_t n = 1, i = 0;
	const char **list;
	char *tok, *next, vb[160];

	if (*v == '\0') {
		c->tmp.env_allow = NULL;
		return 0;
	}
	for (tok = v; (tok = strchr(tok, ',')) != NULL; tok++)
		n++;
	if ((list = store_alloc(c->st, (n + 1) * sizeof(*list))) == NULL)
		return -ENOMEM;
	for (tok = v; tok != NULL; tok = next) {
		if ((next = strchr(tok, ',')) != NULL)
			*next++ = '\0';
		tok = trim(tok);
		if (!sipc__cfg_valid_varname(tok, strlen(tok)))
			return perr(c, "bad variable name \"%s\"", shown(tok, vb));
		if ((list[i++] = store_strndup(c->st, tok, strlen(tok))) == NULL)
			return -ENOMEM;
	}
	list[i] = NULL;
	c->tmp.env_allow = list;
	return 0;
}

static int
envset_add(struct pctx *c, const char *v)
{
	const char *eq = strchr(v, '=');
	const char **grown;
	char vb[160];

	if (eq == NULL || !sipc__cfg_valid_varname(v, (size_t)(eq - v)))
		return perr(c, "expected NAME=value, got \"%s\"", shown(v, vb));
	if (c->nenvset == c->capenvset) {
		grown = reallocarray(c->envset, c->capenvset * 2 + 4,
		    sizeof(*grown));
		if (grown == NULL)
			return -ENOMEM;
		c->envset = grown;
		c->capenvset = c->capenvset * 2 + 4;
	}
	if ((c->envset[c->nenvset] = store_strndup(c->st, v, strlen(v))) ==
	    NULL)
		return -ENOMEM;
	c->nenvset++;
	return 0;
}

static int
parse_string(struct pctx *c, const struct sipc__cfg_key *k, const char *v)
{
	const char *s = NULL;

	if (*v == '\0' && k->kind == SIPC__CK_STRING)
		return perr(c, "missing value");
	if (*v != '\0' && (s = store_strndup(c->st, v, strlen(v))) == NULL)
		return -ENOMEM;
	memcpy(field(&c->tmp, k), &s, sizeof(s));
	return 0;
}

/* Apply one value (trimmed, writable) to the copy. */
static int
apply(struct pctx *c, const struct sipc__cfg_key *k, char *v)
{
	int r, e = 0;

	switch (k->kind) {
	case SIPC__CK_NUM:
		return parse_num(c, k, v);
	case SIPC__CK_BOOL:
		if ((r = parse_enum(c, v, (const char *const[]){ "false",
		    "true" }, 2, 0, "true or false", &e)) == 0)
			*(bool *)((char *)&c->tmp + k->off) = e == 1;
		return r;
	case SIPC__CK_LIMIT:
		if (strcmp(v, "unlimited") == 0) {
			num_put(&c->tmp, k, SIPC_UNLIMITED);
			return 0;
		}
		return parse_num(c, k, v);
	case SIPC__CK_ENVIRONMENT:
		if ((r = parse_enum(c, v, sipc__cfg_env_names, SIPC__CFG_NENV,
		    1, "development, test or production", &e)) != 0)
			return r;
		if (c->env_floor_prod && !env_is_prod_level(e))
			return perr(c, "cannot weaken an environment that is "
			    "production or unset (only code or the first "
			    "configuration file may choose %s)", v);
		c->tmp.environment = (enum sipc_environment)e;
		return 0;
	case SIPC__CK_DURABILITY:
		if ((r = parse_enum(c, v, sipc__cfg_durability_names,
		    SIPC__CFG_NDURABILITY, 0, "off, group or each", &e)) == 0)
			c->tmp.durability = (enum sipc_durability)e;
		return r;
	case SIPC__CK_CONTAINMENT:
		return parse_containment(c, v);
	case SIPC__CK_CGROUP:
		return parse_cgroup(c, v);
	case SIPC__CK_GUARANTEES:
		return parse_guarantees(c, v);
	case SIPC__CK_STRING:
	case SIPC__CK_OPTSTRING:
		return parse_string(c, k, v);
	case SIPC__CK_ARGV:
		return parse_argv(c, v);
	case SIPC__CK_NAMES:
		return parse_names(c, v);
	case SIPC__CK_ENVSET:
		c->envset_seen = true;
		return envset_add(c, v);
	}
	return SIPC_E_CONFIG;
}

static const struct sipc__cfg_key *
key_find(const char *name)
{
	size_t i;

	for (i = 0; i < SIPC__CFG_NKEYS; i++)
		if (strcmp(sipc__cfg_keys[i].name, name) == 0)
			return &sipc__cfg_keys[i];
	return NULL;
}
/* ------------------------------------------------------- load plumbing */

/*
 * Fail closed by every route.  Only two levels matter to provider
 * selection: production (PRODUCTION, and UNSET, which is treated as
 * production) and the rest (DEVELOPMENT, TEST).  A host chooses the
 * weaker level in code, or in the FIRST configuration file it loads
 * into a struct whose environment is still unset.  Every later source
 * (another file, the environment loader, a second call of either) may
 * only tighten: it cannot leave the production level, and cannot drop a
 * guarantee already required.  Otherwise one overlay file or one
 * exported variable would let production run on the local adapter.
 */
static bool
may_relax(const struct sipc_config *cfg, bool is_file)
{
	return is_file && cfg->loaded_sources == 0 &&
	    cfg->environment == SIPC_ENV_UNSET;
}

static int
ctx_begin(struct pctx *c, const struct sipc_config *cfg,
          sipc_config_store **store, const char *where, bool is_file,
          char *errbuf, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->tmp = *cfg;
	c->env_floor_prod = env_is_prod_level(cfg->environment) &&
	    !may_relax(cfg, is_file);
	c->guarantees_floor = cfg->required_guarantees;
	c->where = where;
	c->errbuf = errbuf;
	c->errlen = errlen;
	if (errbuf != NULL && errlen > 0)
		errbuf[0] = '\0';
	c->st = *store;
	if (c->st == NULL) {
		if ((c->st = calloc(1, sizeof(*c->st))) == NULL)
			return -ENOMEM;
		c->created = true;
	}
	c->mark = c->st->head;
	return 0;
}

/* Finish a load: on success build env_set and publish the copy; on
 * failure give the store back its old contents.  Returns r or -ENOMEM. */
static int
ctx_end(struct pctx *c, int r, struct sipc_config *cfg,
        sipc_config_store **store)
{
	const char **list;

	if (r == 0 && c->envset_seen && c->nenvset == 0)
		c->tmp.env_set = NULL;
	else if (r == 0 && c->envset_seen) {
		list = store_alloc(c->st, (c->nenvset + 1) * sizeof(*list));
		if (list == NULL)
			r = -ENOMEM;
		else {
			memcpy(list, c->envset, c->nenvset * sizeof(*list));
			list[c->nenvset] = NULL;
			c->tmp.env_set = list;
		}
	}
	free(c->envset);
	c->envset = NULL;
	if (r == -ENOMEM && c->errbuf != NULL && c->errlen > 0)
		snprintf(c->errbuf, c->errlen, "%s: out of memory", c->where);
	if (r < 0) {
		if (c->st != NULL)
			store_rollback(c->st, c->mark);
		if (c->created)
			free(c->st);
		return r;
	}
	if (c->tmp.loaded_sources < UINT_MAX)
		c->tmp.loaded_sources++;
	*cfg = c->tmp;
	*store = c->st;
	return 0;
}

/* One line of a file: "key = value", a comment or blank. */
static int
parse_line(struct pctx *c, char *line, uint64_t *seen, unsigned *first)
{
	char *s = trim(line), *eq, *key, *sp;
	const struct sipc__cfg_key *k;
	size_t i;

	c->key = NULL;
	if (*s == '\0' || *s == '#')
		return 0;
	if ((eq = strchr(s, '=')) == NULL) {
		if ((sp = strpbrk(s, " \t")) != NULL)
			*sp = '\0';
		c->key = s;
		return perr(c, "missing '='");
	}
	*eq = '\0';
	key = trim(s);
	if (*key == '\0')
		return perr(c, "missing key before '='");
	c->key = key;
	if (strcmp(key, "subreaper") == 0)
		return perr(c, "removed key: use owner (owner mode reaps "
		    "every adopted orphan)");
	if ((k = key_find(key)) == NULL)
		return perr(c, "unknown key");
	i = (size_t)(k - sipc__cfg_keys);
	if (k->kind != SIPC__CK_ENVSET && (*seen & (1ULL << i)))
		return perr(c, "duplicate key (first set on line %u)", first[i]);
	if (!(*seen & (1ULL << i)))
		first[i] = c->line;
	*seen |= 1ULL << i;
	return apply(c, k, trim(eq + 1));
}

static int
parse_stream(struct pctx *c, FILE *f)
{
	uint64_t seen = 0;
	unsigned first[SIPC__CFG_NKEYS];
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int r = 0;

	while ((len = getline(&line, &cap, f)) >= 0) {
		c->line++;
		c->key = NULL;
		if ((size_t)len != strlen(line))
			r = perr(c, "NUL byte in line");
		else if (len - (len > 0 && line[len - 1] == '\n') > LINE_CAP)
			/* The newline is not part of the line: a last line
			 * without one is measured the same. */
			r = perr(c, "line longer than %d bytes", LINE_CAP);
		else
			r = parse_line(c, line, &seen, first);
		if (r < 0)
			break;
	}
	if (r == 0 && ferror(f))
		r = errno ? -errno : -EIO;
	free(line);
	return r;
}

int
sipc_config_load_file(const char *path, struct sipc_config *cfg,
                      sipc_config_store **store, char *errbuf, size_t errlen)
{
	struct pctx c;
	FILE *f = NULL;
	int r;

	if (path == NULL || cfg == NULL || store == NULL)
		return -EINVAL;
	if ((r = ctx_begin(&c, cfg, store, path, true, errbuf, errlen)) < 0)
		goto out;
	if ((f = fopen(path, "re")) == NULL) {
		r = -errno;
		goto out;
	}
	r = parse_stream(&c, f);
out:
	if (r < 0 && r != SIPC_E_CONFIG && r != -ENOMEM && errbuf != NULL &&
	    errlen > 0)
		snprintf(errbuf, errlen, "%s: %s", path, sipc_strerror(r));
	if (f != NULL)
		fclose(f);
	return ctx_end(&c, r, cfg, store);
}

/* Value of `name` in envp; returns 0 (absent), 1 (found) or
 * SIPC_E_CONFIG when the name appears twice. */
static int
env_lookup(struct pctx *c, char *const *envp, const char *name,
           const char **ret)
{
	size_t n = strlen(name);
	const char *v = NULL;

	for (; *envp != NULL; envp++) {
		if (strncmp(*envp, name, n) != 0 || (*envp)[n] != '=')
			continue;
		if (v != NULL)
			return perr(c, "set twice in the environment");
		v = *envp + n + 1;
	}
	if (v == NULL)
		return 0;
	*ret = v;
	return 1;
}

static int
env_apply(struct pctx *c, const struct sipc__cfg_key *k, char *v)
{
	char *ln, *next;
	int r;

	if (k->kind != SIPC__CK_ENVSET)
		return apply(c, k, trim(v));
	c->envset_seen = true;
	for (ln = v; ln != NULL; ln = next) {
		if ((next = strchr(ln, '\n')) != NULL)
			*next++ = '\0';
		ln = trim(ln);
		if (*ln != '\0' && (r = envset_add(c, ln)) < 0)
			return r;
	}
	return 0;
}

/* The key an SIPC_<KEY> name stands for: upper case letters, digits and
 * '_' only, lowered into `low`; false for any other name. */
static bool
env_key_name(const char *s, size_t n, char *low, size_t cap)
{
	if (n >= cap)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];

		if (ch >= 'A' && ch <= 'Z')
			low[i] = (char)(ch - 'A' + 'a');
		else if ((ch >= '0' && ch <= '9') || ch == '_')
			low[i] = ch;
		else
			return false;
	}
	low[n] = '\0';
	return true;
}

/* Refuse an SIPC_* variable that is neither a key (upper case) nor a
 * reserved name: the environment's counterpart of "unknown key". */
static int
env_check_names(struct pctx *c, char *const *envp, char *name, size_t cap)
{
	char low[64];

	for (; *envp != NULL; envp++) {
		const char *eq = strchr(*envp, '=');
		size_t n = eq != NULL ? (size_t)(eq - *envp) : 0;

		if (n < 5 || strncmp(*envp, "SIPC_", 5) != 0 ||
		    sipc__cfg_env_reserved(*envp, n))
			continue;
		snprintf(name, cap, "%.*s", (int)n, *envp);
		c->key = name;
		if (!env_key_name(*envp + 5, n - 5, low, sizeof(low)))
			return perr(c, "unknown variable (not a configuration "
			    "key; see sipc.conf(5))");
		if (strcmp(low, "subreaper") == 0)
			return perr(c, "removed variable: use SIPC_OWNER "
			    "(owner mode reaps every adopted orphan)");
		if (key_find(low) == NULL)
			return perr(c, "unknown variable (not a configuration "
			    "key; see sipc.conf(5))");
	}
	return 0;
}

int
sipc_config_load_env(char *const *envp, struct sipc_config *cfg,
                     sipc_config_store **store, char *errbuf, size_t errlen)
{
	struct pctx c;
	char name[64], *copy;
	const char *v = NULL;
	size_t i, j;
	int r;

	if (cfg == NULL || store == NULL)
		return -EINVAL;
	if (envp == NULL)
		envp = environ;
	if ((r = ctx_begin(&c, cfg, store, "environment", false, errbuf,
	    errlen)) < 0)
		goto out;
	r = env_check_names(&c, envp, name, sizeof(name));
	for (i = 0; i < SIPC__CFG_NKEYS && r == 0; i++) {
		snprintf(name, sizeof(name), "SIPC_%s",
		    sipc__cfg_keys[i].name);
		for (j = 5; name[j] != '\0'; j++)
			if (name[j] >= 'a' && name[j] <= 'z')
				name[j] = (char)(name[j] - 'a' + 'A');
		c.key = name;
		if ((r = env_lookup(&c, envp, name, &v)) <= 0)
			continue;
		if ((copy = strdup(v)) == NULL) {
			r = -ENOMEM;
			break;
		}
		r = env_apply(&c, &sipc__cfg_keys[i], copy);
		free(copy);
	}
out:
	return ctx_end(&c, r, cfg, store);
}

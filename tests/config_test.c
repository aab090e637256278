/*
 * config_test.c - configuration defaults, validation, strict file and
 * environment parsing, sipc_strerror() and guarantee names.
 * Single-threaded; temporary files under /tmp, removed by each test.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base.h"
#include "wire/wire.h"
#include "sipc.h"
#include "testlib.h"

static char tpath[64];

/* Write `len` bytes to a fresh temporary file; its name is in tpath. */
static const char *
write_conf_n(const char *text, size_t len)
{
	int fd;

	snprintf(tpath, sizeof(tpath), "/tmp/sipc-config-test-XXXXXX");
	fd = mkstemp(tpath);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(write(fd, text, len) == (ssize_t)len);
	close(fd);
	return tpath;
}

static const char *
write_conf(const char *text)
{
	return write_conf_n(text, strlen(text));
}

/* rules: CF1 */
static void
test_config_defaults(void)
{
	struct sipc_config c;

	memset(&c, 0xa5, sizeof(c));
	sipc_config_init(&c);
	CU_ASSERT_EQUAL(c.environment, SIPC_ENV_UNSET);
	CU_ASSERT_EQUAL(c.required_guarantees, 0);
	CU_ASSERT_STRING_EQUAL(c.provider, "local");
	CU_ASSERT_PTR_NULL(c.path);
	CU_ASSERT_PTR_NULL(c.argv);
	CU_ASSERT_PTR_NULL(c.env_allow);
	CU_ASSERT_PTR_NULL(c.env_set);
	CU_ASSERT_EQUAL(c.workers, 2);
	CU_ASSERT_EQUAL(c.max_inflight, 16);
	CU_ASSERT_EQUAL(c.max_payload, 16u << 20);
	CU_ASSERT_EQUAL(c.ring_frames, 256);
	CU_ASSERT_EQUAL(c.ring_bytes, (size_t)64 << 20);
	CU_ASSERT_EQUAL(c.mem_ceiling, (size_t)256 << 20);
	CU_ASSERT_EQUAL(c.diag_line_max, 1024);
	CU_ASSERT_EQUAL(c.diag_tail_bytes, 4096);
	CU_ASSERT_EQUAL(c.handshake_ms, 30000);
	CU_ASSERT_EQUAL(c.grace_ms, 5000);
	CU_ASSERT_EQUAL(c.drain_ms, 5000);
	CU_ASSERT_EQUAL(c.stall_ms, 10000);
	CU_ASSERT_EQUAL(c.cancel_grace_ms, 2000);
	CU_ASSERT_EQUAL(c.idempotent_retries, 2);
	CU_ASSERT_EQUAL(c.restart_base_ms, 100);
	CU_ASSERT_EQUAL(c.restart_cap_ms, 30000);
	CU_ASSERT_EQUAL(c.restart_reset_ms, 10000);
	CU_ASSERT_EQUAL(c.restart_intensity, 5);
	CU_ASSERT_EQUAL(c.restart_window_ms, 10000);
	CU_ASSERT_EQUAL(c.pool_restart_budget, 20);
	CU_ASSERT_EQUAL(c.cooldown_ms, 30000);
	CU_ASSERT_FALSE(c.owner);
	CU_ASSERT_EQUAL(c.containment, SIPC_CONTAIN_AUTO);
	CU_ASSERT_PTR_NULL(c.init_path);
	CU_ASSERT_EQUAL(c.worker_nproc_limit, 0);
	CU_ASSERT_PTR_NULL(c.state_dir);
	CU_ASSERT_EQUAL(c.durability, SIPC_DURABLE_GROUP);
	CU_ASSERT_EQUAL(c.group_commit_ms, 10);
	CU_ASSERT_PTR_NULL(c.log);
	CU_ASSERT_PTR_NULL(c.log_arg);
}

static const char every_key[] =
    "# every key, non-default values\n"
    "\n"
    "   # indented comment\n"
    "environment = development\n"
    "required_guarantees = pid_namespace, tree_containment\n"
    "provider = local\n"
    "path = /opt/w/bin/worker#1\n"
    "argv = worker --mode \"a b\" \"q\\\"x\" pre\"fix y\"\n"
    "env_allow = HOME, LANG ,TZ\n"
    "env_set = A=1\n"
    "env_set=B=x=y\n"
    "env_set = C=\n"
    "workers = 7\n"
    "max_inflight = 3\n"
    "max_payload = 1000\n"
    "ring_frames = 9\n"
    "ring_bytes = 5000\n"
    "mem_ceiling = 1099511627776\n"
    "diag_line_max = 200\n"
    "diag_tail_bytes = 300\n"
    "handshake_ms = 11\n"
    "grace_ms = 0\n"
    "drain_ms = 13\n"
    "stall_ms = 14\n"
    "cancel_grace_ms = 15\n"
    "idempotent_retries = 0\n"
    "restart_base_ms = 17\n"
    "restart_cap_ms = 18\n"
    "restart_reset_ms = 19\n"
    "restart_intensity = 20\n"
    "restart_window_ms = 21\n"
    "pool_restart_budget = 22\n"
    "cooldown_ms = 23\n"
    "owner = true\n"
    "containment = user_namespace\n"
    "init_path = /opt/sipc/libexec/sipc-init\n"
    "worker_nproc_limit = 24\r\n"
    "state_dir = /var/lib/sipc\n"
    "durability = each\n"
    "group_commit_ms = 25";          /* no final newline */

static void
check_every_key(const struct sipc_config *c)
{
	CU_ASSERT_EQUAL(c->environment, SIPC_ENV_DEVELOPMENT);
	CU_ASSERT_EQUAL(c->required_guarantees,
	    SIPC_G_PID_NAMESPACE | SIPC_G_TREE_CONTAINMENT);
	CU_ASSERT_STRING_EQUAL(c->provider, "local");
	CU_ASSERT_STRING_EQUAL(c->path, "/opt/w/bin/worker#1");
	CU_ASSERT_FATAL(c->argv != NULL);
	CU_ASSERT_STRING_EQUAL(c->argv[0], "worker");
	CU_ASSERT_STRING_EQUAL(c->argv[1], "--mode");
	CU_ASSERT_STRING_EQUAL(c->argv[2], "a b");
	CU_ASSERT_STRING_EQUAL(c->argv[3], "q\"x");
	CU_ASSERT_STRING_EQUAL(c->argv[4], "prefix y");
	CU_ASSERT_PTR_NULL(c->argv[5]);
	CU_ASSERT_FATAL(c->env_allow != NULL);
	CU_ASSERT_STRING_EQUAL(c->env_allow[0], "HOME");
	CU_ASSERT_STRING_EQUAL(c->env_allow[1], "LANG");
	CU_ASSERT_STRING_EQUAL(c->env_allow[2], "TZ");
	CU_ASSERT_PTR_NULL(c->env_allow[3]);
	CU_ASSERT_FATAL(c->env_set != NULL);
	CU_ASSERT_STRING_EQUAL(c->env_set[0], "A=1");
	CU_ASSERT_STRING_EQUAL(c->env_set[1], "B=x=y");
	CU_ASSERT_STRING_EQUAL(c->env_set[2], "C=");
	CU_ASSERT_PTR_NULL(c->env_set[3]);
	CU_ASSERT_EQUAL(c->workers, 7);
	CU_ASSERT_EQUAL(c->max_inflight, 3);
	CU_ASSERT_EQUAL(c->max_payload, 1000);
	CU_ASSERT_EQUAL(c->ring_frames, 9);
	CU_ASSERT_EQUAL(c->ring_bytes, 5000);
	CU_ASSERT_EQUAL(c->mem_ceiling, (size_t)1 << 40);
	CU_ASSERT_EQUAL(c->diag_line_max, 200);
	CU_ASSERT_EQUAL(c->diag_tail_bytes, 300);
	CU_ASSERT_EQUAL(c->handshake_ms, 11);
	CU_ASSERT_EQUAL(c->grace_ms, 0);
	CU_ASSERT_EQUAL(c->drain_ms, 13);
	CU_ASSERT_EQUAL(c->stall_ms, 14);
	CU_ASSERT_EQUAL(c->cancel_grace_ms, 15);
	CU_ASSERT_EQUAL(c->idempotent_retries, 0);
	CU_ASSERT_EQUAL(c->restart_base_ms, 17);
	CU_ASSERT_EQUAL(c->restart_cap_ms, 18);
	CU_ASSERT_EQUAL(c->restart_reset_ms, 19);
	CU_ASSERT_EQUAL(c->restart_intensity, 20);
	CU_ASSERT_EQUAL(c->restart_window_ms, 21);
	CU_ASSERT_EQUAL(c->pool_restart_budget, 22);
	CU_ASSERT_EQUAL(c->cooldown_ms, 23);
	CU_ASSERT_TRUE(c->owner);
	CU_ASSERT_EQUAL(c->containment, SIPC_CONTAIN_USER_NAMESPACE);
	CU_ASSERT_STRING_EQUAL(c->init_path, "/opt/sipc/libexec/sipc-init");
	CU_ASSERT_EQUAL(c->worker_nproc_limit, 24);
	CU_ASSERT_STRING_EQUAL(c->state_dir, "/var/lib/sipc");
	CU_ASSERT_EQUAL(c->durability, SIPC_DURABLE_EACH);
	CU_ASSERT_EQUAL(c->group_commit_ms, 25);
}

/* rules: CF2 */
static void
test_config_every_key_parses(void)
{
	struct sipc_config c;
	sipc_config_store *st = NULL;
	char err[256] = "untouched";
	const char *p = write_conf(every_key);

	sipc_config_init(&c);
	CU_ASSERT_EQUAL_FATAL(sipc_config_load_file(p, &c, &st, err,
	    sizeof(err)), 0);
	unlink(p);
	CU_ASSERT_PTR_NOT_NULL(st);
	check_every_key(&c);
	/* The loaded configuration passes validation as a whole. */
	CU_ASSERT_EQUAL(sipc__config_validate(&c, err, sizeof(err)), 0);
	sipc_config_store_free(st);
}

/* rules: CF2 */
static void
test_config_enum_and_list_forms(void)
{
	struct sipc_config c;
	sipc_config_store *st = NULL;
	char err[256], text[64];
	int e;
	const char *p = write_conf("environment = production\n"
	    "durability = off\nowner = false\nrequired_guarantees = all\n"
	    "argv =\nstate_dir =   \nenv_allow =\ncontainment = auto\n"
	    "init_path =\n");

	sipc_config_init(&c);
	c.owner = true;
	c.state_dir = "/x";
	c.containment = SIPC_CONTAIN_PROCESS_GROUP;
	c.init_path = "/y";
	CU_ASSERT_EQUAL_FATAL(sipc_config_load_file(p, &c, &st, err,
	    sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.environment, SIPC_ENV_PRODUCTION);
	CU_ASSERT_EQUAL(c.durability, SIPC_DURABLE_OFF);
	CU_ASSERT_FALSE(c.owner);
	CU_ASSERT_EQUAL(c.required_guarantees, SIPC_G_ALL);
	CU_ASSERT_PTR_NULL(c.argv);
	CU_ASSERT_PTR_NULL(c.state_dir);
	CU_ASSERT_PTR_NULL(c.env_allow);
	CU_ASSERT_EQUAL(c.containment, SIPC_CONTAIN_AUTO);
	CU_ASSERT_PTR_NULL(c.init_path);
	unlink(p);

	/* Every mode by the name the log and the stats use. */
	for (e = SIPC_CONTAIN_AUTO; e <= SIPC_CONTAIN_PROCESS_GROUP; e++) {
		snprintf(text, sizeof(text), "containment = %s\n",
		    sipc_containment_name((enum sipc_containment)e));
		p = write_conf(text);
		sipc_config_init(&c);
		CU_ASSERT_EQUAL(sipc_config_load_file(p, &c, &st, err,
		    sizeof(err)), 0);
		CU_ASSERT_EQUAL(c.containment, (enum sipc_containment)e);
		unlink(p);
	}

	/* A fresh struct: a second file may not weaken the first. */
	sipc_config_init(&c);
	p = write_conf("environment = test\nrequired_guarantees = none\n"
	    "durability = group\n");
	CU_ASSERT_EQUAL_FATAL(sipc_config_load_file(p, &c, &st, err,
	    sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.environment, SIPC_ENV_TEST);
	CU_ASSERT_EQUAL(c.required_guarantees, 0);
	CU_ASSERT_EQUAL(c.durability, SIPC_DURABLE_GROUP);
	unlink(p);
	sipc_config_store_free(st);
}

/* Each bad file: the reason must come back as "path:line: key: reason",
 * and nothing may change. */
static const struct {
	const char *text;
	unsigned line;
	const char *key;      /* NULL: message has no key */
	const char *reason;
} bad_files[] = {
	{ "workers = 2\nwokers = 3\n", 2, "wokers", "unknown key" },
	{ "workers = 2\n\nworkers = 3\n", 3, "workers",
	  "duplicate key (first set on line 1)" },
	{ "# c\nworkers = 0\n", 2, "workers", "value 0 out of range 1..1024" },
	{ "workers = 1025\n", 1, "workers", "value 1025 out of range 1..1024" },
	{ "workers = 4x\n", 1, "workers", "malformed number \"4x\"" },
	{ "workers = 0x10\n", 1, "workers", "malformed number" },
	{ "workers = 4 5\n", 1, "workers", "malformed number" },
	{ "workers =\n", 1, "workers", "missing value" },
	{ "grace_ms = -1\n", 1, "grace_ms", "out of range 0..600000" },
	{ "ring_bytes = 99999999999999999999999\n", 1, "ring_bytes",
	  "out of range" },
	{ "owner = yes\n", 1, "owner", "unknown value \"yes\" "
	  "(expected true or false)" },
	{ "subreaper = true\n", 1, "subreaper", "removed key: use owner" },
	{ "environment = prod\n", 1, "environment", "unknown value \"prod\"" },
	{ "environment = unset\n", 1, "environment", "unknown value" },
	{ "durability = always\n", 1, "durability", "unknown value" },
	{ "containment = pidns\n", 1, "containment", "unknown value "
	  "\"pidns\" (expected auto, pid_namespace, user_namespace or "
	  "process_group)" },
	{ "containment =\n", 1, "containment", "missing value" },
	{ "containment = auto\ncontainment = process_group\n", 2,
	  "containment", "duplicate key (first set on line 1)" },
	{ "init_path = /a\n#\ninit_path = /b\n", 3, "init_path",
	  "duplicate key (first set on line 1)" },
	{ "\n\nworkers 4\n", 3, "workers", "missing '='" },
	{ " = 4\n", 1, NULL, "missing key before '='" },
	{ "required_guarantees = pid_namespace, magic\n", 1,
	  "required_guarantees", "unknown guarantee \"magic\"" },
	{ "required_guarantees = pid_namespace,,\n", 1,
	  "required_guarantees", "empty guarantee name" },
	{ "argv = a \"b c\n", 1, "argv", "unterminated double quote" },
	{ "env_set = NOEQUALS\n", 1, "env_set", "expected NAME=value" },
	{ "env_set = 1BAD=x\n", 1, "env_set", "expected NAME=value" },
	{ "env_allow = HOME, BAD-NAME\n", 1, "env_allow",
	  "bad variable name \"BAD-NAME\"" },
	{ "env_allow = HOME,\n", 1, "env_allow", "bad variable name" },
	{ "path =\n", 1, "path", "missing value" },
	{ "restart_intensity = 101\n", 1, "restart_intensity",
	  "out of range 1..100" },
	{ "max_payload = 1073741825\n", 1, "max_payload",
	  "out of range 16..1073741824" },
	{ "workers = \033[31m\n", 1, "workers", "malformed number \"\\033[31m\"" },
};

/* rules: CF5 */
static void
test_config_errors_name_key_and_line(void)
{
	struct sipc_config c, before;
	sipc_config_store *st = NULL;
	char err[512], want[512];
	size_t i;
	const char *p;

	for (i = 0; i < sizeof(bad_files) / sizeof(bad_files[0]); i++) {
		p = write_conf(bad_files[i].text);
		sipc_config_init(&c);
		before = c;
		err[0] = '\0';
		CU_ASSERT_EQUAL(sipc_config_load_file(p, &c, &st, err,
		    sizeof(err)), SIPC_E_CONFIG);
		if (bad_files[i].key != NULL)
			snprintf(want, sizeof(want), "%s:%u: %s: ", p,
			    bad_files[i].line, bad_files[i].key);
		else
			snprintf(want, sizeof(want), "%s:%u: ", p,
			    bad_files[i].line);
		if (strncmp(err, want, strlen(want)) != 0 ||
		    strstr(err, bad_files[i].reason) == NULL) {
			printf("\ncase %zu: got \"%s\", want \"%s...%s\"\n", i,
			    err, want, bad_files[i].reason);
			CU_FAIL("error message");
		}
		CU_ASSERT(memcmp(&c, &before, sizeof(c)) == 0);
		CU_ASSERT_PTR_NULL(st);
		unlink(p);
	}
}

/* rules: CF2 */
static void
test_config_nul_byte_rejected(void)
{
	struct sipc_config c;
	sipc_config_store *st = NULL;
	char err[256], want[128];
	static const char text[] = "workers = 3\npath = /a\0b\n";
	const char *p = write_conf_n(text, sizeof(text) - 1);

	sipc_config_init(&c);
	CU_ASSERT_EQUAL(sipc_config_load_file(p, &c, &st, err, sizeof(err)),
	    SIPC_E_CONFIG);
	snprintf(want, sizeof(want), "%s:2: NUL byte", p);
	CU_ASSERT_NSTRING_EQUAL(err, want, strlen(want));
	CU_ASSERT_EQUAL(c.workers, 2);
	unlink(p);
}

/* rules: CF2 */
static void
test_config_missing_file(void)
{
	struct sipc_config c;
	sipc_config_store *st = NULL;
	char err[256];

	sipc_config_init(&c);
	CU_ASSERT_EQUAL(sipc_config_load_file("/nonexistent/sipc.conf", &c,
	    &st, err, sizeof(err)), -ENOENT);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "/nonexistent/sipc.conf"));
	CU_ASSERT_PTR_NULL(st);
	/* NULL errbuf is allowed. */
	CU_ASSERT_EQUAL(sipc_config_load_file("/nonexistent/sipc.conf", &c,
	    &st, NULL, 0), -ENOENT);
}

/* A failed load into an existing store keeps every earlier string alive
 * and leaves the config exactly as it was (ASan checks the former). */
/* rules: CF5 */
static void
test_config_bad_input_changes_nothing(void)
{
	struct sipc_config c, before;
	sipc_config_store *st = NULL, *st0;
	char err[256];
	const char *p = write_conf("path = /bin/good\nargv = a b\n"
	    "env_set = X=1\n");

	sipc_config_init(&c);
	CU_ASSERT_EQUAL_FATAL(sipc_config_load_file(p, &c, &st, err,
	    sizeof(err)), 0);
	unlink(p);
	st0 = st;
	before = c;
	/* Everything valid up to the last line, which is bad. */
	p = write_conf("path = /bin/other\nargv = x y z\nenv_set = Y=2\n"
	    "env_allow = HOME\nworkers = 9\ngrace_ms = nope\n");
	CU_ASSERT_EQUAL(sipc_config_load_file(p, &c, &st, err, sizeof(err)),
	    SIPC_E_CONFIG);
	unlink(p);
	CU_ASSERT(memcmp(&c, &before, sizeof(c)) == 0);
	CU_ASSERT_PTR_EQUAL(st, st0);
	CU_ASSERT_STRING_EQUAL(c.path, "/bin/good");
	CU_ASSERT_STRING_EQUAL(c.argv[1], "b");
	CU_ASSERT_STRING_EQUAL(c.env_set[0], "X=1");
	CU_ASSERT_PTR_NULL(c.env_set[1]);
	sipc_config_store_free(st);
	sipc_config_store_free(NULL);
}

/* rules: CF3 */
static void
test_config_env_overrides_file(void)
{
	struct sipc_config c;
	sipc_config_store *st = NULL;
	char err[256];
	char *env[] = {
		"HOME=/root", "SIPC_WORKERS=5", "SIPC_ENVIRONMENT=development",
		"SIPC_ENV_SET=P=1\n\n Q=2 \n", "SIPC_FIXTURES=/somewhere",
		"SIPC_ARGV=w \"x y\"",
		"SIPC_OWNER=true", NULL,
	};
	const char *p = write_conf("workers = 3\ngrace_ms = 77\n"
	    "env_set = A=1\nenvironment = test\n");

	sipc_config_init(&c);
	CU_ASSERT_EQUAL_FATAL(sipc_config_load_file(p, &c, &st, err,
	    sizeof(err)), 0);
	unlink(p);
	CU_ASSERT_EQUAL_FATAL(sipc_config_load_env(env, &c, &st, err,
	    sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.workers, 5);
	CU_ASSERT_EQUAL(c.grace_ms, 77);       /* file value kept */
	CU_ASSERT_EQUAL(c.environment, SIPC_ENV_DEVELOPMENT);
	CU_ASSERT_TRUE(c.owner);
	CU_ASSERT_STRING_EQUAL(c.env_set[0], "P=1");
	CU_ASSERT_STRING_EQUAL(c.env_set[1], "Q=2");
	CU_ASSERT_PTR_NULL(c.env_set[2]);
	CU_ASSERT_STRING_EQUAL(c.argv[1], "x y");
	sipc_config_store_free(st);
}

/* An SIPC_* variable that is neither a key nor a reserved name is
 * refused like an unknown key of a file, naming the variable, and the
 * load changes nothing (a misspelt SIPC_ENVIRONMNT=production must not
 * leave a development configuration running in production). */
/* rules: CF3 */
static void
test_config_env_unknown_variable_refused(void)
{
	static const struct {
		const char *var, *name, *why;
	} cases[] = {
		{ "SIPC_SUBREAPER=maybe", "SIPC_SUBREAPER", "removed" },
		{ "SIPC_ENVIRONMNT=production", "SIPC_ENVIRONMNT", "unknown" },
		{ "SIPC_NOT_A_KEY=whatever", "SIPC_NOT_A_KEY", "unknown" },
		{ "SIPC_workers=3", "SIPC_workers", "unknown" },
		{ "SIPC_=1", "SIPC_", "unknown" },
		{ "SIPC_TEST=1", "SIPC_TEST", "unknown" },
		{ "SIPC_FDX=3", "SIPC_FDX", "unknown" },
		{ "SIPC_WORKERS_=3", "SIPC_WORKERS_", "unknown" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sipc_config c;
		sipc_config_store *st = NULL;
		char err[256] = "";
		char *env[] = { "SIPC_WORKERS=7", (char *)cases[i].var,
		    "HOME=/root", NULL };
		int rc;

		sipc_config_init(&c);
		rc = sipc_config_load_env(env, &c, &st, err, sizeof(err));
		if (rc != SIPC_E_CONFIG || strstr(err, cases[i].name) == NULL ||
		    strstr(err, cases[i].why) == NULL)
			fprintf(stderr, "%s: rc %d, \"%s\"\n", cases[i].var,
			    rc, err);
		CU_ASSERT_EQUAL(rc, SIPC_E_CONFIG);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, cases[i].name));
		CU_ASSERT_PTR_NOT_NULL(strstr(err, cases[i].why));
		CU_ASSERT_EQUAL(c.workers, 2);     /* nothing applied */
		CU_ASSERT_EQUAL(c.loaded_sources, 0);
		sipc_config_store_free(st);
	}
}

/* The names that share the prefix but are not configuration: the five
 * the supervisor sets for each worker, and those of the library's own
 * build and tests.  Each is accepted and changes nothing. */
static void
test_config_env_reserved_names_ignored(void)
{
	static char *env[] = {
		"SIPC_FD=3", "SIPC_PARENT_PID=1", "SIPC_WORKER_ID=0",
		"SIPC_GENERATION=4", "SIPC_SCRATCH=/s", "SIPC_FIXTURES=/f",
		"SIPC_INIT=/i",
		"SIPC_BUILD=/b", "SIPC_SAN=", "SIPC_MAKE=make",
		"SIPC_XML_DIR=/x", "SIPC_NO_DEPS=1", "SIPC_TEST_COUNTS=/c",
		"SIPC_TEST_PROVIDER=sandbox", "SIPC_TEST_ANYTHING=1",
		"SIPC_FX_ACCEPT=1", "SIPC_FX_REPLY_HOLD_US=5",
		"SIPC_ECHO_GATE=/g", "SIPC_ECHO_ACCEPT=1", "SIPC_EXEC_LOG=/l",
		"SIPC_FRAME_LOG=/l", "SIPC_STARTCTR_LOG=/l",
		"SIPC_DRILL_RUN=1", "NOT_SIPC_X=1", "SIPC", NULL,
	};
	struct sipc_config c, before;
	sipc_config_store *st = NULL;
	char err[256] = "";

	sipc_config_init(&c);
	before = c;
	CU_ASSERT_EQUAL(sipc_config_load_env(env, &c, &st, err, sizeof(err)),
	    0);
	if (err[0] != '\0')
		fprintf(stderr, "reserved names: %s\n", err);
	CU_ASSERT_EQUAL(c.workers, before.workers);
	CU_ASSERT_EQUAL(c.environment, before.environment);
	CU_ASSERT_EQUAL(c.loaded_sources, before.loaded_sources + 1);
	sipc_config_store_free(st);
}

/* SIPC_CONTAINMENT and SIPC_INIT_PATH override the file like any key:
 * they do not touch the environment level, so even under production the
 * environment may choose a weaker containment (process_group).  A bad
 * value names the variable and changes nothing. */
static void
test_config_env_containment_and_init_path(void)
{
	struct sipc_config c, before;
	sipc_config_store *st = NULL;
	char err[256];
	char *env[] = { "SIPC_CONTAINMENT=process_group",
	    "SIPC_INIT_PATH=/env/sipc-init", NULL };
	char *bad[] = { "SIPC_INIT_PATH=/other", "SIPC_CONTAINMENT=pidns",
	    NULL };
	char *unset_path[] = { "SIPC_INIT_PATH=", NULL };
	const char *p = write_conf("environment = production\n"
	    "containment = pid_namespace\ninit_path = /file/sipc-init\n");

	sipc_config_init(&c);
	CU_ASSERT_EQUAL_FATAL(sipc_config_load_file(p, &c, &st, err,
	    sizeof(err)), 0);
	unlink(p);
	CU_ASSERT_EQUAL(c.containment, SIPC_CONTAIN_PID_NAMESPACE);
	CU_ASSERT_STRING_EQUAL(c.init_path, "/file/sipc-init");
	CU_ASSERT_EQUAL_FATAL(sipc_config_load_env(env, &c, &st, err,
	    sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.containment, SIPC_CONTAIN_PROCESS_GROUP);
	CU_ASSERT_STRING_EQUAL(c.init_path, "/env/sipc-init");
	CU_ASSERT_EQUAL(c.environment, SIPC_ENV_PRODUCTION);

	before = c;
	CU_ASSERT_EQUAL(sipc_config_load_env(bad, &c, &st, err, sizeof(err)),
	    SIPC_E_CONFIG);
	CU_ASSERT_STRING_EQUAL(err, "environment: SIPC_CONTAINMENT: unknown "
	    "value \"pidns\" (expected auto, pid_namespace, user_namespace or "
	    "process_group)");
	CU_ASSERT(memcmp(&c, &before, sizeof(c)) == 0);
	CU_ASSERT_STRING_EQUAL(c.init_path, "/env/sipc-init");

	/* Empty: back to the installed sipc-init. */
	CU_ASSERT_EQUAL(sipc_config_load_env(unset_path, &c, &st, err,
	    sizeof(err)), 0);
	CU_ASSERT_PTR_NULL(c.init_path);
	sipc_config_store_free(st);
}

/* No environment variable lets production fall back to a weaker mode. */
/* rules: CF4 */
static void
test_config_env_cannot_weaken_production(void)
{
	struct sipc_config c, before;
	sipc_config_store *st = NULL;
	char err[256];
	char *dev[] = { "SIPC_ENVIRONMENT=development", NULL };
	char *drop[] = { "SIPC_REQUIRED_GUARANTEES=pid_namespace", NULL };
	char *more[] = { "SIPC_REQUIRED_GUARANTEES=pid_namespace,"
	    "network_isolation", NULL };
	const char *p = write_conf("environment = production\n"
	    "required_guarantees = network_isolation\n");

	sipc_config_init(&c);
	CU_ASSERT_EQUAL_FATAL(sipc_config_load_file(p, &c, &st, err,
	    sizeof(err)), 0);
	unlink(p);
	before = c;
	CU_ASSERT_EQUAL(sipc_config_load_env(dev, &c, &st, err, sizeof(err)),
	    SIPC_E_CONFIG);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "SIPC_ENVIRONMENT: cannot weaken"));
	CU_ASSERT_EQUAL(sipc_config_load_env(drop, &c, &st, err, sizeof(err)),
	    SIPC_E_CONFIG);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "cannot drop guarantees"));
	CU_ASSERT(memcmp(&c, &before, sizeof(c)) == 0);
	/* tightening is fine */
	CU_ASSERT_EQUAL(sipc_config_load_env(more, &c, &st, err, sizeof(err)),
	    0);
	CU_ASSERT_EQUAL(c.environment, SIPC_ENV_PRODUCTION);
	CU_ASSERT_EQUAL(c.required_guarantees,
	    SIPC_G_PID_NAMESPACE | SIPC_G_NETWORK_ISOLATION);
	sipc_config_store_free(st);
}

/* rules: CF5 */
static void
test_config_env_errors(void)
{
	struct sipc_config c, before;
	sipc_config_store *st = NULL;
	char err[256];
	char *e1[] = { "SIPC_GRACE_MS=1", "SIPC_WORKERS=0", NULL };
	char *e2[] = { "SIPC_WORKERS=3", "SIPC_WORKERS=4", NULL };
	char *e3[] = { "SIPC_DURABILITY=sometimes", NULL };

	sipc_config_init(&c);
	before = c;
	CU_ASSERT_EQUAL(sipc_config_load_env(e1, &c, &st, err, sizeof(err)),
	    SIPC_E_CONFIG);
	CU_ASSERT_STRING_EQUAL(err, "environment: SIPC_WORKERS: value 0 out "
	    "of range 1..1024");
	CU_ASSERT(memcmp(&c, &before, sizeof(c)) == 0);
	CU_ASSERT_PTR_NULL(st);
	CU_ASSERT_EQUAL(sipc_config_load_env(e2, &c, &st, err, sizeof(err)),
	    SIPC_E_CONFIG);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "SIPC_WORKERS: set twice"));
	CU_ASSERT_EQUAL(sipc_config_load_env(e3, &c, &st, err, sizeof(err)),
	    SIPC_E_CONFIG);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "SIPC_DURABILITY: unknown value"));
	CU_ASSERT(memcmp(&c, &before, sizeof(c)) == 0);
}

static void
test_config_env_default_environ(void)
{
	struct sipc_config c;
	sipc_config_store *st = NULL;
	char err[256];

	sipc_config_init(&c);
	CU_ASSERT_EQUAL_FATAL(setenv("SIPC_RESTART_CAP_MS", "4321", 1), 0);
	CU_ASSERT_EQUAL(sipc_config_load_env(NULL, &c, &st, err, sizeof(err)),
	    0);
	unsetenv("SIPC_RESTART_CAP_MS");
	CU_ASSERT_EQUAL(c.restart_cap_ms, 4321);
	sipc_config_store_free(st);
}

/* The documented numeric ranges: min and max load, one past fails. */
static const struct {
	const char *key;
	long long min, max;
} ranges[] = {
	{ "workers", 1, 1024 }, { "max_inflight", 1, 65536 },
	{ "max_payload", 16, 1LL << 30 }, { "ring_frames", 1, 1048576 },
	{ "ring_bytes", 40, 1LL << 40 }, { "mem_ceiling", 40, 1LL << 40 },
	{ "diag_line_max", 16, 1LL << 20 },
	{ "diag_tail_bytes", 64, 1LL << 24 },
	{ "handshake_ms", 1, 600000 }, { "grace_ms", 0, 600000 },
	{ "drain_ms", 0, 600000 }, { "stall_ms", 1, 86400000 },
	{ "cancel_grace_ms", 0, 600000 }, { "idempotent_retries", 0, 100 },
	{ "restart_base_ms", 1, 3600000 }, { "restart_cap_ms", 1, 86400000 },
	{ "restart_reset_ms", 0, 86400000 }, { "restart_intensity", 1, 100 },
	{ "restart_window_ms", 1, 86400000 },
	{ "pool_restart_budget", 1, 1000 }, { "cooldown_ms", 1, 86400000 },
	{ "worker_nproc_limit", 0, 4194304 }, { "group_commit_ms", 0, 60000 },
};

static int
load_one(const char *key, long long v, char *err, size_t errlen)
{
	struct sipc_config c;
	sipc_config_store *st = NULL;
	char text[128];
	const char *p;
	int r;

	snprintf(text, sizeof(text), "%s = %lld\n", key, v);
	p = write_conf(text);
	sipc_config_init(&c);
	r = sipc_config_load_file(p, &c, &st, err, errlen);
	unlink(p);
	sipc_config_store_free(st);
	return r;
}

/* rules: CF1 */
static void
test_config_strtonum_ranges(void)
{
	char err[256], want[128];
	size_t i;

	for (i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		CU_ASSERT_EQUAL(load_one(ranges[i].key, ranges[i].min, err,
		    sizeof(err)), 0);
		CU_ASSERT_EQUAL(load_one(ranges[i].key, ranges[i].max, err,
		    sizeof(err)), 0);
		CU_ASSERT_EQUAL(load_one(ranges[i].key, ranges[i].max + 1, err,
		    sizeof(err)), SIPC_E_CONFIG);
		snprintf(want, sizeof(want), ":1: %s: value %lld out of range "
		    "%lld..%lld", ranges[i].key, ranges[i].max + 1,
		    ranges[i].min, ranges[i].max);
		CU_ASSERT_PTR_NOT_NULL(strstr(err, want));
		if (ranges[i].min > 0)
			CU_ASSERT_EQUAL(load_one(ranges[i].key,
			    ranges[i].min - 1, err, sizeof(err)),
			    SIPC_E_CONFIG);
	}
}

static void
expect_invalid(const struct sipc_config *c, const char *prefix)
{
	char err[256] = "";

	CU_ASSERT_EQUAL(sipc__config_validate(c, err, sizeof(err)),
	    SIPC_E_CONFIG);
	if (strncmp(err, prefix, strlen(prefix)) != 0) {
		printf("\ngot \"%s\", want prefix \"%s\"\n", err, prefix);
		CU_FAIL("validation message");
	}
}

/* rules: CF1 */
static void
test_config_validate(void)
{
	struct sipc_config c, ok;
	const char *bad_set[] = { "NOEQ", NULL };
	const char *bad_allow[] = { "A=B", NULL };

	sipc_config_init(&ok);
	expect_invalid(&ok, "path: missing");
	ok.path = "/bin/true";
	CU_ASSERT_EQUAL(sipc__config_validate(&ok, NULL, 0), 0);
	c = ok; c.workers = 0; expect_invalid(&c, "workers: value 0");
	c = ok; c.workers = 1025; expect_invalid(&c, "workers: value 1025");
	c = ok; c.provider = NULL; expect_invalid(&c, "provider");
	c = ok; c.provider = ""; expect_invalid(&c, "provider");
	c = ok; c.state_dir = ""; expect_invalid(&c, "state_dir");
	c = ok; c.environment = (enum sipc_environment)7;
	expect_invalid(&c, "environment: unknown value 7");
	c = ok; c.durability = (enum sipc_durability)9;
	expect_invalid(&c, "durability");
	c = ok; c.containment = (enum sipc_containment)4;
	expect_invalid(&c, "containment: unknown value 4");
	c = ok; c.init_path = ""; expect_invalid(&c, "init_path: empty");
	c = ok; c.init_path = "/x/sipc-init";
	CU_ASSERT_EQUAL(sipc__config_validate(&c, NULL, 0), 0);
	c = ok; c.required_guarantees = 1u << 11;
	expect_invalid(&c, "required_guarantees");
	c = ok; c.required_guarantees = 1u << 12;
	expect_invalid(&c, "required_guarantees");
	c = ok; c.sandbox_ro_paths = "/usr/share/fonts:fonts";
	expect_invalid(&c, "sandbox_ro_paths: entry \"fonts\" is not an "
	    "absolute path");
	c = ok; c.sandbox_ro_paths = "/a\nb";
	expect_invalid(&c, "sandbox_ro_paths: a path holds a newline");
	c = ok; c.sandbox_ro_paths = "/usr/share/fonts:/opt/conv";
	CU_ASSERT_EQUAL(sipc__config_validate(&c, NULL, 0), 0);
	c = ok; c.sandbox_uid = 0; expect_invalid(&c, "sandbox_uid: value 0");
	c = ok; c.sandbox_gid = 0; expect_invalid(&c, "sandbox_gid: value 0");
	c = ok; c.env_set = bad_set; expect_invalid(&c, "env_set");
	c = ok; c.env_allow = bad_allow; expect_invalid(&c, "env_allow");
	c = ok; c.restart_intensity = 1000;
	expect_invalid(&c, "restart_intensity");
	c = ok; c.grace_ms = 600001; expect_invalid(&c, "grace_ms");
	c = ok; c.max_payload = SIPC_FRAME_MAX_PAYLOAD + 1;
	expect_invalid(&c, "max_payload");
	c = ok; c.ring_bytes = c.max_payload + SIPC_FRAME_HDR_LEN - 1;
	expect_invalid(&c, "ring_bytes: ");
	c.ring_bytes++;
	CU_ASSERT_EQUAL(sipc__config_validate(&c, NULL, 0), 0);
	c = ok; c.mem_ceiling = c.ring_bytes - 1;
	expect_invalid(&c, "mem_ceiling: ");
	c = ok; c.restart_cap_ms = c.restart_base_ms - 1;
	expect_invalid(&c, "restart_cap_ms: ");
}

static void
test_config_strerror(void)
{
	int i;

#define CHECK_ERR(name, val, msg) \
	CU_ASSERT_STRING_EQUAL(sipc_strerror(name), msg);
	SIPC_ERRORS(CHECK_ERR)
#undef CHECK_ERR
	CU_ASSERT_STRING_EQUAL(sipc_strerror(-ENOENT),
	    "No such file or directory");
	CU_ASSERT_STRING_EQUAL(sipc_strerror(ENOENT),
	    "No such file or directory");
	CU_ASSERT_STRING_EQUAL(sipc_strerror(-ENOMEM),
	    "Cannot allocate memory");
	CU_ASSERT_STRING_EQUAL(sipc_strerror(0), "success");
	CU_ASSERT_STRING_EQUAL(sipc_strerror(-999999), "unknown error");
	CU_ASSERT_STRING_EQUAL(sipc_strerror(-1099), "unknown error");
	CU_ASSERT_STRING_EQUAL(sipc_strerror(-2147483647 - 1),
	    "unknown error");
	for (i = -5000; i <= 5000; i++)
		CU_ASSERT_PTR_NOT_NULL(sipc_strerror(i));
}

/* rules: CF1 */
static void
test_config_guarantee_names_round_trip(void)
{
	unsigned bit, got, all = 0;
	const char *name;

	for (bit = 1; bit <= SIPC_G_ALL; bit <<= 1) {
		if (!(bit & SIPC_G_ALL))
			continue;
		name = sipc_guarantee_name(bit);
		CU_ASSERT_STRING_NOT_EQUAL(name, "unknown");
		got = 0;
		CU_ASSERT_EQUAL(sipc__guarantee_parse(name, &got), 0);
		CU_ASSERT_EQUAL(got, bit);
		all |= got;
	}
	CU_ASSERT_EQUAL(all, SIPC_G_ALL);
	CU_ASSERT_STRING_EQUAL(sipc_guarantee_name(SIPC_G_PID_NAMESPACE),
	    "pid_namespace");
	CU_ASSERT_STRING_EQUAL(sipc_guarantee_name(SIPC_G_TREE_CONTAINMENT),
	    "tree_containment");
	CU_ASSERT_STRING_EQUAL(sipc_guarantee_name(0), "unknown");
	CU_ASSERT_STRING_EQUAL(sipc_guarantee_name(3), "unknown");
	CU_ASSERT_STRING_EQUAL(sipc_guarantee_name(SIPC_G_SYSCALL_FILTER),
	    "syscall_filter");
	CU_ASSERT_STRING_EQUAL(sipc_guarantee_name(SIPC_G_LIMITS), "limits");
	CU_ASSERT_STRING_EQUAL(sipc_guarantee_name(1u << 11), "unknown");
	got = 42;
	CU_ASSERT_EQUAL(sipc__guarantee_parse("pid-namespace", &got),
	    SIPC_E_CONFIG);
	CU_ASSERT_EQUAL(got, 42);
	CU_ASSERT_STRING_EQUAL(sipc__environment_name(SIPC_ENV_PRODUCTION),
	    "production");
	CU_ASSERT_STRING_EQUAL(sipc__environment_name(
	    (enum sipc_environment)9), "invalid");
}

int
main(void)
{
	tl_suite("config", (tl_test[]){
	    { "test_config_defaults", test_config_defaults },
	    { "test_config_every_key_parses", test_config_every_key_parses },
	    { "test_config_enum_and_list_forms",
	      test_config_enum_and_list_forms },
	    { "test_config_errors_name_key_and_line",
	      test_config_errors_name_key_and_line },
	    { "test_config_nul_byte_rejected", test_config_nul_byte_rejected },
	    { "test_config_missing_file", test_config_missing_file },
	    { "test_config_bad_input_changes_nothing",
	      test_config_bad_input_changes_nothing },
	    { "test_config_env_overrides_file",
	      test_config_env_overrides_file },
	    { "test_config_env_errors", test_config_env_errors },
	    { "test_config_env_unknown_variable_refused",
	      test_config_env_unknown_variable_refused },
	    { "test_config_env_reserved_names_ignored",
	      test_config_env_reserved_names_ignored },
	    { "test_config_env_containment_and_init_path",
	      test_config_env_containment_and_init_path },
	    { "test_config_env_cannot_weaken_production",
	      test_config_env_cannot_weaken_production },
	    { "test_config_env_default_environ",
	      test_config_env_default_environ },
	    { "test_config_strtonum_ranges", test_config_strtonum_ranges },
	    { "test_config_validate", test_config_validate },
	    { "test_config_strerror", test_config_strerror },
	    { "test_config_guarantee_names_round_trip",
	      test_config_guarantee_names_round_trip },
	    { NULL, NULL } });
	return tl_run();
}

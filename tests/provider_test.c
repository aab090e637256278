/*
 * provider_test.c - fail-closed provider selection and the worker
 * environment allow-list, through the public API only.
 *
 * The refusal tests point the configuration at a copy of
 * fixtures/marker, a program that would leave a marker file if it ever
 * ran, and count this process's children, descriptors and threads
 * before and after: "no worker was spawned" is observed, not assumed.
 * One test runs the program by hand to prove the marker would appear.
 *
 * Threads: the CUnit thread, plus the library's own threads while a
 * supervisor exists.  No locks of its own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sipc.h"
#include "sipctest.h"
#include "testlib.h"

static char tmpdir[64];
static char script[128];
static char marker[160];

/* A temp dir with a copy of the marker program, which touches `marker`
 * when run. */
static void
setup_marker_script(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/sipc-provider-test-XXXXXX");
	if (mkdtemp(tmpdir) == NULL)
		abort();
	snprintf(script, sizeof(script), "%s/worker", tmpdir);
	snprintf(marker, sizeof(marker), "%s/worker.ran", tmpdir);
	if (st_copy_file(tl_fixture("marker"), script) != 0 ||
	    chmod(script, 0755) < 0)
		abort();
}

static void
cleanup_tmp(void)
{
	char p[200];

	unlink(marker);
	unlink(script);
	snprintf(p, sizeof(p), "%s/cfg", tmpdir);
	unlink(p);
	rmdir(tmpdir);
}

static bool
marker_exists(void)
{
	return access(marker, F_OK) == 0;
}

static bool
marker_exists_cb(void *arg)
{
	return marker_exists();
}

struct counts { int children, fds, threads; };

static struct counts
counts_now(void)
{
	/* threads of an earlier test, or of a start refused just now
	 * and joined, may still be listed for a moment */
	int threads = tl_settled_threads(10000);

	return (struct counts){ tl_count_children(), tl_count_fds(),
	    threads };
}

static void
assert_nothing_started(struct counts before)
{
	struct counts after = counts_now();

	CU_ASSERT_EQUAL(after.children, before.children);
	CU_ASSERT_EQUAL(after.fds, before.fds);
	CU_ASSERT_EQUAL(after.threads, before.threads);
	CU_ASSERT_FALSE(marker_exists());
}

static void
base_cfg(struct sipc_config *cfg, enum sipc_environment env)
{
	sipc_config_init(cfg);
	cfg->environment = env;
	cfg->provider = "local";
	cfg->path = script;
	cfg->workers = 2;
}

/* sipc_create must fail with `want`; *ret untouched; nothing spawned. */
static void
expect_refused(const struct sipc_config *cfg, int want, char *err,
               size_t errlen)
{
	sipc_supervisor *sentinel = (sipc_supervisor *)&sentinel, *s = sentinel;
	struct counts before = counts_now();
	int rc;

	err[0] = '\0';
	rc = sipc_create(cfg, err, errlen, &s);
	CU_ASSERT_EQUAL(rc, want);
	CU_ASSERT_PTR_EQUAL(s, sentinel);
	CU_ASSERT(err[0] != '\0');
	assert_nothing_started(before);
	if (rc != want)
		fprintf(stderr, "provider_test: rc %d (%s): %s\n", rc,
		    sipc_strerror(rc), err);
	if (rc == 0 && s != sentinel)
		sipc_destroy(s);
}

static unsigned
names_in(const char *err)
{
	unsigned bit, found = 0;

	for (bit = 1; bit <= SIPC_G_ALL; bit <<= 1)
		if (strstr(err, sipc_guarantee_name(bit)) != NULL)
			found |= bit;
	return found;
}

/* rules: PB20 PB23 */
static void
test_provider_production_local_refused(void)
{
	struct sipc_config cfg;
	char err[512];

	base_cfg(&cfg, SIPC_ENV_PRODUCTION);
	expect_refused(&cfg, SIPC_E_PRODUCTION, err, sizeof(err));
	/* Every missing guarantee is named. */
	CU_ASSERT_EQUAL(names_in(err), SIPC_G_ALL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "local"));
	/* Asking for nothing changes nothing: production requires all. */
	cfg.required_guarantees = 0;
	expect_refused(&cfg, SIPC_E_PRODUCTION, err, sizeof(err));
	CU_ASSERT_EQUAL(names_in(err), SIPC_G_ALL);
}

/* rules: PB23 */
static void
test_provider_marker_script_would_show_a_spawn(void)
{
	int st = 0;
	pid_t pid;

	/* The probe the refusal tests rely on really leaves a mark. */
	CU_ASSERT_FALSE(marker_exists());
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		execl(script, script, (char *)NULL);
		_exit(127);
	}
	CU_ASSERT_TRUE(tl_wait_until(marker_exists_cb, NULL, 10000));
	kill(pid, SIGKILL);
	CU_ASSERT_EQUAL(waitpid(pid, &st, 0), pid);
	unlink(marker);
}

/* rules: PB19 */
static void
test_provider_unset_environment_refused(void)
{
	struct sipc_config cfg;
	char err[512];

	base_cfg(&cfg, SIPC_ENV_UNSET);
	expect_refused(&cfg, SIPC_E_NOENV, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "unset"));
	/* Treated as production: every guarantee missing is named. */
	CU_ASSERT_EQUAL(names_in(err), SIPC_G_ALL);
	/* A default-initialised configuration is unset too. */
	sipc_config_init(&cfg);
	cfg.path = script;
	expect_refused(&cfg, SIPC_E_NOENV, err, sizeof(err));
}

/* rules: PB21 */
static void
test_provider_development_required_guarantee_refused(void)
{
	struct sipc_config cfg;
	char err[512];

	base_cfg(&cfg, SIPC_ENV_DEVELOPMENT);
	cfg.required_guarantees = SIPC_G_NETWORK_ISOLATION;
	expect_refused(&cfg, SIPC_E_PRODUCTION, err, sizeof(err));
	CU_ASSERT_EQUAL(names_in(err), SIPC_G_NETWORK_ISOLATION);
	cfg.environment = SIPC_ENV_TEST;
	cfg.required_guarantees = SIPC_G_PID_NAMESPACE | SIPC_G_SEPARATE_USER;
	expect_refused(&cfg, SIPC_E_PRODUCTION, err, sizeof(err));
	CU_ASSERT_EQUAL(names_in(err),
	    SIPC_G_PID_NAMESPACE | SIPC_G_SEPARATE_USER);
}

/* rules: PV1 PB22 */
static void
test_provider_unknown_provider_refused(void)
{
	struct sipc_config cfg;
	char err[512];

	base_cfg(&cfg, SIPC_ENV_DEVELOPMENT);
	cfg.provider = "microvm";
	expect_refused(&cfg, SIPC_E_CONFIG, err, sizeof(err));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "microvm"));
	/* Unknown in production too: still a configuration error. */
	cfg.environment = SIPC_ENV_PRODUCTION;
	expect_refused(&cfg, SIPC_E_CONFIG, err, sizeof(err));
}

static const char *
write_cfg(const char *body)
{
	static char path[200];
	FILE *f;

	snprintf(path, sizeof(path), "%s/cfg", tmpdir);
	if ((f = fopen(path, "w")) == NULL)
		abort();
	fputs(body, f);
	fclose(f);
	return path;
}

/* Load `body` (with "path = <script>" appended) into a fresh config. */
static int
load_cfg(const char *body, struct sipc_config *cfg, sipc_config_store **st)
{
	char text[1024], err[256] = "";
	int rc;

	snprintf(text, sizeof(text), "%spath = %s\n", body, script);
	sipc_config_init(cfg);
	rc = sipc_config_load_file(write_cfg(text), cfg, st, err, sizeof(err));
	if (rc != 0)
		fprintf(stderr, "provider_test: load: %s\n", err);
	return rc;
}

static void
test_provider_file_production_refused(void)
{
	sipc_config_store *st = NULL;
	struct sipc_config cfg;
	char err[512];

	CU_ASSERT_EQUAL_FATAL(load_cfg("environment = production\n"
	    "provider = local\nworkers = 3\n", &cfg, &st), 0);
	CU_ASSERT_EQUAL(cfg.environment, SIPC_ENV_PRODUCTION);
	expect_refused(&cfg, SIPC_E_PRODUCTION, err, sizeof(err));
	CU_ASSERT_EQUAL(names_in(err), SIPC_G_ALL);
	sipc_config_store_free(st);
}

static void
test_provider_file_without_environment_refused(void)
{
	sipc_config_store *st = NULL;
	struct sipc_config cfg;
	char err[512];

	CU_ASSERT_EQUAL_FATAL(load_cfg("provider = local\nworkers = 1\n",
	    &cfg, &st), 0);
	CU_ASSERT_EQUAL(cfg.environment, SIPC_ENV_UNSET);
	expect_refused(&cfg, SIPC_E_NOENV, err, sizeof(err));
	sipc_config_store_free(st);
}

/*
 * The process environment is read only by sipc_config_load_env(), and
 * only when the host calls it; sipc_create() never consults it.  What
 * the loader does is documented (environment values override file
 * values), so calling it is the host's decision to trust its
 * environment.
 */
/* rules: CF4 */
static void
test_provider_environment_variables_do_not_override(void)
{
	sipc_config_store *st = NULL;
	struct sipc_config cfg;
	char err[512], *tighten[] = { "SIPC_ENVIRONMENT=production", NULL };

	setenv("SIPC_ENVIRONMENT", "development", 1);
	setenv("SIPC_PROVIDER", "local", 1);
	CU_ASSERT_EQUAL_FATAL(load_cfg("environment = production\n", &cfg,
	    &st), 0);
	expect_refused(&cfg, SIPC_E_PRODUCTION, err, sizeof(err));
	base_cfg(&cfg, SIPC_ENV_UNSET);
	expect_refused(&cfg, SIPC_E_NOENV, err, sizeof(err));
	unsetenv("SIPC_ENVIRONMENT");
	unsetenv("SIPC_PROVIDER");
	sipc_config_store_free(st);
	st = NULL;

	/* An explicit environment list can tighten a file's setting. */
	CU_ASSERT_EQUAL_FATAL(load_cfg("environment = development\n", &cfg,
	    &st), 0);
	CU_ASSERT_EQUAL(sipc_config_load_env(tighten, &cfg, &st, err,
	    sizeof(err)), 0);
	CU_ASSERT_EQUAL(cfg.environment, SIPC_ENV_PRODUCTION);
	expect_refused(&cfg, SIPC_E_PRODUCTION, err, sizeof(err));
	sipc_config_store_free(st);
}

/* ------------------------------------------- tighten only, every route */

/* Load `body` on top of *cfg (no init, no path added); returns the code
 * and leaves the message in err. */
static int
overlay(const char *body, struct sipc_config *cfg, sipc_config_store **st,
        char *err, size_t errlen)
{
	err[0] = '\0';
	return sipc_config_load_file(write_cfg(body), cfg, st, err, errlen);
}

/* A second file can never weaken the first, with the same store or a
 * fresh one: production stays production, unset stays unset (counted as
 * production), and a required guarantee cannot be dropped. */
/* rules: CF4 PB24 */
static void
test_provider_overlay_file_cannot_weaken(void)
{
	sipc_config_store *st = NULL, *st2 = NULL;
	struct sipc_config cfg, before;
	char err[512];

	CU_ASSERT_EQUAL_FATAL(load_cfg("environment = production\n", &cfg,
	    &st), 0);
	before = cfg;
	CU_ASSERT_EQUAL(overlay("environment = development\n", &cfg, &st,
	    err, sizeof(err)), SIPC_E_CONFIG);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, ":1: environment: cannot weaken"));
	CU_ASSERT_EQUAL(overlay("environment = test\n", &cfg, &st2, err,
	    sizeof(err)), SIPC_E_CONFIG);
	CU_ASSERT_PTR_NULL(st2);
	CU_ASSERT(memcmp(&cfg, &before, sizeof(cfg)) == 0);
	expect_refused(&cfg, SIPC_E_PRODUCTION, err, sizeof(err));
	sipc_config_store_free(st);
	st = NULL;

	/* The first file did not say: unset counts as production. */
	CU_ASSERT_EQUAL_FATAL(load_cfg("workers = 1\n", &cfg, &st), 0);
	CU_ASSERT_EQUAL(overlay("environment = development\n", &cfg, &st,
	    err, sizeof(err)), SIPC_E_CONFIG);
	CU_ASSERT_EQUAL(overlay("environment = development\n", &cfg, &st2,
	    err, sizeof(err)), SIPC_E_CONFIG);
	CU_ASSERT_EQUAL(cfg.environment, SIPC_ENV_UNSET);
	expect_refused(&cfg, SIPC_E_NOENV, err, sizeof(err));
	sipc_config_store_free(st);
	st = NULL;

	/* Tightening is fine; dropping a guarantee is not. */
	CU_ASSERT_EQUAL_FATAL(load_cfg("environment = development\n"
	    "required_guarantees = pid_namespace\n", &cfg, &st), 0);
	CU_ASSERT_EQUAL(overlay("required_guarantees = none\n", &cfg, &st,
	    err, sizeof(err)), SIPC_E_CONFIG);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "cannot drop guarantees"));
	CU_ASSERT_EQUAL(overlay("environment = production\n", &cfg, &st,
	    err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(cfg.environment, SIPC_ENV_PRODUCTION);
	CU_ASSERT_EQUAL(cfg.loaded_sources, 2);
	expect_refused(&cfg, SIPC_E_PRODUCTION, err, sizeof(err));
	sipc_config_store_free(st);
}

/* The environment loader never chooses a weaker level: not over an
 * unset environment (with or without a file before it), not over
 * production, not on a second call. */
/* rules: CF4 PB24 */
static void
test_provider_env_loader_cannot_weaken(void)
{
	char *dev[] = { "SIPC_ENVIRONMENT=development", NULL };
	char *tst[] = { "SIPC_ENVIRONMENT=test", NULL };
	char *prod[] = { "SIPC_ENVIRONMENT=production", NULL };
	sipc_config_store *st = NULL;
	struct sipc_config cfg;
	char err[512];

	base_cfg(&cfg, SIPC_ENV_UNSET);
	CU_ASSERT_EQUAL(sipc_config_load_env(dev, &cfg, &st, err,
	    sizeof(err)), SIPC_E_CONFIG);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "SIPC_ENVIRONMENT: cannot weaken"));
	CU_ASSERT_EQUAL(sipc_config_load_env(tst, &cfg, &st, err,
	    sizeof(err)), SIPC_E_CONFIG);
	CU_ASSERT_PTR_NULL(st);
	expect_refused(&cfg, SIPC_E_NOENV, err, sizeof(err));

	CU_ASSERT_EQUAL_FATAL(load_cfg("workers = 1\n", &cfg, &st), 0);
	CU_ASSERT_EQUAL(sipc_config_load_env(dev, &cfg, &st, err,
	    sizeof(err)), SIPC_E_CONFIG);
	expect_refused(&cfg, SIPC_E_NOENV, err, sizeof(err));
	/* A later call: production first, then development. */
	CU_ASSERT_EQUAL(sipc_config_load_env(prod, &cfg, &st, err,
	    sizeof(err)), 0);
	CU_ASSERT_EQUAL(sipc_config_load_env(dev, &cfg, &st, err,
	    sizeof(err)), SIPC_E_CONFIG);
	expect_refused(&cfg, SIPC_E_PRODUCTION, err, sizeof(err));
	sipc_config_store_free(st);
	st = NULL;

	/* Development said in code or in the first file stays allowed. */
	base_cfg(&cfg, SIPC_ENV_DEVELOPMENT);
	CU_ASSERT_EQUAL(sipc_config_load_env(dev, &cfg, &st, err,
	    sizeof(err)), 0);
	CU_ASSERT_EQUAL(cfg.environment, SIPC_ENV_DEVELOPMENT);
	CU_ASSERT_EQUAL_FATAL(load_cfg("environment = test\n", &cfg, &st), 0);
	CU_ASSERT_EQUAL(cfg.environment, SIPC_ENV_TEST);
	CU_ASSERT_EQUAL(sipc_config_load_env(dev, &cfg, &st, err,
	    sizeof(err)), 0);
	CU_ASSERT_EQUAL(cfg.environment, SIPC_ENV_DEVELOPMENT);
	sipc_config_store_free(st);
}

/* Code that chose production is not overruled by the first file either:
 * only an environment still unset may be relaxed by it. */
/* rules: CF4 */
static void
test_provider_first_file_cannot_weaken_code(void)
{
	sipc_config_store *st = NULL;
	struct sipc_config cfg;
	char err[512];

	base_cfg(&cfg, SIPC_ENV_PRODUCTION);
	CU_ASSERT_EQUAL(overlay("environment = development\n", &cfg, &st,
	    err, sizeof(err)), SIPC_E_CONFIG);
	CU_ASSERT_EQUAL(cfg.environment, SIPC_ENV_PRODUCTION);
	expect_refused(&cfg, SIPC_E_PRODUCTION, err, sizeof(err));
	base_cfg(&cfg, SIPC_ENV_DEVELOPMENT);
	cfg.required_guarantees = SIPC_G_TREE_CONTAINMENT;
	CU_ASSERT_EQUAL(overlay("required_guarantees = none\n", &cfg, &st,
	    err, sizeof(err)), SIPC_E_CONFIG);
	expect_refused(&cfg, SIPC_E_PRODUCTION, err, sizeof(err));
	CU_ASSERT_PTR_NULL(st);
}

/* Structs the loaders never saw: all zeros, or an environment outside
 * the enum, are refused before anything runs. */
/* rules: CF4 */
static void
test_provider_zeroed_and_out_of_range_refused(void)
{
	const int bad[] = { 4, 9, -1, 0x7fffffff };
	struct sipc_config cfg;
	char err[512];
	size_t i;

	memset(&cfg, 0, sizeof(cfg));
	expect_refused(&cfg, SIPC_E_CONFIG, err, sizeof(err));
	cfg.path = script;
	expect_refused(&cfg, SIPC_E_CONFIG, err, sizeof(err));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		base_cfg(&cfg, (enum sipc_environment)bad[i]);
		expect_refused(&cfg, SIPC_E_CONFIG, err, sizeof(err));
		CU_ASSERT_PTR_NOT_NULL(strstr(err, "environment"));
	}
}

/* ---------------------------------------------------- allow-list */

/* Run envdump under a supervisor; return its environment (malloc'd). */
static char *
worker_env(const char *const *allow, const char *const *set)
{
	struct sipc_request req = { .payload = "env", .len = 3,
	    .timeout_ms = 20000 };
	struct sipc_result res;
	struct sipc_config cfg;
	sipc_supervisor *s = NULL;
	char err[256] = "", *out = NULL;
	int rc;

	sipc_config_init(&cfg);
	cfg.environment = SIPC_ENV_DEVELOPMENT;
	cfg.path = tl_fixture("envdump");
	cfg.workers = 1;
	cfg.env_allow = allow;
	cfg.env_set = set;
	rc = sipc_create(&cfg, err, sizeof(err), &s);
	CU_ASSERT_EQUAL(rc, 0);
	if (rc != 0) {
		fprintf(stderr, "provider_test: create: %s\n", err);
		return NULL;
	}
	CU_ASSERT_EQUAL(sipc_wait_ready(s, 1, 20000), 0);
	CU_ASSERT_EQUAL_FATAL(sipc_call(s, &req, &res), 0);
	CU_ASSERT_EQUAL(res.outcome, SIPC_OUTCOME_OK);
	if (res.outcome == SIPC_OUTCOME_OK && (out = calloc(1,
	    res.reply_len + 1)) != NULL)
		memcpy(out, res.reply, res.reply_len);
	sipc_result_release(&res);
	sipc_destroy(s);
	return out;
}

/* Is "entry" one of the '\n'-separated lines of env? */
static bool
has_line(const char *env, const char *entry)
{
	size_t n = strlen(entry);
	const char *p = env;

	while (p != NULL && *p != '\0') {
		if (strncmp(p, entry, n) == 0 && (p[n] == '\n' || p[n] == '\0'))
			return true;
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	return false;
}

static bool
has_name(const char *env, const char *name)
{
	size_t n = strlen(name);
	const char *p = env;

	while (p != NULL && *p != '\0') {
		if (strncmp(p, name, n) == 0 && p[n] == '=')
			return true;
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	return false;
}

/* rules: D3 PB5 */
static void
test_provider_worker_environment_is_allow_listed(void)
{
	const char *allow[] = { "ALLOWED_VAR", "NOT_SET_ANYWHERE", NULL };
	const char *allow_secret[] = { "SECRET_TOKEN", NULL };
	const char *set[] = { "EXPLICIT=1", NULL };
	int thr = tl_settled_threads(10000), fds = tl_count_fds();
	int kids = tl_count_children();
	char ppid[32], *env;
	unsigned lines = 0;

	setenv("SECRET_TOKEN", "xyz", 1);
	setenv("ALLOWED_VAR", "ok", 1);
	snprintf(ppid, sizeof(ppid), "SIPC_PARENT_PID=%d", (int)getpid());
	env = worker_env(allow, set);
	CU_ASSERT_PTR_NOT_NULL_FATAL(env);
	CU_ASSERT_FALSE(has_name(env, "SECRET_TOKEN"));
	CU_ASSERT_FALSE(has_name(env, "PATH"));
	CU_ASSERT_FALSE(has_name(env, "HOME"));
	CU_ASSERT_FALSE(has_name(env, "NOT_SET_ANYWHERE"));
	CU_ASSERT_TRUE(has_line(env, "ALLOWED_VAR=ok"));
	CU_ASSERT_TRUE(has_line(env, "EXPLICIT=1"));
	CU_ASSERT_TRUE(has_line(env, "SIPC_FD=3"));
	CU_ASSERT_TRUE(has_line(env, ppid));
	CU_ASSERT_TRUE(has_line(env, "SIPC_WORKER_ID=0"));
	CU_ASSERT_TRUE(has_name(env, "SIPC_GENERATION"));
	CU_ASSERT_TRUE(has_name(env, "SIPC_MAX_PAYLOAD"));
	/* And nothing else at all. */
	for (const char *p = env; p != NULL && *p; lines++) {
		p = strchr(p, '\n');
		p = p ? p + 1 : NULL;
	}
	CU_ASSERT_EQUAL(lines, 7);
	if (lines != 7)
		fprintf(stderr, "provider_test: worker env:\n%s\n", env);
	free(env);

	/* Allow-listing a variable is the only way it reaches a worker. */
	env = worker_env(allow_secret, NULL);
	CU_ASSERT_PTR_NOT_NULL_FATAL(env);
	CU_ASSERT_TRUE(has_line(env, "SECRET_TOKEN=xyz"));
	CU_ASSERT_FALSE(has_name(env, "ALLOWED_VAR"));
	free(env);
	unsetenv("SECRET_TOKEN");
	unsetenv("ALLOWED_VAR");
	CU_ASSERT_TRUE(tl_wait_baseline(fds, thr, kids, 10000));
	CU_ASSERT_EQUAL(tl_count_zombie_children(), 0);
}

int
main(void)
{
	int rc;

	setup_marker_script();
	tl_suite("provider", (tl_test[]){
	    { "test_provider_production_local_refused",
	      test_provider_production_local_refused },
	    { "test_provider_unset_environment_refused",
	      test_provider_unset_environment_refused },
	    { "test_provider_development_required_guarantee_refused",
	      test_provider_development_required_guarantee_refused },
	    { "test_provider_unknown_provider_refused",
	      test_provider_unknown_provider_refused },
	    { "test_provider_file_production_refused",
	      test_provider_file_production_refused },
	    { "test_provider_file_without_environment_refused",
	      test_provider_file_without_environment_refused },
	    { "test_provider_environment_variables_do_not_override",
	      test_provider_environment_variables_do_not_override },
	    { "test_provider_overlay_file_cannot_weaken",
	      test_provider_overlay_file_cannot_weaken },
	    { "test_provider_env_loader_cannot_weaken",
	      test_provider_env_loader_cannot_weaken },
	    { "test_provider_first_file_cannot_weaken_code",
	      test_provider_first_file_cannot_weaken_code },
	    { "test_provider_zeroed_and_out_of_range_refused",
	      test_provider_zeroed_and_out_of_range_refused },
	    { "test_provider_marker_script_would_show_a_spawn",
	      test_provider_marker_script_would_show_a_spawn },
	    { "test_provider_worker_environment_is_allow_listed",
	      test_provider_worker_environment_is_allow_listed },
	    { NULL, NULL } });
	rc = tl_run();
	cleanup_tmp();
	return rc;
}

/*
 * conf_file_test.c - sipc.conf(5) checked from outside: the manual's own
 * table of numbers (range and default of every key)
 * and its EXAMPLE are read from the page and held against the loader
 * and sipc_config_init(), and the keys no other test loads (cgroup, the
 * three limits, probe_path) go through the file and the SIPC_*
 * variables.  Only the public headers; api_edges_test.c and
 * config_test.c hold what is not repeated here.
 *
 * Threads: the CUnit thread only.
 */
#include <libgen.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sipc.h"
#include "testlib.h"

/* Path of a file of the source tree: from the working directory (make
 * check runs in the tree) or beside the fixtures' build directory. */
static const char *
tree_file(const char *rel, char *buf, size_t len)
{
	char fx[PATH_MAX];

	if (access(rel, R_OK) == 0)
		return rel;
	snprintf(fx, sizeof(fx), "%s", tl_fixture("echo"));
	snprintf(buf, len, "%s/../../%s", dirname(dirname(fx)), rel);
	return buf;
}

/* Load `text` as a configuration file; SIPC_E_CONFIG, 0, ...  The
 * config is started from sipc_config_init() and left loaded in *c. */
static int
load_text(const char *text, struct sipc_config *c, sipc_config_store **st,
          char *err, size_t errlen)
{
	char path[] = "/tmp/sipc-outside-XXXXXX";
	size_t n = strlen(text);
	int fd = mkstemp(path), rc;

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_FATAL(write(fd, text, n) == (ssize_t)n);
	close(fd);
	sipc_config_init(c);
	rc = sipc_config_load_file(path, c, st, err, errlen);
	unlink(path);
	return rc;
}

static int
load_one(const char *key, long long v)
{
	struct sipc_config c;
	sipc_config_store *st = NULL;
	char text[128], err[256];
	int rc;

	snprintf(text, sizeof(text), "%s = %lld\n", key, v);
	rc = load_text(text, &c, &st, err, sizeof(err));
	sipc_config_store_free(st);
	return rc;
}

/* "16", "2^30" as the manual writes them. */
static long long
man_number(const char *w)
{
	const char *caret = strchr(w, '^');

	if (caret != NULL)
		return strtoll(w, NULL, 10) == 2 ?
		    1LL << strtol(caret + 1, NULL, 10) : -1;
	return strtoll(w, NULL, 10);
}

/* Where each numeric key lives in the public struct, to read the
 * default sipc_config_init() gives it. */
#define NK(f) { #f, offsetof(struct sipc_config, f), \
	sizeof(((struct sipc_config *)0)->f) }
static const struct { const char *key; size_t off, size; } num_keys[] = {
	NK(workers), NK(max_inflight), NK(max_fds_in_flight),
	NK(max_payload), NK(ring_frames), NK(ring_bytes), NK(mem_ceiling), NK(diag_line_max),
	NK(diag_tail_bytes), NK(handshake_ms), NK(grace_ms), NK(drain_ms),
	NK(stall_ms), NK(cancel_grace_ms), NK(idempotent_retries),
	NK(restart_base_ms), NK(restart_cap_ms), NK(restart_reset_ms),
	NK(restart_intensity), NK(restart_window_ms),
	NK(pool_restart_budget), NK(cooldown_ms), NK(worker_nproc_limit),
	NK(group_commit_ms), NK(pids_max), NK(memory_max),
	NK(cpu_max_percent), NK(gather_us), NK(queue_timeout_ms),
	NK(max_requests), NK(max_age_ms), NK(spares), NK(max_rss),
	NK(request_figures),
	NK(sandbox_uid), NK(sandbox_gid),
	NK(rlimit_as), NK(rlimit_fsize), NK(rlimit_nofile), NK(rlimit_cpu),
	NK(max_procs), NK(tmp_size),
};

/* sipc_config_init()'s value of numeric key `key`, or -1. */
static long long
default_of(const char *key)
{
	struct sipc_config c;
	const unsigned char *p = (const unsigned char *)&c;
	uint32_t v32;
	uint64_t v64;
	size_t i;

	sipc_config_init(&c);
	for (i = 0; i < sizeof(num_keys) / sizeof(num_keys[0]); i++) {
		if (strcmp(num_keys[i].key, key) != 0)
			continue;
		if (num_keys[i].size == sizeof(v32)) {
			memcpy(&v32, p + num_keys[i].off, sizeof(v32));
			return v32;
		}
		memcpy(&v64, p + num_keys[i].off, sizeof(v64));
		return (long long)v64;
	}
	return -1;
}

/* "[2]", "[16 MiB]", "[0, none]" as the manual writes a default. */
static long long
man_default(const char *w)
{
	char *end;
	long long v = strtoll(w + 1, &end, 10);

	if (strncmp(end, " KiB", 4) == 0)
		v <<= 10;
	else if (strncmp(end, " MiB", 4) == 0)
		v <<= 20;
	return v;
}

/* sipc.conf(5), "Numbers": every row of the table (key, min..max
 * [default]) is a key of the loader, min and max load, min - 1 and
 * max + 1 do not, and sipc_config_init() gives the default.  The table
 * is read from the manual itself, so the page and the code cannot drift
 * apart unnoticed (pids_max, memory_max and cpu_max_percent had no
 * range or default test at all). */
/* rules: CF1 */
static void
test_conf_file_man_ranges_are_enforced(void)
{
	char buf[PATH_MAX], line[256], key[64], lo[32], hi[32], def[32];
	const char *path = tree_file("man/sipc.conf.5", buf, sizeof(buf));
	FILE *f = fopen(path, "r");
	bool in_table = false;
	long long min, max;
	int rows = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, ".TS", 3) == 0) {
			in_table = true;
			continue;
		}
		if (strncmp(line, ".TE", 3) == 0)
			break;
		if (!in_table || sscanf(line, "%63[a-z_]\t%31[0-9^]..%31[0-9^]"
		    "\t%31[^\n]", key, lo, hi, def) != 4)
			continue;
		rows++;
		min = man_number(lo);
		max = man_number(hi);
		CU_ASSERT(min >= 0 && max > min);
		if (load_one(key, min) != 0 || load_one(key, max) != 0 ||
		    load_one(key, max + 1) != SIPC_E_CONFIG ||
		    (min > 0 && load_one(key, min - 1) != SIPC_E_CONFIG)) {
			fprintf(stderr, "\n    sipc.conf(5) says %s %lld..%lld: "
			    "not what the loader enforces\n", key, min, max);
			CU_FAIL("a documented range is not enforced");
		}
		if (default_of(key) != man_default(def)) {
			fprintf(stderr, "\n    sipc.conf(5) says %s defaults to "
			    "%s; sipc_config_init() gives %lld\n", key, def,
			    default_of(key));
			CU_FAIL("a documented default is not the default");
		}
	}
	fclose(f);
	TL_EQ(rows, 42);   /* every numeric key of the table */
}

/* sipc.conf(5), EXAMPLE: the example file loads as printed and means
 * what it says. */
/* rules: CF2 */
static void
test_conf_file_man_example_loads(void)
{
	char buf[PATH_MAX], line[512], text[4096] = "", err[256] = "";
	const char *path = tree_file("man/sipc.conf.5", buf, sizeof(buf));
	FILE *f = fopen(path, "r");
	struct sipc_config c;
	sipc_config_store *st = NULL;
	bool in_ex = false, in_nf = false;
	char *p, *q;

	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, ".SH EXAMPLE", 11) == 0)
			in_ex = true;
		else if (in_ex && strncmp(line, ".nf", 3) == 0)
			in_nf = true;
		else if (in_nf && strncmp(line, ".fi", 3) == 0)
			break;
		else if (in_nf) {
			/* troff: "\-" is "-" */
			for (p = q = line; *p != '\0'; p++)
				if (!(p[0] == '\\' && p[1] == '-'))
					*q++ = *p;
			*q = '\0';
			strncat(text, line, sizeof(text) - strlen(text) - 1);
		}
	}
	fclose(f);
	CU_ASSERT_FATAL(strstr(text, "path = ") != NULL);
	TL_EQ_FATAL(load_text(text, &c, &st, err, sizeof(err)), 0);
	TL_EQ(c.environment, SIPC_ENV_DEVELOPMENT);
	TL_STREQ(c.path, "/usr/libexec/converter/worker");
	CU_ASSERT_FATAL(c.argv != NULL);
	TL_STREQ(c.argv[0], "worker");
	TL_STREQ(c.argv[1], "--mode");
	TL_STREQ(c.argv[2], "fast path");
	CU_ASSERT_PTR_NULL(c.argv[3]);
	TL_EQ(c.workers, 4);
	TL_EQ(c.grace_ms, 2000);
	CU_ASSERT_FATAL(c.env_allow != NULL);
	TL_STREQ(c.env_allow[0], "LANG");
	TL_STREQ(c.env_allow[1], "TZ");
	CU_ASSERT_FATAL(c.env_set != NULL);
	TL_STREQ(c.env_set[0],
	    "CONVERTER_CACHE=/var/cache/converter");
	TL_STREQ(c.state_dir, "/var/lib/converter/sipc");
	TL_EQ(c.durability, SIPC_DURABLE_EACH);
	sipc_config_store_free(st);
}

/* sipc.conf(5): cgroup (auto, off, required), the three limits and
 * probe_path load from a file and from their SIPC_* variables, the
 * variables override the file, and an empty probe_path, in a file or a
 * variable, means none (the default search). */
/* rules: CF2 */
static void
test_conf_file_cgroup_limit_and_probe_keys(void)
{
	static const char text[] = "cgroup = required\npids_max = 64\n"
	    "memory_max = 1048576\ncpu_max_percent = 50\n"
	    "probe_path = /opt/x/sipc-probe\n";
	char *const envp[] = { "SIPC_CGROUP=off", "SIPC_PIDS_MAX=0",
	    "SIPC_MEMORY_MAX=2097152", "SIPC_CPU_MAX_PERCENT=100000",
	    "SIPC_PROBE_PATH=", NULL };
	char *const bad[] = { "SIPC_CGROUP=on", NULL };
	struct sipc_config c;
	sipc_config_store *st = NULL;
	char err[256] = "";

	TL_EQ_FATAL(load_text(text, &c, &st, err, sizeof(err)), 0);
	TL_EQ(c.cgroup, SIPC_CGROUP_REQUIRED);
	TL_EQ(c.pids_max, 64);
	TL_EQ(c.memory_max, 1048576);
	TL_EQ(c.cpu_max_percent, 50);
	TL_STREQ(c.probe_path, "/opt/x/sipc-probe");
	TL_EQ_FATAL(sipc_config_load_env(envp, &c, &st, err,
	    sizeof(err)), 0);
	TL_EQ(c.cgroup, SIPC_CGROUP_OFF);
	TL_EQ(c.pids_max, 0);
	TL_EQ(c.memory_max, 2097152);
	TL_EQ(c.cpu_max_percent, 100000);
	CU_ASSERT_PTR_NULL(c.probe_path);
	TL_EQ(sipc_config_load_env(bad, &c, &st, err, sizeof(err)),
	    SIPC_E_CONFIG);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "SIPC_CGROUP"));
	TL_EQ(c.cgroup, SIPC_CGROUP_OFF);   /* nothing applied */
	sipc_config_store_free(st);
	st = NULL;
	TL_EQ(load_text("probe_path =\n", &c, &st, err,
	    sizeof(err)), 0);
	CU_ASSERT_PTR_NULL(c.probe_path);
	sipc_config_store_free(st);
}

int
main(void)
{
	tl_suite("conf_file", (tl_test[]){
	    { "test_conf_file_man_ranges_are_enforced",
	      test_conf_file_man_ranges_are_enforced },
	    { "test_conf_file_man_example_loads",
	      test_conf_file_man_example_loads },
	    { "test_conf_file_cgroup_limit_and_probe_keys",
	      test_conf_file_cgroup_limit_and_probe_keys },
	    { NULL, NULL } });
	return tl_run();
}

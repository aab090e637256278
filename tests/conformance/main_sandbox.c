/*
 * main_sandbox.c - runs the provider conformance suite against the
 * sandbox provider (bubblewrap, src/provider/sandbox.c): every functional
 * rule, every isolation rule it declares, and the table of guarantees
 * with the local adapter beside it, every probe run for real on both.
 * Each probe of the table must fail on the local adapter and pass on
 * the sandbox (resource limits: only where a cgroup holds them).
 *
 * Beside the suite, what is the sandbox's own:
 *   - a missing bwrap fails sipc_create() naming it, and a launch as an
 *     exec failure (ENOENT), never a worker started without a sandbox;
 *   - the identity it keeps is proven: sipc-init's host pid is a child
 *     of the outer bwrap, in a PID namespace that is not ours;
 *   - sipc-init finds the namespace's /proc already mounted by bwrap
 *     and does not try (and warn) again;
 *   - production refuses it, naming the guarantees it lacks;
 *   - a leftover identity ends the sandbox only when proven;
 *   - the view is minimal: the files a worker's program needs to start
 *     (every file the kernel maps for it), and no other file of /usr;
 *     a #! script gets its own file and interpreter, not its directory;
 *   - the start-up probe is launched into the workers' view.
 * Skipped as a whole where bwrap is missing or cannot make its
 * namespaces here.
 *
 * Threads: the CUnit thread only.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "os/os.h"
#include "provider/provider.h"
#include "conformance.h"
#include "driver.h"
#include "testlib.h"

static const char *no_sandbox;  /* why the sandbox cannot run here */

static void
test_conformance_sandbox_unavailable(void)
{
	tl_skip(no_sandbox);
}

/*
 * Without a trusted bwrap a launch fails as an exec failure: ENOENT when
 * it is missing, EPERM when it is a copy in a directory others may write
 * (what is on $PATH is never looked at).  In a fresh process (this
 * binary again, MISSING_BWRAP path errno): the lookup happens once per
 * process, and this one has already found bwrap.
 */
#define MISSING_BWRAP "--missing-bwrap"

static int
missing_bwrap_child(const char *path, int want)
{
	int eno = 0, r;
	struct cw w;

	struct sipc_config c;
	sipc_supervisor *s = NULL;
	char err[256] = "";
	int rc;

	sipc__bwrap_test_path = path;
	r = cw_launch_path(&w, tl_fixture("echo"), NULL, NULL, NULL, &eno);
	if (r == 0)
		cw_finish(&w);
	printf("conformance: sandbox without bwrap: %s (%s)\n",
	    sipc_strerror(r), strerror(eno));
	/* And sipc_create() says so before anything starts. */
	sipc_config_init(&c);
	c.environment = SIPC_ENV_TEST;
	c.provider = "sandbox";
	c.path = tl_fixture("echo");
	rc = sipc_create(&c, err, sizeof(err), &s);
	printf("conformance: sipc_create without bwrap: %s: %s\n",
	    sipc_strerror(rc), err);
	if (rc == 0)
		sipc_destroy(s);
	return r == SIPC_E_EXEC && eno == want && rc == SIPC_E_EXEC &&
	    strstr(err, "bwrap") != NULL ? 0 : 1;
}

/* rules: SB1 PB12 */
static void
test_conformance_sandbox_missing_bwrap_is_exec_failure(void)
{
	char dir[] = "/tmp/sipc-conf-bwrap-XXXXXX", copy[64], cmd[160];
	char ldir[PATH_MAX] = "", link[PATH_MAX + 8];
	const char *path[3] = { "/nonexistent-sipc-dir/bwrap", copy, link };
	const char *want[3] = { "2", "1", "1" };   /* ENOENT, EPERM, EPERM */
	const char *base = geteuid() == 0 ? "/run" : getenv("HOME");
	int st, i, n = 2;
	pid_t pid;

	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(copy, sizeof(copy), "%s/bwrap", dir);
	snprintf(cmd, sizeof(cmd), "cp %s %s", SIPC__BWRAP_DEFAULT, copy);
	CU_ASSERT_FATAL(system(cmd) == 0);
	/* A link in a directory nobody else may write, to that copy: the
	 * file that would run is checked, not the link's directories. */
	if (base != NULL && snprintf(ldir, sizeof(ldir),
	    "%s/sipc-conf-link-XXXXXX", base) < (int)sizeof(ldir) &&
	    mkdtemp(ldir) != NULL) {
		snprintf(link, sizeof(link), "%s/bwrap", ldir);
		if (symlink(copy, link) == 0)
			n = 3;
	}
	if (n == 2)
		printf("conformance: no directory for the link case here\n");
	for (i = 0; i < n; i++) {
		fflush(stdout);
		if ((pid = fork()) == 0) {
			execl("/proc/self/exe", "conformance_sandbox",
			    MISSING_BWRAP, path[i], want[i], (char *)NULL);
			_exit(127);
		}
		CU_ASSERT_FATAL(pid > 0);
		CU_ASSERT_FATAL(waitpid(pid, &st, 0) == pid);
		CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	unlink(copy);
	rmdir(dir);
	if (n == 3)
		unlink(link);
	if (ldir[0] != '\0')
		rmdir(ldir);
}

static uint64_t
ns_ino(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (uint64_t)st.st_ino : 0;
}

/* rules: SB3 SB7 PB14 */
static void
test_conformance_sandbox_identity_proven(void)
{
	const struct sipc__sbx_id *id;
	struct sipc__sbx_id back;
	struct sipc__proc_stat ps;
	struct sipc_hello hello;
	char path[64];
	struct cw w;

	/* Asked for a process group, it still gets its namespace (SB6). */
	conf_contain = SIPC_CONTAIN_PROCESS_GROUP;
	CU_ASSERT_EQUAL_FATAL(cw_launch(&w, "echo", NULL, NULL), 0);
	conf_contain = SIPC_CONTAIN_AUTO;
	CU_ASSERT_EQUAL(cw_hello(&w, &hello), 0);
	id = sipc__sandbox_id(w.h);
	CU_ASSERT(id->init_pid > 0 && id->bwrap_pid > 0);
	CU_ASSERT_EQUAL(w.ch.display_pid, id->init_pid);
	CU_ASSERT_EQUAL(w.ch.end_fd >= 0, true);
	CU_ASSERT_EQUAL(sipc__proc_stat(id->init_pid, &ps), 0);
	CU_ASSERT_EQUAL(ps.ppid, id->bwrap_pid);
	CU_ASSERT_EQUAL(ps.starttime, id->init_start);
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)id->init_pid);
	CU_ASSERT_EQUAL(ns_ino(path), id->pidns);
	CU_ASSERT_NOT_EQUAL(id->pidns, ns_ino("/proc/self/ns/pid"));
	CU_ASSERT_EQUAL(strlen(id->boot_id), SIPC__BOOT_ID_LEN);
	/* What the journal keeps reads back as the same identity. */
	CU_ASSERT_EQUAL(sipc__sbx_id_decode(&w.ch.id, &back), 0);
	CU_ASSERT(back.bwrap_pid == id->bwrap_pid &&
	    back.bwrap_start == id->bwrap_start &&
	    back.init_pid == id->init_pid && back.init_start == id->init_start &&
	    back.pidns == id->pidns && strcmp(back.boot_id, id->boot_id) == 0);
	w.ch.id.bytes[0]++;
	CU_ASSERT_EQUAL(sipc__sbx_id_decode(&w.ch.id, &back), -EINVAL);
	w.ch.id.bytes[0]--;
	CU_ASSERT_EQUAL(w.ch.contain, SIPC_CONTAIN_PID_NAMESPACE);
	cw_finish(&w);
}

/* Production requires every guarantee: the sandbox lacks resource
 * limits, and a separate user where the supervisor is not root, and is
 * refused naming exactly those, with nothing started; in development
 * the five it declares may be required. */
/* rules: SB8 PB20 */
static void
test_conformance_sandbox_production_refused(void)
{
	const unsigned five = SIPC_G_PID_NAMESPACE | SIPC_G_MOUNT_NAMESPACE |
	    SIPC_G_NETWORK_ISOLATION | SIPC_G_NO_INHERITED_SECRETS |
	    SIPC_G_TREE_CONTAINMENT;
	struct cw_base b = cw_base_take();
	struct sipc_config c;
	sipc_supervisor *s = NULL;
	char err[512] = "";

	sipc_config_init(&c);
	c.environment = SIPC_ENV_PRODUCTION;
	c.provider = "sandbox";
	c.path = tl_fixture("echo");
	c.init_path = conf_init_path;
	CU_ASSERT_EQUAL(sipc_create(&c, err, sizeof(err), &s),
	    SIPC_E_PRODUCTION);
	CU_ASSERT_PTR_NULL(s);
	printf("conformance: sandbox in production: %s\n", err);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "resource_limits"));
	CU_ASSERT_EQUAL(strstr(err, "separate_user") != NULL, geteuid() != 0);
	CU_ASSERT_PTR_NULL(strstr(err, "pid_namespace"));
	CU_ASSERT_PTR_NULL(strstr(err, "no_privilege"));
	/* declared (PB28's probe proves them), so never missing */
	CU_ASSERT_PTR_NULL(strstr(err, "syscall_filter"));
	CU_ASSERT_PTR_NULL(strstr(err, " limits"));
	CU_ASSERT_PTR_NULL(strstr(err, "tree_containment"));
	cw_base_check(b);
	c.environment = SIPC_ENV_DEVELOPMENT;
	c.required_guarantees = five;
	CU_ASSERT_EQUAL_FATAL(sipc_create(&c, err, sizeof(err), &s), 0);
	CU_ASSERT_EQUAL(sipc_wait_ready(s, 1, DEADLINE_MS), 0);
	sipc_destroy(s);
}

/*
 * A journalled identity, as a restarted supervisor would use it: one not
 * proven (a start time that is not the init's) leaves the sandbox
 * alone, the true one ends it (TERM through its init).
 */
/* rules: SB4 PB15 */
static void
test_conformance_sandbox_leftover_proven_only(void)
{
	struct sipc__sbx_id id, wrong;
	struct sipc_provider_id bytes;
	struct sipc_hello hello;
	struct sipc_frame f;
	struct cw w;

	CU_ASSERT_EQUAL_FATAL(cw_launch(&w, "echo", NULL, NULL), 0);
	CU_ASSERT_EQUAL(cw_hello(&w, &hello), 0);
	id = *sipc__sandbox_id(w.h);
	wrong = id;
	wrong.init_start++;
	sipc__sbx_id_encode(&wrong, &bytes);
	CU_ASSERT_EQUAL(conf_prov->leftover(NULL, &bytes, 200), 0);
	wrong = id;
	wrong.pidns++;
	sipc__sbx_id_encode(&wrong, &bytes);
	CU_ASSERT_EQUAL(conf_prov->leftover(NULL, &bytes, 200), 0);
	/* Bytes of another provider's identity are an error, not a proof. */
	bytes.len = 40;
	CU_ASSERT(conf_prov->leftover(NULL, &bytes, 200) < 0);
	/* Still alive and answering. */
	CU_ASSERT_EQUAL(cw_roundtrip(&w, 1, "x", 1, &f), 0);
	free(f.payload);
	/* The identity the launch handed the journal ends it. */
	CU_ASSERT_EQUAL(conf_prov->leftover(NULL, &w.ch.id, DEADLINE_MS), 1);
	CU_ASSERT_EQUAL(cw_wait_end(&w, DEADLINE_MS), 1);
	CU_ASSERT_EQUAL(w.exit.kind, SIPC_EXIT_SIGNAL);
	CU_ASSERT_EQUAL(w.exit.signo, SIGTERM);
	cw_finish(&w);
}

/* bwrap mounts the namespace's /proc: sipc-init sees itself as pid 1
 * there and leaves it, so no refusal reaches the diagnostics. */
static void
test_conformance_sandbox_init_keeps_bwrap_proc(void)
{
	struct sipc_hello hello;
	struct cw w;

	CU_ASSERT_EQUAL_FATAL(cw_launch(&w, "echo", NULL, NULL), 0);
	CU_ASSERT_EQUAL(cw_hello(&w, &hello), 0);
	CU_ASSERT_EQUAL(conf_prov->stop(w.h, SIPC_STOP_GRACEFUL), 0);
	CU_ASSERT_EQUAL(cw_wait_end(&w, DEADLINE_MS), 1);
	CU_ASSERT_FALSE(cw_diag_has(&w, "not mounted", 11));
	CU_ASSERT_FALSE(cw_diag_has(&w, "bwrap:", 6));
	cw_finish(&w);
}

/* Is there a path in d that contains `part`? */
static bool
deps_any(const struct sipc__elfdeps *d, const char *part)
{
	for (size_t i = 0; i < d->n; i++)
		if (strstr(d->path[i], part) != NULL)
			return true;
	return false;
}

/* Every file /proc/<pid>/maps shows mapped is in d: 0, or how many are
 * missing (each printed).  *ret_files counts the file mappings. */
static int
maps_missing(long pid, const struct sipc__elfdeps *d, int *ret_files)
{
	char path[64], line[PATH_MAX + 128], file[PATH_MAX];
	int missing = 0;
	FILE *f;

	*ret_files = 0;
	snprintf(path, sizeof(path), "/proc/%ld/maps", pid);
	if ((f = fopen(path, "re")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, "%*s %*s %*s %*s %*s %4095s", file) != 1 ||
		    file[0] != '/')
			continue;
		/* A file the process made itself in its own /tmp (TSan's
		 * runtime maps /tmp/tsan.rodata.PID), or a memfd (the
		 * runtime's start counter, "/memfd:sipc-start"), is no host
		 * file. */
		if (!sipc__elfdeps_has(d, file) && (strncmp(file, "/tmp/",
		    5) == 0 || strncmp(file, "/memfd:", 7) == 0))
			continue;
		++*ret_files;
		if (!sipc__elfdeps_has(d, file)) {
			printf("conformance: mapped, not in the view: %s\n",
			    file);
			missing++;
		}
	}
	fclose(f);
	return missing;
}

/*
 * What the view is made of, read from the ELF files, is what the loader
 * really maps: the echo fixture run directly (local adapter, so its host
 * pid's maps are readable) maps no file the list lacks, and the list
 * names its interpreter, libc and libbsd.
 */
/* rules: SB9 */
static void
test_conformance_sandbox_view_has_what_kernel_maps(void)
{
	const struct sipc_provider_ops *saved = conf_prov;
	enum sipc_containment contain = conf_contain;
	struct sipc__elfdeps d = { 0 };
	struct sipc_hello hello;
	char why[PATH_MAX + 64];
	int files = 0;
	struct cw w;

	CU_ASSERT_EQUAL_FATAL(sipc__elfdeps_add(&d, tl_fixture("echo"), why,
	    sizeof(why)), 0);
	CU_ASSERT(deps_any(&d, "/ld-linux") || deps_any(&d, "/ld-"));
	CU_ASSERT(deps_any(&d, "/libc.so"));
	CU_ASSERT(deps_any(&d, "/libbsd.so"));
	conf_prov = &sipc__provider_local;
	conf_contain = SIPC_CONTAIN_PROCESS_GROUP;
	CU_ASSERT_EQUAL_FATAL(cw_launch(&w, "echo", NULL, NULL), 0);
	conf_prov = saved;
	conf_contain = contain;
	CU_ASSERT_EQUAL(cw_hello(&w, &hello), 0);
	CU_ASSERT_EQUAL(maps_missing(w.ch.display_pid, &d, &files), 0);
	CU_ASSERT(files >= 3);          /* the program, libc, the loader */
	conf_prov = &sipc__provider_local;
	cw_finish(&w);
	conf_prov = saved;
	sipc__elfdeps_free(&d);
	/* A script (ldd is one) has no ELF needs to read. */
	if (access("/usr/bin/ldd", R_OK) == 0) {
		CU_ASSERT_EQUAL(sipc__elfdeps_add(&d, "/usr/bin/ldd", why,
		    sizeof(why)), -ENOEXEC);
		CU_ASSERT_PTR_NOT_NULL(strstr(why, "script"));
		sipc__elfdeps_free(&d);
	}
}

/* A sandboxed worker runs, yet reads no host program under /usr that it
 * does not need (the host can). */
/* rules: SB9 */
static void
test_conformance_sandbox_view_is_minimal(void)
{
	static const char *const host[] = { "/usr/bin/env",
	    "/usr/share/common-licenses/GPL-3" };
	struct sipc_hello hello;
	char req[PATH_MAX + 8], text[256];
	struct cw w;

	CU_ASSERT_EQUAL_FATAL(cw_launch(&w, "probe", NULL, NULL), 0);
	CU_ASSERT_EQUAL(cw_hello(&w, &hello), 0);
	CU_ASSERT_STRING_EQUAL(w.ch.note, "");
	cw_finish(&w);
	for (size_t i = 0; i < sizeof(host) / sizeof(host[0]); i++) {
		if (access(host[i], R_OK) != 0)
			continue;       /* not on this host: nothing to hide */
		snprintf(req, sizeof(req), "read %s", host[i]);
		text[0] = '\0';
		CU_ASSERT_EQUAL(conf_ask(&sipc__provider_sandbox, NULL,
		    "probe", req, text, sizeof(text)), 0);
		printf("conformance: sandbox: %s: %s\n", req, text);
		CU_ASSERT_EQUAL(strncmp(text, "read=0", 6), 0);
	}
}

/* Copy file from to to, mode 0755.  0 or -1. */
static int
copy_exec(const char *from, const char *to)
{
	char buf[65536];
	int in, out, rc = 0;
	ssize_t n;

	if ((in = open(from, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	if ((out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    0755)) < 0) {
		close(in);
		return -1;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			rc = -1;
	if (n < 0 || close(out) < 0)
		rc = -1;
	close(in);
	return rc;
}

/*
 * A #! script gets its own file and its interpreter (and what the host
 * declares), not its directory: the launch's view is minimal (no note)
 * and the script, which runs, finds no sibling to execute, so no hello
 * comes (tests/sbxident_test.c runs one that execs a declared program).
 */
/* rules: SB9 */
static void
test_conformance_sandbox_script_gets_own_files(void)
{
	static const char script[] = "#!/bin/sh\n[ -e \"${0%/*}/echo\" ] && "
	    "exec \"${0%/*}/echo\"\necho 'no sibling' >&2\nexit 7\n";
	char dir[] = "/tmp/sipc-view-XXXXXX", sh[64], echo[64];
	struct sipc_hello hello;
	struct cw w;
	int fd;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	CU_ASSERT(chmod(dir, 0755) == 0);
	snprintf(sh, sizeof(sh), "%s/run.sh", dir);
	snprintf(echo, sizeof(echo), "%s/echo", dir);
	CU_ASSERT_EQUAL_FATAL(copy_exec(tl_fixture("echo"), echo), 0);
	fd = open(sh, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(write(fd, script, sizeof(script) - 1),
	    (ssize_t)sizeof(script) - 1);
	close(fd);
	CU_ASSERT_EQUAL(cw_launch_path(&w, sh, NULL, NULL, NULL, NULL), 0);
	printf("conformance: sandbox: script launch note: \"%s\"\n", w.ch.note);
	CU_ASSERT_STRING_EQUAL(w.ch.note, "");
	CU_ASSERT_NOT_EQUAL(cw_hello(&w, &hello), 0);
	cw_finish(&w);
	unlink(sh);
	unlink(echo);
	rmdir(dir);
}

/* "read PATH" to a launched sipc-probe: its reply in out. */
static int
probe_read(struct cw *w, uint64_t id, const char *path, char *out, size_t cap)
{
	char req[PATH_MAX + 8];
	struct sipc_frame f;
	int r;

	snprintf(req, sizeof(req), "read %s", path);
	if ((r = cw_roundtrip(w, id, req, (uint32_t)strlen(req), &f)) < 0)
		return r;
	snprintf(out, cap, "%.*s", (int)f.hdr.len, (char *)f.payload);
	free(f.payload);
	return 0;
}

/*
 * The start-up probe is launched into the workers' view, not one of its
 * own: with a supervisor's state made for the echo worker and a
 * declared read-only path, the probe program reads the worker's program
 * and the declared file, as a worker would; a file the host did not
 * declare stays out.
 */
/* rules: PB28 */
static void
test_conformance_sandbox_probe_in_workers_view(void)
{
	char dir[] = "/tmp/sipc-pview-XXXXXX", file[64], other[64], out[128];
	char echo[PATH_MAX], err[256] = "";
	void *saved = conf_prov_state, *st = NULL;
	struct sipc_hello hello;
	struct sipc_config c;
	struct cw w;
	int fd;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	CU_ASSERT(chmod(dir, 0755) == 0);
	snprintf(file, sizeof(file), "%s/declared", dir);
	snprintf(other, sizeof(other), "/tmp/sipc-pview-other-%d", (int)getpid());
	CU_ASSERT((fd = open(file, O_WRONLY | O_CREAT, 0644)) >= 0 &&
	    close(fd) == 0);
	CU_ASSERT((fd = open(other, O_WRONLY | O_CREAT, 0644)) >= 0 &&
	    close(fd) == 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(realpath(tl_fixture("echo"), echo));
	sipc_config_init(&c);
	c.environment = SIPC_ENV_TEST;
	c.path = echo;
	c.init_path = conf_init_path;
	c.cgroup = SIPC_CGROUP_OFF;
	c.sandbox_ro_paths = dir;
	CU_ASSERT_EQUAL_FATAL(sipc__provider_sandbox.create(&c, &st, err,
	    sizeof(err)), 0);
	conf_prov_state = st;
	CU_ASSERT_EQUAL(cw_launch(&w, "probe", NULL, NULL), 0);
	CU_ASSERT_EQUAL(cw_hello(&w, &hello), 0);
	CU_ASSERT_EQUAL(probe_read(&w, 1, echo, out, sizeof(out)), 0);
	printf("conformance: probe reads the worker %s: %s\n", echo, out);
	CU_ASSERT(strncmp(out, "read=1", 6) == 0);
	CU_ASSERT_EQUAL(probe_read(&w, 2, file, out, sizeof(out)), 0);
	CU_ASSERT(strncmp(out, "read=1", 6) == 0);
	CU_ASSERT_EQUAL(probe_read(&w, 3, other, out, sizeof(out)), 0);
	CU_ASSERT(strncmp(out, "read=0", 6) == 0);
	cw_finish(&w);
	conf_prov_state = saved;
	sipc__provider_sandbox.destroy(st);
	unlink(file);
	unlink(other);
	rmdir(dir);
}

/*
 * The table: local | sandbox.  Every probe but the limits one fails on
 * the local adapter (its secrets row passes: it hands on only the launch
 * environment) and passes in the sandbox.  No cgroup is set up here, so
 * limits are provided by neither.
 */
/* rules: SB6 PB13 */
static void
test_conformance_table_local_sandbox(void)
{
	int lc[CONF_P_COUNT], sc[CONF_P_COUNT];
	enum sipc_containment saved = conf_contain;

	conf_contain = SIPC_CONTAIN_PROCESS_GROUP;
	conf_table_column("local", &sipc__provider_local, NULL, lc);
	conf_contain = saved;
	conf_table_column("sandbox", &sipc__provider_sandbox, NULL, sc);
	conf_table_print();
	CU_ASSERT_EQUAL(lc[CONF_P_HOST_PID], 0);
	CU_ASSERT_EQUAL(lc[CONF_P_HOST_FILES], 0);
	CU_ASSERT_EQUAL(lc[CONF_P_HOST_SOCKETS], 0);
	CU_ASSERT_EQUAL(lc[CONF_P_TERMINATION], 0);
	CU_ASSERT_EQUAL(sc[CONF_P_HOST_PID], 1);
	CU_ASSERT_EQUAL(sc[CONF_P_HOST_FILES], 1);
	CU_ASSERT_EQUAL(sc[CONF_P_HOST_SOCKETS], 1);
	CU_ASSERT_EQUAL(sc[CONF_P_SECRETS], 1);
	CU_ASSERT_EQUAL(sc[CONF_P_TERMINATION], 1);
	CU_ASSERT_EQUAL(sc[CONF_P_LIMITS], 0);
}

/* Can bwrap make every namespace here?  NULL, or why not. */
static const char *
sandbox_unavailable(void)
{
	const char *bwrap;
	char cmd[PATH_MAX + 96];

	if (sipc__sandbox_bwrap(&bwrap) < 0)
		return "no trusted /usr/bin/bwrap (missing, or writable by others)";
	snprintf(cmd, sizeof(cmd), "%s --unshare-all --ro-bind / / /bin/true "
	    ">/dev/null 2>&1", bwrap);
	if (system(cmd) != 0)
		return "bwrap cannot create its namespaces here (user or PID "
		    "namespaces refused)";
	return NULL;
}

int
main(int argc, char **argv)
{
	int rc;

	setvbuf(stdout, NULL, _IONBF, 0);
	conf_init_path = tl_init_path();
	conf_contain = SIPC_CONTAIN_AUTO;
	conf_prov = &sipc__provider_sandbox;
	if (argc == 4 && strcmp(argv[1], MISSING_BWRAP) == 0)
		return missing_bwrap_child(argv[2], atoi(argv[3]));
	if ((no_sandbox = sandbox_unavailable()) != NULL) {
		printf("conformance: sandbox: skipped: %s\n", no_sandbox);
		tl_suite("conformance_sandbox", (tl_test[]){
		    { "test_conformance_sandbox_unavailable",
		      test_conformance_sandbox_unavailable },
		    { NULL, NULL } });
		return tl_run();
	}
	tl_suite("conformance_sandbox", (tl_test[]){
	    { "test_conformance_sandbox_missing_bwrap_is_exec_failure",
	      test_conformance_sandbox_missing_bwrap_is_exec_failure },
	    { "test_conformance_sandbox_identity_proven",
	      test_conformance_sandbox_identity_proven },
	    { "test_conformance_sandbox_init_keeps_bwrap_proc",
	      test_conformance_sandbox_init_keeps_bwrap_proc },
	    { "test_conformance_sandbox_production_refused",
	      test_conformance_sandbox_production_refused },
	    { "test_conformance_sandbox_leftover_proven_only",
	      test_conformance_sandbox_leftover_proven_only },
	    { "test_conformance_sandbox_view_has_what_kernel_maps",
	      test_conformance_sandbox_view_has_what_kernel_maps },
	    { "test_conformance_sandbox_view_is_minimal",
	      test_conformance_sandbox_view_is_minimal },
	    { "test_conformance_sandbox_probe_in_workers_view",
	      test_conformance_sandbox_probe_in_workers_view },
	    { "test_conformance_sandbox_script_gets_own_files",
	      test_conformance_sandbox_script_gets_own_files },
	    { NULL, NULL } });
	conf_register(&sipc__provider_sandbox, NULL);
	tl_suite("conformance_table", (tl_test[]){
	    { "test_conformance_table_local_sandbox",
	      test_conformance_table_local_sandbox },
	    { NULL, NULL } });
	rc = tl_run();
	conf_print_summary();
	return rc;
}

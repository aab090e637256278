/*
 * spawn_test.c - the reaper starts workers in parallel: one launch's
 * wait for its child to start does not hold back the next launch.
 *
 * In the namespace modes a launch waits for sipc-init to report that the
 * worker started.  Here sipc-init is reached through a wrapper that, on
 * start, leaves a marker file, waits (at most PEER_WAIT_S) until it sees
 * another wrapper's marker, notes whether it did, removes its own marker
 * and execs sipc-init.  Launched one after the other, no wrapper ever
 * sees another (each is gone before the next starts): every launch waits
 * out the whole PEER_WAIT_S and none notes a peer.  Launched together,
 * they see each other at once.  The proof is the notes, not a clock, so
 * a loaded machine or a sanitizer build slows it down but cannot fail
 * it.
 *
 * Threads: the CUnit thread only.  Waits are on events with generous
 * deadlines; the elapsed time is measured, never slept.
 */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rmtree.h"
#include "sipc.h"
#include "sipctest.h"
#include "testlib.h"

#define NWORKERS 16
#define PEER_WAIT_S 5
#define WAIT_MS 30000

static char *const echo_argv[] = { "echo", NULL };

/* Write dir/peer-init (the wrapper above); markers go to dir/m.
 * Returns 0 or -errno. */
static int
write_peer_init(const char *dir, char *path, size_t len)
{
	char init[4096], m[600];
	FILE *f;

	if (realpath(tl_init_path(), init) == NULL)
		return -errno;
	snprintf(m, sizeof(m), "%s/m", dir);
	if (mkdir(m, 0755) != 0)
		return -errno;
	snprintf(path, len, "%s/peer-init", dir);
	if ((f = fopen(path, "w")) == NULL)
		return -errno;
	fprintf(f, "#!/bin/sh\n"
	    "me=$(mktemp '%s/live.XXXXXX') || exit 1\n"
	    "i=0\n"
	    "while [ $(ls '%s' | grep -c '^live[.]') -lt 2 ] && "
	    "[ $i -lt %d ]; do sleep 0.1; i=$((i + 1)); done\n"
	    "[ $(ls '%s' | grep -c '^live[.]') -ge 2 ] && : > \"$me.peer\"\n"
	    "rm -f \"$me\"\n"
	    "exec '%s' \"$@\"\n", m, m, PEER_WAIT_S * 10, m, init);
	if (fclose(f) != 0 || chmod(path, 0755) != 0)
		return -errno;
	return 0;
}

/* How many wrappers saw a peer (their "<marker>.peer" files). */
static unsigned
peers_seen(const char *dir)
{
	char m[600];
	struct dirent *de;
	unsigned n = 0;
	size_t len;
	DIR *d;

	snprintf(m, sizeof(m), "%s/m", dir);
	if ((d = opendir(m)) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL)
		if ((len = strlen(de->d_name)) > 5 &&
		    strcmp(de->d_name + len - 5, ".peer") == 0)
			n++;
	closedir(d);
	return n;
}

static void
test_spawn_launches_overlap(void)
{
	char dir[] = "/tmp/sipc-spawn-XXXXXX", init[512];
	struct sipc_config c;
	sipc_supervisor *s;
	int64_t t0, elapsed;
	unsigned peers;
	int rc;

	if (st_skip_sandboxed("a custom sipc-init outside the sandbox view"))
		return;
	if (st_can_unshare(CLONE_NEWPID | CLONE_NEWNS) != 0) {
		tl_skip("no PID namespaces here (needs root)");
		return;
	}
	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	CU_ASSERT_FATAL(write_peer_init(dir, init, sizeof(init)) == 0);
	st_cfg_base(&c, "echo", echo_argv, NWORKERS);
	c.containment = SIPC_CONTAIN_PID_NAMESPACE;
	c.init_path = init;
	c.handshake_ms = WAIT_MS;
	t0 = tl_now_ms();
	s = st_start(&c, 0, 0);
	rc = sipc_wait_ready(s, NWORKERS, WAIT_MS);
	elapsed = tl_now_ms() - t0;
	CU_ASSERT_EQUAL(rc, 0);
	peers = peers_seen(dir);
	fprintf(stderr, "%d workers ready in %lld ms; %u launches saw "
	    "another one running\n", NWORKERS, (long long)elapsed, peers);
	/* launched together: at least two were in their wrappers at once */
	CU_ASSERT(peers >= 2);
	sipc_destroy(s);
	CU_ASSERT_EQUAL(rmtree(dir), 0);
}

static bool
all_exec_failed(const struct sipc_stats *st, void *arg)
{
	for (unsigned i = 0; i < st->nworkers; i++)
		if (st->workers[i].last_exit.kind != SIPC_EXIT_EXEC_FAILED ||
		    st->workers[i].last_exit.code != ENOEXEC)
			return false;
	return st->nworkers == *(unsigned *)arg;
}

/* Launches started together that all fail to exec: each is classified
 * on its own (EXEC_FAILED, ENOEXEC: an executable file in no format the
 * kernel runs), in the mode where the clone's own exec fails and in one
 * where sipc-init reports the worker's. */
static void
exec_failures_case(enum sipc_containment mode)
{
	char dir[] = "/tmp/sipc-spawn-XXXXXX", bin[512];
	char *const argv[] = { "noformat", NULL };
	struct sipc_config c;
	sipc_supervisor *s;
	unsigned n = 4;
	FILE *f;

	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	snprintf(bin, sizeof(bin), "%s/noformat", dir);
	CU_ASSERT_FATAL((f = fopen(bin, "w")) != NULL);
	fputs("\x01\x02 not a program\n", f);
	CU_ASSERT_FATAL(fclose(f) == 0 && chmod(bin, 0755) == 0);
	st_cfg_base(&c, "echo", argv, n);
	c.path = bin;
	c.containment = mode;
	s = st_start(&c, 0, 0);
	CU_ASSERT_EQUAL(sipc_wait_ready(s, n, WAIT_MS), SIPC_E_EXEC);
	CU_ASSERT(st_stats_wait(s, all_exec_failed, &n, WAIT_MS));
	sipc_destroy(s);
	CU_ASSERT_EQUAL(rmtree(dir), 0);
}

static void
test_spawn_exec_failures_process_group(void)
{
	exec_failures_case(SIPC_CONTAIN_PROCESS_GROUP);
}

static void
test_spawn_exec_failures_pid_namespace(void)
{
	if (st_can_unshare(CLONE_NEWPID | CLONE_NEWNS) != 0) {
		tl_skip("no PID namespaces here (needs root)");
		return;
	}
	exec_failures_case(SIPC_CONTAIN_PID_NAMESPACE);
}

int
main(void)
{
	st_no_core_files();
	tl_suite("spawn", (tl_test[]){
		{ "test_spawn_launches_overlap", test_spawn_launches_overlap },
		{ "test_spawn_exec_failures_process_group",
		  test_spawn_exec_failures_process_group },
		{ "test_spawn_exec_failures_pid_namespace",
		  test_spawn_exec_failures_pid_namespace },
		{ NULL, NULL },
	});
	return tl_run();
}

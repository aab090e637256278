/*
 * ident_test.c - process identity: /proc/<pid>/stat parsing with hostile
 * command names, identity proof of real processes (live, zombie, gone),
 * a REAL pid reuse inside a fresh PID namespace (ns_last_pid), and
 * termination of a proven leftover and its group with decoys that must
 * survive.  Needs root for the namespace test (CI runs as root).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "os/os.h"
#include "sipctest.h"
#include "testlib.h"

/* rules: I1 */
static void
test_ident_stat_parse_hostile_text(void)
{
	struct sipc__proc_stat st;
	const char *line = "4242 (a) (b c) S) R 17 4242 4242 0 -1 4194560 "
	    "1 2 3 4 5 6 7 8 20 -5 1 0 987654321 1000 10 rest";

	CU_ASSERT_EQUAL(sipc__proc_stat_parse(line, &st), 0);
	CU_ASSERT_EQUAL(st.state, 'R');
	CU_ASSERT_EQUAL(st.ppid, 17);
	CU_ASSERT_EQUAL(st.pgid, 4242);
	CU_ASSERT_EQUAL(st.starttime, 987654321ull);
	CU_ASSERT_EQUAL(st.cminflt, 2);
	CU_ASSERT_EQUAL(st.ticks, 5 + 6 + 7 + 8);
	CU_ASSERT_EQUAL(sipc__proc_stat_parse("12 (x) S 1 2", &st), -EINVAL);
	CU_ASSERT_EQUAL(sipc__proc_stat_parse("no parenthesis", &st), -EINVAL);
}

/* rules: I1 */
static void
test_ident_starttime_comm_with_parens(void)
{
	struct sipc__proc_stat st, me;
	pid_t pid = tl_spawn_idle(") (x) y", true);
	char path[64], buf[256];
	FILE *f;

	CU_ASSERT_FATAL(pid > 0);
	/* The name really is hostile. */
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	CU_ASSERT_PTR_NOT_NULL(fgets(buf, sizeof(buf), f));
	fclose(f);
	CU_ASSERT_STRING_EQUAL(buf, ") (x) y\n");
	CU_ASSERT_EQUAL(sipc__proc_stat(pid, &st), 0);
	CU_ASSERT_EQUAL(sipc__proc_stat(getpid(), &me), 0);
	CU_ASSERT_EQUAL(st.ppid, getpid());
	CU_ASSERT_EQUAL(st.pgid, pid);
	CU_ASSERT(st.state != '\0' && strchr("RSD", st.state) != NULL);
	CU_ASSERT(st.starttime >= me.starttime);
	tl_kill_reap(pid);
	CU_ASSERT_EQUAL(sipc__proc_starttime(pid, &st.starttime), -ESRCH);
}

static void
test_ident_boot_id_format(void)
{
	char b[SIPC__BOOT_ID_LEN + 1];

	CU_ASSERT_EQUAL_FATAL(sipc__boot_id(b), 0);
	CU_ASSERT_EQUAL(strlen(b), 36);
	CU_ASSERT(b[8] == '-' && b[13] == '-' && b[18] == '-' && b[23] == '-');
}

static void
test_ident_verify_live_child(void)
{
	struct sipc__ident rec, bad;
	pid_t pid = tl_spawn_idle(NULL, true);

	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_EQUAL_FATAL(sipc__ident_of(pid, &rec), 0);
	CU_ASSERT_EQUAL(rec.pgid, pid);
	CU_ASSERT_EQUAL(sipc__ident_verify(&rec), 1);
	bad = rec;
	bad.starttime++;
	CU_ASSERT_EQUAL(sipc__ident_verify(&bad), 0);
	bad = rec;
	bad.boot_id[0] = bad.boot_id[0] == '0' ? '1' : '0';
	CU_ASSERT_EQUAL(sipc__ident_verify(&bad), 0);
	bad = rec;
	bad.pgid = getpgrp();
	CU_ASSERT_EQUAL(sipc__ident_verify(&bad), 0);
	tl_kill_reap(pid);
	CU_ASSERT_EQUAL(sipc__ident_verify(&rec), 0);
}

static void
test_ident_verify_zombie_is_proven(void)
{
	struct sipc__ident rec;
	siginfo_t si;
	pid_t pid = tl_spawn_idle(NULL, true);

	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_EQUAL_FATAL(sipc__ident_of(pid, &rec), 0);
	kill(pid, SIGKILL);
	/* Wait for the exit without reaping: the zombie pins the pid. */
	CU_ASSERT_EQUAL(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
	CU_ASSERT_EQUAL(sipc__ident_verify(&rec), 1);
	tl_kill_reap(pid);
	CU_ASSERT_EQUAL(sipc__ident_verify(&rec), 0);
}

static void
test_ident_terminate_refuses_unproven(void)
{
	struct sipc__ident rec;
	pid_t pid = tl_spawn_idle(NULL, true);

	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_EQUAL_FATAL(sipc__ident_of(pid, &rec), 0);
	rec.starttime += 1;     /* as if the pid now named another process */
	CU_ASSERT_EQUAL(sipc__ident_terminate(&rec, 100), 0);
	CU_ASSERT(tl_pid_alive(pid));
	rec.starttime -= 1;
	tl_kill_reap(pid);
	/* Gone and reaped: nothing to prove, nothing signalled. */
	CU_ASSERT_EQUAL(sipc__ident_terminate(&rec, 100), 0);
}

/* ---------------------------------------------------- real pid reuse */

/* Runs as pid 1 of a fresh PID namespace with its own /proc.  Returns an
 * exit code: 0 ok, otherwise the step that failed. */
static int
reuse_in_namespace(void)
{
	struct sipc__ident rec, imp;
	struct timespec ts;
	pid_t a, b;
	char buf[32];
	int fd, n;

	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("proc", "/proc", "proc", 0, NULL) < 0)
		return 2;
	if ((a = tl_spawn_idle(NULL, true)) < 0)
		return 3;
	if (sipc__ident_of(a, &rec) < 0 || rec.pgid != a)
		return 4;
	tl_kill_reap(a);
	/* The impostor must start in a later clock tick than the victim,
	 * else start times (10 ms granularity) cannot tell them apart. */
	do {
		clock_gettime(CLOCK_BOOTTIME, &ts);
		usleep(1000);
	} while ((uint64_t)ts.tv_sec * 100 + (uint64_t)ts.tv_nsec / 10000000 <=
	    rec.starttime + 1);
	if ((fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY)) < 0)
		return 5;
	n = snprintf(buf, sizeof(buf), "%d", (int)a - 1);
	if (write(fd, buf, (size_t)n) != n)
		return 6;
	close(fd);
	if ((b = tl_spawn_idle("impostor", true)) != a)
		return 7;         /* the pid was not reused */
	if (sipc__ident_verify(&rec) != 0)
		return 8;         /* reused pid must not be proven */
	if (sipc__ident_terminate(&rec, 100) != 0)
		return 9;         /* nor terminated */
	if (waitpid(b, NULL, WNOHANG) != 0 || kill(b, 0) != 0)
		return 10;        /* the impostor must be alive */
	if (sipc__ident_of(b, &imp) < 0 || sipc__ident_verify(&imp) != 1)
		return 11;        /* positive control */
	tl_kill_reap(b);
	return 0;
}

static void
test_ident_pid_reuse_not_proven(void)
{
	pid_t t;
	int st;

	if (st_can_unshare(CLONE_NEWPID | CLONE_NEWNS) < 0) {
		tl_skip("pid reuse: cannot create PID and mount namespaces");
		return;
	}
	if ((t = fork()) == 0) {
		pid_t init;
		int ist;

		if (unshare(CLONE_NEWPID | CLONE_NEWNS) < 0)
			_exit(1);
		if ((init = fork()) == 0)
			_exit(reuse_in_namespace());
		if (init < 0 || waitpid(init, &ist, 0) != init)
			_exit(20);
		_exit(WIFEXITED(ist) ? WEXITSTATUS(ist) : 21);
	}
	CU_ASSERT_FATAL(t > 0);
	CU_ASSERT_EQUAL_FATAL(waitpid(t, &st, 0), t);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fprintf(stderr, "pid reuse drill failed at step %d "
		    "(1 = no PID namespace: needs root)\n",
		    WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* ------------------------------------------ terminate a real leftover */

static void
test_ident_terminate_leftover_and_group(void)
{
	pid_t decoy, mid, pids[2] = { 0, 0 };
	struct sipc__ident rec;
	int p[2], st;
	int64_t t0;

	/* A decoy in its own group, started by the test: must survive. */
	decoy = tl_spawn_idle("decoy", true);
	CU_ASSERT_FATAL(decoy > 0);
	CU_ASSERT_FATAL(pipe2(p, O_CLOEXEC) == 0);
	/* mid forks the leader and exits, so the leader is reparented: like
	 * a worker left behind by a dead supervisor, not our child. */
	if ((mid = fork()) == 0) {
		pid_t l = fork();

		if (l == 0) {
			pid_t m;

			setpgid(0, 0);
			if ((m = fork()) == 0) {
				/* Group member that ignores SIGTERM: needs
				 * the SIGKILL round. */
				struct sigaction ign = { .sa_handler = SIG_IGN };

				sigaction(SIGTERM, &ign, NULL);
				(void)!write(p[1], &(pid_t){ getpid() }, sizeof(pid_t));
				for (;;)
					pause();
			}
			(void)!write(p[1], &(pid_t){ getpid() }, sizeof(pid_t));
			for (;;)
				pause();
		}
		_exit(l > 0 ? 0 : 1);
	}
	close(p[1]);
	CU_ASSERT_EQUAL_FATAL(waitpid(mid, &st, 0), mid);
	CU_ASSERT_FATAL(read(p[0], &pids[0], sizeof(pid_t)) == sizeof(pid_t));
	CU_ASSERT_FATAL(read(p[0], &pids[1], sizeof(pid_t)) == sizeof(pid_t));
	close(p[0]);
	/* Whichever wrote first, the leader is the one leading its group. */
	if (getpgid(pids[1]) == pids[1]) {
		pid_t x = pids[0];

		pids[0] = pids[1];
		pids[1] = x;
	}
	CU_ASSERT_EQUAL_FATAL(sipc__ident_of(pids[0], &rec), 0);
	CU_ASSERT_EQUAL_FATAL(rec.pgid, pids[0]);
	CU_ASSERT_EQUAL(getpgid(pids[1]), pids[0]);
	t0 = tl_now_ms();
	CU_ASSERT_EQUAL(sipc__ident_terminate(&rec, 300), 1);
	/* The member ignored SIGTERM, so the grace was used. */
	CU_ASSERT(tl_now_ms() - t0 >= 250);
	CU_ASSERT(tl_wait_until(st_pid_dead, &pids[0], 10000));
	CU_ASSERT(tl_wait_until(st_pid_dead, &pids[1], 10000));
	CU_ASSERT(tl_pid_alive(decoy));
	CU_ASSERT(tl_pid_alive(getpid()));
	tl_kill_reap(decoy);
}

/* The local provider's opaque identity: this process's own facts go
 * through the bytes and back unchanged; a wrong length is refused. */
static void
test_ident_local_id_roundtrip(void)
{
	struct sipc__ident k, back;
	struct sipc_provider_id id;

	CU_ASSERT_EQUAL_FATAL(sipc__ident_of(getpid(), &k), 0);
	sipc__ident_to_id(&k, &id);
	CU_ASSERT_EQUAL(id.len, SIPC__LOCAL_ID_LEN);
	CU_ASSERT_EQUAL_FATAL(sipc__ident_from_id(&id, &back), 0);
	CU_ASSERT_EQUAL(back.pid, k.pid);
	CU_ASSERT_EQUAL(back.pgid, k.pgid);
	CU_ASSERT_EQUAL(back.starttime, k.starttime);
	CU_ASSERT_STRING_EQUAL(back.boot_id, k.boot_id);
	CU_ASSERT_EQUAL(sipc__ident_verify(&back), 1);
	/* little-endian on the wire whatever the host */
	CU_ASSERT_EQUAL(id.bytes[0], (uint8_t)k.pid);
	id.len--;
	CU_ASSERT_EQUAL(sipc__ident_from_id(&id, &back), -EINVAL);
}

int
main(void)
{
	tl_suite("ident", (tl_test[]){
	    { "test_ident_stat_parse_hostile_text", test_ident_stat_parse_hostile_text },
	    { "test_ident_starttime_comm_with_parens", test_ident_starttime_comm_with_parens },
	    { "test_ident_boot_id_format", test_ident_boot_id_format },
	    { "test_ident_verify_live_child", test_ident_verify_live_child },
	    { "test_ident_verify_zombie_is_proven", test_ident_verify_zombie_is_proven },
	    { "test_ident_terminate_refuses_unproven", test_ident_terminate_refuses_unproven },
	    { "test_ident_pid_reuse_not_proven", test_ident_pid_reuse_not_proven },
	    { "test_ident_terminate_leftover_and_group", test_ident_terminate_leftover_and_group },
	    { "test_ident_local_id_roundtrip", test_ident_local_id_roundtrip },
	    { NULL, NULL } });
	return tl_run();
}

/*
 * conformance.c - the provider contract as an executable suite (see
 * conformance.h): the functional rules, one CUnit test each, run
 * through driver.h against whatever provider conf_register() was given.
 * The isolation rules live in isolation.c.
 *
 * Threads: the CUnit thread only.  No locks.  The pid-reuse part of the
 * identity rule forks a helper whose child runs as pid 1 of a new PID
 * namespace and reports through its exit status.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conformance.h"
#include "driver.h"
#include "sipctest.h"
#include "testlib.h"

/* ------------------------------------------------------------- rules */

/* rules: F2 */
static void
test_conformance_framing(void)
{
	static uint8_t big[65536], all[256], tricky[64];
	struct { const uint8_t *p; uint32_t len; } pl[] = {
		{ (const uint8_t *)"", 0 }, { (const uint8_t *)"\n", 1 },
		{ (const uint8_t *)"\0", 1 }, { all, sizeof(all) },
		{ tricky, sizeof(tricky) }, { big, sizeof(big) },
	};
	enum { N = sizeof(pl) / sizeof(pl[0]) };
	struct cw_base b = cw_base_take();
	struct sipc_hello hello;
	struct sipc_frame f;
	bool seen[N + 1] = { false };
	uint8_t *wire;
	size_t off = 0, i;
	struct cw w;

	for (i = 0; i < sizeof(all); i++)
		all[i] = (uint8_t)i;
	for (i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7 + 3);
	/* A payload holding a whole valid frame header and newlines. */
	cw_frame_put(tricky, SIPC_FT_REPLY, 101, NULL, 0);
	memcpy(tricky + SIPC_FRAME_HDR_LEN, "\n\n\0\0SIPC\r\n", 10);
	CU_ASSERT_EQUAL_FATAL(cw_launch(&w, "echo", NULL, NULL), 0);
	CU_ASSERT_EQUAL(cw_hello(&w, &hello), 0);
	/* Every request in one write: the stream has no boundaries. */
	wire = malloc(N * SIPC_FRAME_HDR_LEN + sizeof(big) + 1024);
	CU_ASSERT_FATAL(wire != NULL);
	for (i = 0; i < N; i++) {
		cw_frame_put(wire + off, SIPC_FT_REQUEST, 100 + i, pl[i].p,
		    pl[i].len);
		off += SIPC_FRAME_HDR_LEN + pl[i].len;
	}
	CU_ASSERT_EQUAL(cw_write_all(w.ch.proto_fd, wire, off), 0);
	/* And one frame dribbled a byte at a time. */
	cw_frame_put(wire, SIPC_FT_REQUEST, 100 + N, all, 32);
	for (i = 0; i < SIPC_FRAME_HDR_LEN + 32; i++)
		CU_ASSERT_EQUAL(cw_write_all(w.ch.proto_fd, wire + i, 1), 0);
	for (i = 0; i <= N; i++) {
		CU_ASSERT_EQUAL_FATAL(cw_reply(&w, DEADLINE_MS, &f), 1);
		CU_ASSERT_EQUAL(f.hdr.type, SIPC_FT_REPLY);
		if (f.hdr.id >= 100 && f.hdr.id <= 100 + N &&
		    !seen[f.hdr.id - 100]) {
			size_t k = f.hdr.id - 100;
			const uint8_t *want = k < N ? pl[k].p : all;
			uint32_t wlen = k < N ? pl[k].len : 32;

			seen[k] = true;
			CU_ASSERT_EQUAL(f.hdr.len, wlen);
			CU_ASSERT(f.hdr.len != wlen ||
			    memcmp(f.payload ? f.payload : (uint8_t *)"", want,
			    wlen) == 0);
		} else {
			CU_FAIL("reply with an unexpected or repeated id");
		}
		free(f.payload);
	}
	free(wire);
	cw_finish(&w);
	cw_base_check(b);
}

/* rules: H1 */
static void
test_conformance_handshake(void)
{
	struct cw_base b = cw_base_take();
	struct sipc_hello hello;
	struct sipc_frame f;
	struct cw w;

	CU_ASSERT_EQUAL_FATAL(cw_launch(&w, "echo", NULL, NULL), 0);
	/* The very first frame, before any request, is HELLO. */
	CU_ASSERT_EQUAL_FATAL(cw_frame(&w, DEADLINE_MS, &f), 1);
	CU_ASSERT_EQUAL(f.hdr.type, SIPC_FT_HELLO);
	CU_ASSERT_EQUAL(f.hdr.version, SIPC_FRAME_VERSION);
	CU_ASSERT_EQUAL(f.hdr.id, 0);
	CU_ASSERT_EQUAL(f.hdr.len, SIPC_HELLO_LEN);
	CU_ASSERT_EQUAL(sipc__hello_decode(f.payload, f.hdr.len, &hello), 0);
	free(f.payload);
	CU_ASSERT_EQUAL(hello.proto_version, SIPC_PROTOCOL_VERSION);
	CU_ASSERT_EQUAL(hello.flags & ~(SIPC_HELLO_F_ACCEPTS |
	    SIPC_HELLO_F_START_COUNTER | SIPC_HELLO_F_DEADLINES |
	    SIPC_HELLO_F_FDS), 0);
	/* Ready means ready: a request right after HELLO is served. */
	CU_ASSERT_EQUAL(cw_roundtrip(&w, 9, "ready?", 6, &f), 0);
	free(f.payload);
	cw_finish(&w);
	cw_base_check(b);
}

/* rules: C2 */
static void
test_conformance_correlation(void)
{
	enum { N = 64 };
	struct cw_base b = cw_base_take();
	struct sipc_hello hello;
	struct sipc_frame f;
	uint8_t *wire, pay[N][80];
	uint32_t plen[N];
	bool seen[N] = { false }, reordered = false;
	size_t off = 0, i, k;
	struct cw w;

	CU_ASSERT_EQUAL_FATAL(cw_launch(&w, "reorder", "42", NULL), 0);
	CU_ASSERT_EQUAL(cw_hello(&w, &hello), 0);
	wire = malloc(N * (SIPC_FRAME_HDR_LEN + sizeof(pay[0])));
	CU_ASSERT_FATAL(wire != NULL);
	for (i = 0; i < N; i++) {
		plen[i] = (uint32_t)snprintf((char *)pay[i], sizeof(pay[i]),
		    "request %zu of %d\n%c", i, N, 0) + (uint32_t)(i % 7);
		/* ids are sparse and not in payload order */
		cw_frame_put(wire + off, SIPC_FT_REQUEST, 1000 + 3 * i, pay[i],
		    plen[i]);
		off += SIPC_FRAME_HDR_LEN + plen[i];
	}
	CU_ASSERT_EQUAL(cw_write_all(w.ch.proto_fd, wire, off), 0);
	free(wire);
	for (i = 0; i < N; i++) {
		CU_ASSERT_EQUAL_FATAL(cw_reply(&w, DEADLINE_MS, &f), 1);
		k = (size_t)((f.hdr.id - 1000) / 3);
		if (f.hdr.type != SIPC_FT_REPLY || f.hdr.id < 1000 ||
		    (f.hdr.id - 1000) % 3 != 0 || k >= N || seen[k]) {
			CU_FAIL("reply to an id never sent, or twice");
		} else {
			seen[k] = true;
			reordered |= k != i;
			CU_ASSERT_EQUAL(f.hdr.len, plen[k]);
			CU_ASSERT(f.hdr.len == plen[k] &&
			    memcmp(f.payload, pay[k], plen[k]) == 0);
		}
		free(f.payload);
	}
	/* The fixture's point: replies really came back out of order. */
	CU_ASSERT_TRUE(reordered);
	cw_finish(&w);
	cw_base_check(b);
}

/* rules: D1 */
static void
test_conformance_descriptor_hygiene(void)
{
	struct cw_base b = cw_base_take();
	struct sipc_hello hello;
	struct sipc_frame f;
	int leak = -1, lp[2] = { -1, -1 };
	char *text, *nl;
	struct cw w;

	/* Host descriptors opened WITHOUT close-on-exec must not cross. */
	leak = open("/dev/null", O_RDONLY);
	CU_ASSERT_FATAL(leak >= 0 && pipe(lp) == 0);
	CU_ASSERT_EQUAL_FATAL(cw_launch(&w, "fdprobe", NULL, NULL), 0);
	CU_ASSERT_EQUAL(cw_hello(&w, &hello), 0);
	CU_ASSERT_EQUAL_FATAL(cw_roundtrip(&w, 5, "?", 1, &f), 0);
	text = calloc(1, f.hdr.len + 1);
	CU_ASSERT_FATAL(text != NULL);
	memcpy(text, f.payload, f.hdr.len);
	free(f.payload);
	nl = strchr(text, '\n');
	CU_ASSERT_FATAL(nl != NULL);
	*nl = '\0';
	CU_ASSERT_STRING_EQUAL(text, "0 1 2 3");
	CU_ASSERT_PTR_NOT_NULL(strstr(nl + 1, "0=/dev/null"));
	CU_ASSERT_PTR_NOT_NULL(strstr(nl + 1, "3=socket:"));
	if (strcmp(text, "0 1 2 3") != 0)
		fprintf(stderr, "conformance: worker descriptors: %s | %s\n",
		    text, nl + 1);
	free(text);
	cw_finish(&w);
	close(leak);
	close(lp[0]);
	close(lp[1]);
	cw_base_check(b);
}

/* rules: D2 G1 H1 */
static void
test_conformance_diagnostics_separation(void)
{
	struct cw_base b = cw_base_take();
	uint8_t fake[SIPC_FRAME_HDR_LEN];
	struct sipc_hello hello;
	struct sipc_frame f;
	unsigned replies = 0;
	struct cw w;
	int r;

	CU_ASSERT_EQUAL_FATAL(cw_launch(&w, "chatty", "3", NULL), 0);
	/* chatty spams both streams before its HELLO; HELLO still comes
	 * first on the protocol channel. */
	CU_ASSERT_EQUAL(cw_hello(&w, &hello), 0);
	CU_ASSERT_EQUAL(cw_send(&w, 500, "one", 3), 0);
	CU_ASSERT_EQUAL(cw_send(&w, 501, "two", 3), 0);
	while (replies < 2 && (r = cw_frame(&w, DEADLINE_MS, &f)) == 1) {
		/* chatty writes a REPLY header for id 1 to stdout/stderr: it
		 * must never surface here. */
		CU_ASSERT(f.hdr.id == 500 || f.hdr.id == 501);
		CU_ASSERT(f.hdr.type == SIPC_FT_ACCEPT ||
		    f.hdr.type == SIPC_FT_REPLY ||
		    f.hdr.type == SIPC_FT_HEARTBEAT);
		if (f.hdr.type == SIPC_FT_REPLY) {
			replies++;
			CU_ASSERT(f.hdr.len == 3 && memcmp(f.payload,
			    f.hdr.id == 500 ? "one" : "two", 3) == 0);
		}
		free(f.payload);
	}
	CU_ASSERT_EQUAL(replies, 2);
	/* Everything chatty wrote arrives on the diagnostics channel, raw
	 * (escaping is the core's job, not the provider's). */
	CU_ASSERT_TRUE(cw_wait_diag(&w, "burst 2", DEADLINE_MS));
	CU_ASSERT_TRUE(cw_wait_diag(&w, "spam 2 2\n", DEADLINE_MS));
	cw_frame_put(fake, SIPC_FT_REPLY, 1, NULL, 0);
	CU_ASSERT_TRUE(cw_diag_has(&w, fake, sizeof(fake)));
	CU_ASSERT_TRUE(cw_diag_has(&w, "\033[31m", 5));
	cw_finish(&w);
	cw_base_check(b);
}

/*
 * T1: signal_tree ends the worker's whole tree and nothing else.  Three
 * decoys started by the suite (one in its own process group, one in a
 * group of its own, one in a session of its own) must be alive and not
 * even stopped after every TERM and KILL below.
 */
/* rules: T1 T3 */
static void
test_conformance_termination(void)
{
	struct st_decoys d;
	struct cw_base b;
	struct sipc_hello hello;
	struct sipc_frame f;
	long long leader = 0, grp = 0, dmn = 0, esc = -1;
	struct cw w;

	st_decoys_start(&d);
	b = cw_base_take();
	/* TERM ends a worker that does not ignore it. */
	CU_ASSERT_EQUAL_FATAL(cw_launch(&w, "echo", NULL, NULL), 0);
	CU_ASSERT_EQUAL(cw_hello(&w, &hello), 0);
	CU_ASSERT_EQUAL(conf_prov->stop(w.h, SIPC_STOP_GRACEFUL), 0);
	CU_ASSERT_EQUAL(cw_wait_end(&w, DEADLINE_MS), 1);
	CU_ASSERT_EQUAL(w.exit.kind, SIPC_EXIT_SIGNAL);
	CU_ASSERT_EQUAL(w.exit.signo, SIGTERM);
	cw_finish(&w);
	st_decoys_check(&d);

	/* A worker ignoring TERM survives it (it still answers after the
	 * signal was sent) and needs KILL. */
	CU_ASSERT_EQUAL_FATAL(cw_launch(&w, "ignoreterm", NULL, NULL), 0);
	CU_ASSERT_EQUAL(cw_hello(&w, &hello), 0);
	CU_ASSERT_EQUAL(conf_prov->stop(w.h, SIPC_STOP_GRACEFUL), 0);
	CU_ASSERT_EQUAL(cw_roundtrip(&w, 2, "still here", 10, &f), 0);
	free(f.payload);
	CU_ASSERT_EQUAL(conf_prov->try_end(w.h, &w.exit), 0);
	CU_ASSERT_EQUAL(conf_prov->stop(w.h, SIPC_STOP_FORCED), 0);
	CU_ASSERT_EQUAL(cw_wait_end(&w, DEADLINE_MS), 1);
	CU_ASSERT_EQUAL(w.exit.kind, SIPC_EXIT_SIGNAL);
	CU_ASSERT_EQUAL(w.exit.signo, SIGKILL);
	cw_finish(&w);
	st_decoys_check(&d);

	/* The whole tree goes: a child in the group and a double-forked
	 * daemon that kept the group. */
	CU_ASSERT_EQUAL_FATAL(cw_launch(&w, "forker", NULL, NULL), 0);
	CU_ASSERT_EQUAL(cw_hello(&w, &hello), 0);
	CU_ASSERT_EQUAL_FATAL(cw_roundtrip(&w, 3, "pids", 4, &f), 0);
	{
		char text[200];

		snprintf(text, sizeof(text), "%.*s", (int)f.hdr.len,
		    (char *)f.payload);
		CU_ASSERT_EQUAL(sscanf(text, "leader=%lld group=%lld "
		    "daemon=%lld escapee=%lld", &leader, &grp, &dmn, &esc), 4);
	}
	free(f.payload);
	CU_ASSERT_EQUAL(conf_prov->stop(w.h, SIPC_STOP_GRACEFUL), 0);
	CU_ASSERT_EQUAL(cw_wait_end(&w, DEADLINE_MS), 1);
	if (cw_same_pid_view() && grp > 0 && dmn > 0) {
		int64_t end = tl_now_ms() + DEADLINE_MS;

		while ((tl_pid_alive((int)grp) || tl_pid_alive((int)dmn)) &&
		    tl_now_ms() < end)
			usleep(2000);
		CU_ASSERT_FALSE(tl_pid_alive((int)grp));
		CU_ASSERT_FALSE(tl_pid_alive((int)dmn));
	}
	cw_finish(&w);
	cw_base_check(b);
	st_decoys_stop(&d);
}

/* Launch, optionally send one request, and wait for the end. */
static void
expect_end(const char *name, const char *a1, const char *a2, bool send,
           enum sipc_exit_kind kind, int code, int signo)
{
	struct sipc_hello hello;
	struct cw w;

	CU_ASSERT_EQUAL_FATAL(cw_launch(&w, name, a1, a2), 0);
	if (send) {
		CU_ASSERT_EQUAL(cw_hello(&w, &hello), 0);
		CU_ASSERT_EQUAL(cw_send(&w, 77, "x", 1), 0);
	}
	CU_ASSERT_EQUAL(cw_wait_end(&w, DEADLINE_MS), 1);
	CU_ASSERT_EQUAL(w.exit.kind, kind);
	if (kind == SIPC_EXIT_SIGNAL)
		CU_ASSERT_EQUAL(w.exit.signo, signo);
	if (kind == SIPC_EXIT_CODE || kind == SIPC_EXIT_CLEAN)
		CU_ASSERT_EQUAL(w.exit.code, code);
	if (w.exit.kind != kind)
		fprintf(stderr, "conformance: %s %s: exit kind %d code %d "
		    "signo %d\n", name, a1 ? a1 : "", w.exit.kind, w.exit.code,
		    w.exit.signo);
	cw_finish(&w);
}

/* rules: D4 E1 */
static void
test_conformance_exit_classification(void)
{
	struct cw_base b = cw_base_take();
	struct sipc_hello hello;
	struct sipc_frame f;
	char tmp[] = "/tmp/sipc-conf-noexec-XXXXXX";
	int eno = 0, fd;
	struct cw w;

	expect_end("crash", "abort", "0", true, SIPC_EXIT_SIGNAL, 0, SIGABRT);
	expect_end("crash", "segv", "0", true, SIPC_EXIT_SIGNAL, 0, SIGSEGV);
	expect_end("crash", "exit3", "0", true, SIPC_EXIT_CODE, 3, 0);
	expect_end("dieatstart", NULL, NULL, false, SIPC_EXIT_CODE, 7, 0);

	/* No HELLO from a worker that dies at start: the channel just ends. */
	CU_ASSERT_EQUAL_FATAL(cw_launch(&w, "dieatstart", NULL, NULL), 0);
	CU_ASSERT_EQUAL(cw_frame(&w, DEADLINE_MS, &f), -EPIPE);
	cw_finish(&w);

	/* Closing the channel lets a worker finish cleanly. */
	CU_ASSERT_EQUAL_FATAL(cw_launch(&w, "echo", NULL, NULL), 0);
	CU_ASSERT_EQUAL(cw_hello(&w, &hello), 0);
	close(w.ch.proto_fd);
	w.ch.proto_fd = -1;
	CU_ASSERT_EQUAL(cw_wait_end(&w, DEADLINE_MS), 1);
	CU_ASSERT_EQUAL(w.exit.kind, SIPC_EXIT_CLEAN);
	CU_ASSERT_EQUAL(w.exit.code, 0);
	cw_finish(&w);

	/* Exec failures are reported as such, leaving nothing behind. */
	CU_ASSERT_EQUAL(cw_launch_path(&w, "/nonexistent/sipc-worker", NULL,
	    NULL, NULL, &eno), SIPC_E_EXEC);
	CU_ASSERT_EQUAL(eno, ENOENT);
	cw_finish(&w);
	fd = mkstemp(tmp);
	CU_ASSERT_FATAL(fd >= 0);
	close(fd);
	eno = 0;
	CU_ASSERT_EQUAL(cw_launch_path(&w, tmp, NULL, NULL, NULL, &eno),
	    SIPC_E_EXEC);
	CU_ASSERT_EQUAL(eno, EACCES);
	cw_finish(&w);
	unlink(tmp);
	cw_base_check(b);
}

/*
 * Runs as pid 1 of a fresh PID namespace, so pids are deterministic:
 * the worker gets pid 2; once it has ended and been released by
 * try_end, ns_last_pid = 1 makes the next fork (a decoy that also takes
 * process group 2) reuse both its pid and its group id.  Signalling the
 * ended handle must not reach the decoy.  Exit status: 0 ok, 10+ which
 * step failed.
 */
static int
reuse_probe(void)
{
	struct sipc_hello hello;
	int a[2], c[2], fd, st;
	pid_t old, decoy;
	struct cw w;
	char ch = 'x';

	if (cw_launch(&w, "echo", NULL, NULL) < 0 || cw_hello(&w, &hello) < 0)
		return 10;
	old = w.ch.display_pid;
	if (conf_prov->stop(w.h, SIPC_STOP_FORCED) < 0 ||
	    cw_wait_end(&w, DEADLINE_MS) != 1)
		return 11;
	if ((fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY)) < 0 ||
	    dprintf(fd, "%d", (int)old - 1) < 0 || close(fd) < 0 ||
	    pipe(a) < 0 || pipe(c) < 0)
		return 12;
	if ((decoy = fork()) == 0) {
		setpgid(0, 0);
		while (read(a[0], &ch, 1) == 1 && write(c[1], &ch, 1) == 1)
			;
		_exit(0);
	}
	if (decoy < 0)
		return 13;
	(void)setpgid(decoy, decoy);
	if (decoy != old)
		return 14;
	if (conf_prov->try_end(w.h, &w.exit) != 1 ||
	    conf_prov->stop(w.h, SIPC_STOP_GRACEFUL) != 0 ||
	    conf_prov->stop(w.h, SIPC_STOP_FORCED) != 0)
		return 15;
	/* A round trip after the signals: a decoy hit by TERM or KILL
	 * could not answer. */
	close(a[0]);
	close(c[1]);
	if (write(a[1], &ch, 1) != 1 ||
	    poll(&(struct pollfd){ .fd = c[0], .events = POLLIN }, 1,
	    DEADLINE_MS) != 1 || read(c[0], &ch, 1) != 1)
		return 16;
	if (waitpid(decoy, &st, WNOHANG) != 0)
		return 17;
	kill(decoy, SIGKILL);
	waitpid(decoy, &st, 0);
	cw_finish(&w);
	return 0;
}

/* waitpid with a deadline; false on timeout. */
static bool
wait_child(pid_t pid, int *st, int timeout_ms)
{
	int64_t end = tl_now_ms() + timeout_ms;
	pid_t r;

	while ((r = waitpid(pid, st, WNOHANG)) == 0 && tl_now_ms() < end)
		usleep(2000);
	return r == pid;
}

/* rules: D5 H4 I1 I3 SB3 PB10 */
static void
test_conformance_identity(void)
{
	struct cw_base b = cw_base_take();
	struct sipc_hello hello;
	struct sipc_frame f;
	pid_t helper;
	struct cw w;
	int st = 0;

	CU_ASSERT_EQUAL_FATAL(cw_launch(&w, "echo", NULL, NULL), 0);
	CU_ASSERT_EQUAL(cw_hello(&w, &hello), 0);
	CU_ASSERT(w.ch.display_pid > 0);
	if (cw_same_pid_view()) {
		/* chan.pid is the process that sent HELLO. */
		CU_ASSERT_EQUAL((pid_t)hello.pid, w.ch.display_pid);
		CU_ASSERT_EQUAL(getpgid(w.ch.display_pid), w.ch.display_pid);
	}
	CU_ASSERT_EQUAL(cw_roundtrip(&w, 1, "\0CMDpid", 7, &f), 0);
	if (cw_same_pid_view()) {
		char text[32];

		snprintf(text, sizeof(text), "%.*s", (int)f.hdr.len,
		    (char *)f.payload);
		CU_ASSERT_EQUAL(atoi(text), w.ch.display_pid);
	}
	free(f.payload);
	CU_ASSERT_EQUAL(conf_prov->stop(w.h, SIPC_STOP_FORCED), 0);
	CU_ASSERT_EQUAL(cw_wait_end(&w, DEADLINE_MS), 1);
	/* After the end: try_end stays 1, signal_tree is a no-op. */
	CU_ASSERT_EQUAL(conf_prov->try_end(w.h, &w.exit), 1);
	CU_ASSERT_EQUAL(conf_prov->stop(w.h, SIPC_STOP_GRACEFUL), 0);
	CU_ASSERT_EQUAL(conf_prov->stop(w.h, SIPC_STOP_FORCED), 0);
	cw_finish(&w);

	/* The same after a real reuse of the pid and group id, which needs
	 * a PID namespace (root here; CI runs as root). */
	if (st_can_unshare(CLONE_NEWPID | CLONE_NEWNS) < 0) {
		cw_base_check(b);
		tl_skip("I3 pid reuse: cannot create a PID namespace");
		return;
	}
	fflush(NULL);
	helper = fork();
	CU_ASSERT_FATAL(helper >= 0);
	if (helper == 0) {
		pid_t init;

		if (unshare(CLONE_NEWPID | CLONE_NEWNS) < 0)
			_exit(20);
		if ((init = fork()) == 0) {
			/* Dies with the helper (a KILL from the parent
			 * namespace reaches a namespace's init). */
			if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
				_exit(23);
			/* A /proc of this namespace: a provider that proves
			 * identities through /proc sees the pids it gets. */
			if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE,
			    NULL) < 0 || mount("proc", "/proc", "proc",
			    MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
				_exit(24);
			_exit(reuse_probe());
		}
		if (init < 0 || waitpid(init, &st, 0) != init)
			_exit(21);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 22);
	}
	if (!wait_child(helper, &st, 3 * DEADLINE_MS)) {
		kill(helper, SIGKILL);
		waitpid(helper, &st, 0);
	}
	CU_ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fprintf(stderr, "conformance: identity: pid-reuse probe "
		    "failed at step %d (status %#x)\n", WEXITSTATUS(st), st);
	cw_base_check(b);
}

/* --------------------------------------------------------- register */

void
conf_register(const struct sipc_provider_ops *p, void *prov_state)
{
	static const tl_test functional[] = {
		{ "test_conformance_framing", test_conformance_framing },
		{ "test_conformance_handshake", test_conformance_handshake },
		{ "test_conformance_correlation",
		    test_conformance_correlation },
		{ "test_conformance_descriptor_hygiene",
		    test_conformance_descriptor_hygiene },
		{ "test_conformance_diagnostics_separation",
		    test_conformance_diagnostics_separation },
		{ "test_conformance_termination",
		    test_conformance_termination },
		{ "test_conformance_exit_classification",
		    test_conformance_exit_classification },
		{ "test_conformance_identity", test_conformance_identity },
		{ NULL, NULL },
	};

	conf_prov = p;
	conf_prov_state = prov_state;
	tl_suite("conformance", functional);
	conf_isolation_register(p);
}

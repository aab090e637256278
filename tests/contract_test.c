/*
 * contract_test.c - the rules of CONTRACT.md that no other test binary
 * covers: violations a worker can commit after its handshake (short
 * ERROR, frame types only the supervisor sends, ACCEPTs not owed, flag
 * bits, a reply to another worker's request), the silent drop of a late
 * reply, what a worker inherits (signal mask and dispositions,
 * RLIMIT_NPROC), diagnostics tags, callbacks that call back into the
 * library, the host's SIGCHLD and subreaper settings, the destroy time
 * bound, and why sipc_wait_ready() fails.
 *
 * Threads: the CUnit thread drives every test; completion and log
 * callbacks run on library threads and touch only the mutex-guarded or
 * atomic captures below.  The SIGCHLD tests start one host thread of
 * their own.  Waits are on events with generous deadlines; nothing
 * sleeps a fixed time to make an assertion true.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wire/wire.h"
#include "sipc.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 10000           /* generous deadline for any event */

/* ------------------------------------------------------------ log capture */

struct logent {
	enum sipc_log_level lvl;
	uint32_t wid, gen;
	pid_t pid;
	char msg[160];
};

static struct {
	pthread_mutex_t mu;
	struct logent e[2048];
	unsigned n;
} logcap = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void
log_fn(void *arg, enum sipc_log_level lvl, uint32_t wid, uint32_t gen,
       pid_t pid, const char *msg)
{
	pthread_mutex_lock(&logcap.mu);
	if (logcap.n < sizeof(logcap.e) / sizeof(logcap.e[0])) {
		struct logent *e = &logcap.e[logcap.n++];

		e->lvl = lvl;
		e->wid = wid;
		e->gen = gen;
		e->pid = pid;
		snprintf(e->msg, sizeof(e->msg), "%s", msg);
	}
	pthread_mutex_unlock(&logcap.mu);
}

static void
log_reset(void)
{
	pthread_mutex_lock(&logcap.mu);
	logcap.n = 0;
	pthread_mutex_unlock(&logcap.mu);
}

/* Copy the first entry whose message contains `needle`. */
static bool
log_find(const char *needle, struct logent *ret)
{
	bool found = false;

	pthread_mutex_lock(&logcap.mu);
	for (unsigned i = 0; i < logcap.n && !found; i++)
		if (strstr(logcap.e[i].msg, needle) != NULL) {
			if (ret != NULL)
				*ret = logcap.e[i];
			found = true;
		}
	pthread_mutex_unlock(&logcap.mu);
	return found;
}

static bool
log_has_cb(void *arg)
{
	return log_find(arg, NULL);
}

/* ------------------------------------------------------------ helpers */

/* The shared short-timing base, with the library's own cancel grace
 * and this file's structured log capture. */
static void
cfg_base(struct sipc_config *c, const char *fixture, char *const *argv,
         unsigned workers)
{
	struct sipc_config d;

	sipc_config_init(&d);
	st_cfg_base(c, fixture, argv, workers);
	c->cancel_grace_ms = d.cancel_grace_ms;
	c->log = log_fn;
}

static sipc_supervisor *
start(const struct sipc_config *c, unsigned ready)
{
	log_reset();
	return st_start(c, ready, WAIT_MS);
}

static void
call_str(sipc_supervisor *s, const char *p, unsigned timeout_ms,
         struct sipc_result *r)
{
	struct sipc_request rq = { .payload = p, .len = strlen(p),
	    .timeout_ms = timeout_ms };

	CU_ASSERT_FATAL(sipc_call(s, &rq, r) == 0);
}

static bool
reply_is(const struct sipc_result *r, const char *want)
{
	return r->outcome == SIPC_OUTCOME_OK && r->reply_len == strlen(want) &&
	    memcmp(r->reply, want, r->reply_len) == 0;
}

static struct sipc_stats
stats(sipc_supervisor *s)
{
	struct sipc_stats st;

	memset(&st, 0, sizeof(st));
	CU_ASSERT(sipc_stats_get(s, &st) == 0);
	return st;
}

/* Wait until slot `slot` runs generation >= gen and is READY. */
static bool
wait_gen_ready(sipc_supervisor *s, unsigned slot, unsigned gen)
{
	struct st_gen_want w = { slot, gen };

	return st_stats_wait(s, st_pred_gen_ready, &w, WAIT_MS);
}

/* Parse "key=VALUE" out of a procinfo reply into buf. */
static bool
field(const struct sipc_result *r, const char *key, char *buf, size_t len)
{
	char text[256], *p, *end;
	size_t n = r->reply_len < sizeof(text) - 1 ? r->reply_len :
	    sizeof(text) - 1;

	memcpy(text, r->reply, n);
	text[n] = '\0';
	if ((p = strstr(text, key)) == NULL)
		return false;
	p += strlen(key);
	end = p + strcspn(p, " ");
	*end = '\0';
	snprintf(buf, len, "%s", p);
	return true;
}

/* ------------------------------------------------------------ violations */

/*
 * One worker that breaks the protocol in `mode` on its first request:
 * the request is UNKNOWN / SIPC_E_PROTOCOL (never a reply), the violation
 * is counted once, logged with `what`, and the worker is terminated for
 * PROTOCOL and replaced.
 */
static void
run_violation(const char *mode, const char *what)
{
	char *argv[] = { "badframes", (char *)mode, NULL };
	struct sipc_config c;
	struct sipc_result r;
	struct sipc_stats st;
	sipc_supervisor *s;
	char needle[128];

	cfg_base(&c, "badframes", argv, 1);
	s = start(&c, 1);
	call_str(s, "ping", 20000, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT_EQUAL(r.error, SIPC_E_PROTOCOL);
	CU_ASSERT(r.may_have_run);
	CU_ASSERT_EQUAL(r.exit.kind, SIPC_EXIT_TERMINATED);
	CU_ASSERT_EQUAL(r.exit.reason, SIPC_TERM_PROTOCOL);
	sipc_result_release(&r);
	snprintf(needle, sizeof(needle), "protocol violation: %s", what);
	CU_ASSERT(log_find(needle, NULL));
	st = stats(s);
	CU_ASSERT_EQUAL(st.protocol_violations, 1);
	CU_ASSERT_EQUAL(st.workers[0].protocol_violations, 1);
	CU_ASSERT_EQUAL(st.completed_ok, 0);
	CU_ASSERT_EQUAL(st.worker_errors, 0);
	CU_ASSERT_EQUAL(st.unknown, 1);
	CU_ASSERT_EQUAL(st.workers[0].last_exit.kind, SIPC_EXIT_TERMINATED);
	CU_ASSERT_EQUAL(st.workers[0].last_exit.reason, SIPC_TERM_PROTOCOL);
	sipc_stats_release(&st);
	/* out of service: a new generation takes its place */
	CU_ASSERT(wait_gen_ready(s, 0, 2));
	sipc_destroy(s);
}

/* rules: F7 */
static void
test_contract_short_error_is_violation(void)
{
	run_violation("shorterror", "short ERROR frame");
}

/* rules: F8 */
static void
test_contract_worker_sends_request_is_violation(void)
{
	run_violation("send-request", "unexpected frame type");
}

/* rules: F8 */
static void
test_contract_worker_sends_cancel_is_violation(void)
{
	run_violation("send-cancel", "unexpected frame type");
}

/* rules: A4 */
static void
test_contract_accept_unowed_is_violation(void)
{
	run_violation("accept-unowed", "ACCEPT for an id not owed");
}

/* rules: A4 */
static void
test_contract_accept_twice_is_violation(void)
{
	run_violation("accept-twice", "ACCEPT for an id not owed");
}

/* rules: F6 */
static void
test_contract_flag_bits_are_violation(void)
{
	run_violation("flags", "unknown flag bits");
}

/* Completion capture for submits whose outcome arrives later. */
struct done_cap {
	atomic_int calls;
	struct sipc_result res;
};

static void
done_capture(void *arg, struct sipc_result *res)
{
	struct done_cap *d = arg;

	if (atomic_fetch_add(&d->calls, 1) == 0)
		d->res = *res;            /* takes over what it owns */
	else
		sipc_result_release(res);
}

struct held_wait { sipc_supervisor *s; int slot; };

static bool
one_inflight_cb(void *arg)
{
	struct held_wait *w = arg;
	struct sipc_stats st;

	if (sipc_stats_get(w->s, &st) != 0)
		return false;
	for (unsigned i = 0; i < st.nworkers; i++)
		if (st.workers[i].inflight == 1)
			w->slot = (int)i;
	sipc_stats_release(&st);
	return w->slot >= 0;
}

/*
 * C5: request A is in flight on worker X ("hold": never answered).
 * Request B goes to the other, idle worker Y, which answers A's id.
 * That is a violation of Y: B is UNKNOWN / PROTOCOL, A is not
 * delivered and stays with X, which keeps serving.
 */
/* rules: C5 */
static void
test_contract_reply_to_other_workers_id(void)
{
	char *argv[] = { "badframes", "reply-other", NULL };
	struct done_cap a = { 0 };
	struct held_wait hw;
	struct sipc_config c;
	struct sipc_request rq = { .payload = "hold", .len = 4 };
	struct sipc_result r;
	struct sipc_stats st;
	sipc_supervisor *s;
	uint64_t id_a = 0;
	char buf[64];
	int x, y;

	cfg_base(&c, "badframes", argv, 2);
	c.max_inflight = 1;
	c.restart_base_ms = 2000;     /* Y stays down while we look */
	c.restart_cap_ms = 2000;
	s = start(&c, 2);
	CU_ASSERT_FATAL(sipc_submit(s, &rq, done_capture, &a, &id_a) == 0);
	hw = (struct held_wait){ s, -1 };
	CU_ASSERT_FATAL(tl_wait_until(one_inflight_cb, &hw, WAIT_MS));
	x = hw.slot;
	y = 1 - x;
	snprintf(buf, sizeof(buf), "reply-to %llu", (unsigned long long)id_a);
	call_str(s, buf, 20000, &r);
	/* B was written to the least loaded worker: Y */
	CU_ASSERT_EQUAL(r.worker_id, (uint32_t)y);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT_EQUAL(r.error, SIPC_E_PROTOCOL);
	sipc_result_release(&r);
	CU_ASSERT(log_find("reply to an id this worker does not hold", NULL));
	CU_ASSERT_EQUAL(atomic_load(&a.calls), 0);   /* "stolen" dropped */
	st = stats(s);
	CU_ASSERT_EQUAL(st.protocol_violations, 1);
	CU_ASSERT_EQUAL(st.workers[y].protocol_violations, 1);
	CU_ASSERT_EQUAL(st.workers[x].protocol_violations, 0);
	CU_ASSERT_EQUAL(st.workers[x].state, SIPC_WS_READY);
	CU_ASSERT_EQUAL(st.workers[x].generation, 1);
	CU_ASSERT_EQUAL(st.workers[x].inflight, 1);      /* still holds A */
	CU_ASSERT_EQUAL(st.completed_ok, 0);
	sipc_stats_release(&st);
	sipc_destroy(s);
	/* A's one outcome comes from the shutdown, never from Y's reply */
	CU_ASSERT_EQUAL(atomic_load(&a.calls), 1);
	CU_ASSERT_EQUAL(a.res.outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT_EQUAL(a.res.error, SIPC_E_SHUTDOWN);
	CU_ASSERT_EQUAL(a.res.worker_id, (uint32_t)x);
	sipc_result_release(&a.res);
}

/* C7: the caller gets TIMEOUT; the worker's reply after it is dropped
 * silently: no violation, no second outcome, the worker keeps serving. */
struct count_wait { sipc_supervisor *s; uint64_t n; };

static bool
completed_cb(void *arg)
{
	struct count_wait *w = arg;
	struct sipc_stats st;
	bool r;

	if (sipc_stats_get(w->s, &st) != 0)
		return false;
	r = st.workers[0].completed >= w->n;
	sipc_stats_release(&st);
	return r;
}

/* rules: C7 */
static void
test_contract_late_reply_dropped_silently(void)
{
	char *argv[] = { "slow", "1000", NULL };
	struct count_wait cw;
	struct sipc_config c;
	struct sipc_result r;
	struct sipc_stats st;
	sipc_supervisor *s;
	int64_t t0;

	cfg_base(&c, "slow", argv, 1);
	c.cancel_grace_ms = 20000;    /* the worker is never ended for it */
	s = start(&c, 1);
	t0 = tl_now_ms();
	call_str(s, "late", 200, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_TIMEOUT);
	CU_ASSERT_EQUAL(r.error, SIPC_E_TIMEOUT);
	CU_ASSERT(r.may_have_run);
	CU_ASSERT(tl_now_ms() - t0 < 1000);   /* before the worker replied */
	sipc_result_release(&r);
	cw = (struct count_wait){ s, 1 };
	CU_ASSERT(tl_wait_until(completed_cb, &cw, WAIT_MS));  /* reply read */
	st = stats(s);
	CU_ASSERT_EQUAL(st.protocol_violations, 0);
	CU_ASSERT_EQUAL(st.workers[0].protocol_violations, 0);
	CU_ASSERT_EQUAL(st.workers[0].state, SIPC_WS_READY);
	CU_ASSERT_EQUAL(st.workers[0].generation, 1);
	CU_ASSERT_EQUAL(st.workers[0].inflight, 0);
	CU_ASSERT_EQUAL(st.completed_ok, 0);
	CU_ASSERT_EQUAL(st.timeouts, 1);
	CU_ASSERT_EQUAL(st.pending, 0);
	sipc_stats_release(&st);
	call_str(s, "next", 20000, &r);
	CU_ASSERT(reply_is(&r, "next"));
	CU_ASSERT_EQUAL(r.generation, 1);
	sipc_result_release(&r);
	st = stats(s);
	CU_ASSERT_EQUAL(st.protocol_violations, 0);
	CU_ASSERT_EQUAL(st.completed_ok, 1);
	sipc_stats_release(&st);
	sipc_destroy(s);
}

/*
 * F6, worker side: the runtime treats a frame with flag bits as a
 * malformed frame.  The echo fixture runs on a socket pair driven by
 * hand: a clean REQUEST is ACCEPTed and answered; a REQUEST with flag
 * bit 0 gets no ACCEPT and no reply, and the worker exits with status 1
 * (sipc_worker_run() returned an error).
 */
static bool
recv_exact(int fd, uint8_t *buf, size_t len)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int64_t end = tl_now_ms() + WAIT_MS;
	ssize_t n;

	while (len > 0) {
		if (poll(&pfd, 1, (int)(end - tl_now_ms())) <= 0)
			return false;
		if ((n = recv(fd, buf, len, 0)) <= 0)
			return false;
		buf += n;
		len -= (size_t)n;
	}
	return true;
}

static bool
recv_frame(int fd, uint8_t type, uint64_t id, uint32_t len)
{
	uint8_t h[SIPC_FRAME_HDR_LEN], p[64];
	struct sipc_frame_hdr fh;

	if (!recv_exact(fd, h, sizeof(h)) ||
	    sipc__frame_decode_hdr(h, sizeof(p), &fh) != 0 ||
	    fh.type != type || fh.id != id || fh.len != len || fh.flags != 0)
		return false;
	return fh.len == 0 || recv_exact(fd, p, fh.len);
}

static void
send_request(int fd, uint64_t id, uint16_t flags, const char *p)
{
	struct sipc_frame_hdr fh = { .type = SIPC_FT_REQUEST, .flags = flags,
	    .id = id, .len = (uint32_t)strlen(p) };
	uint8_t f[SIPC_FRAME_HDR_LEN + 16];

	sipc__frame_encode_hdr(f, &fh);
	memcpy(f + SIPC_FRAME_HDR_LEN, p, fh.len);
	CU_ASSERT(send(fd, f, SIPC_FRAME_HDR_LEN + fh.len, MSG_NOSIGNAL) ==
	    (ssize_t)(SIPC_FRAME_HDR_LEN + fh.len));
}

/* rules: F6 F9 */
static void
test_contract_runtime_rejects_flag_bits(void)
{
	char ppid[48], *env[] = { "SIPC_FD=3", ppid,
	    "SIPC_FX_ACCEPT=frames", NULL };
	char *argv[] = { "echo", NULL };
	posix_spawn_file_actions_t fa;
	uint8_t b;
	int sv[2], st = 0;
	pid_t pid;

	snprintf(ppid, sizeof(ppid), "SIPC_PARENT_PID=%d", (int)getpid());
	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
	    sv) == 0);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, sv[1], 3);
	CU_ASSERT_FATAL(posix_spawn(&pid, tl_fixture("echo"), &fa, NULL, argv,
	    env) == 0);
	posix_spawn_file_actions_destroy(&fa);
	close(sv[1]);
	CU_ASSERT(recv_frame(sv[0], SIPC_FT_HELLO, 0, SIPC_HELLO_LEN));
	send_request(sv[0], 1, 0, "clean");
	CU_ASSERT(recv_frame(sv[0], SIPC_FT_ACCEPT, 1, 0));
	CU_ASSERT(recv_frame(sv[0], SIPC_FT_REPLY, 1, 5));
	send_request(sv[0], 2, 1, "flagged");
	CU_ASSERT(!recv_exact(sv[0], &b, 1));    /* EOF: nothing for id 2 */
	CU_ASSERT_EQUAL(waitpid(pid, &st, 0), pid);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	close(sv[0]);
}

/* ------------------------------------------------------------ launch */

/* Hex mask of `key` in /proc/thread-self/status. */
static unsigned long long
thread_mask(const char *key)
{
	char line[256];
	unsigned long long v = 0;
	FILE *f = fopen("/proc/thread-self/status", "re");

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, key, strlen(key)) == 0)
			v = strtoull(line + strlen(key), NULL, 16);
	fclose(f);
	return v;
}

/*
 * glibc's posix_spawn() leaves its two internal signals (32 and 33:
 * thread cancellation and set*id broadcast) ignored in the child; they
 * cannot be named in a sigset_t, so nothing can reset them.  Every
 * other disposition must be the default (CONTRACT.md D6).
 */
#define GLIBC_INTERNAL_SIGS ((1ull << 31) | (1ull << 32))

static void
check_masks_zero(sipc_supervisor *s)
{
	struct sipc_result r;
	char blk[32], ign[32];
	unsigned long long vblk, vign;

	call_str(s, "info", 20000, &r);
	CU_ASSERT_EQUAL_FATAL(r.outcome, SIPC_OUTCOME_OK);
	CU_ASSERT_FATAL(field(&r, "sigblk=", blk, sizeof(blk)));
	CU_ASSERT_FATAL(field(&r, "sigign=", ign, sizeof(ign)));
	sipc_result_release(&r);
	vblk = strtoull(blk, NULL, 16);
	vign = strtoull(ign, NULL, 16);
	CU_ASSERT_EQUAL(strlen(blk), 16);
	CU_ASSERT_EQUAL(strlen(ign), 16);
	CU_ASSERT_EQUAL(vblk, 0);
	CU_ASSERT_EQUAL(vign & ~GLIBC_INTERNAL_SIGS, 0);
	CU_ASSERT_EQUAL(vign & (1ull << (SIGUSR2 - 1)), 0);
}

/* D6: the host blocks SIGUSR1 and ignores SIGUSR2 before sipc_create;
 * a worker (first and later generations) starts with neither. */
/* rules: D6 SC1 */
static void
test_contract_worker_signal_mask_and_dispositions_reset(void)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, old;
	sigset_t usr1, oldmask;
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, &oldmask);
	sigaction(SIGUSR2, &ign, &old);
	/* the setup is real: this thread blocks 10 and the process ignores 12 */
	CU_ASSERT(thread_mask("SigBlk:") & (1ull << (SIGUSR1 - 1)));
	CU_ASSERT(thread_mask("SigIgn:") & (1ull << (SIGUSR2 - 1)));
	cfg_base(&c, "procinfo", NULL, 1);
	s = start(&c, 1);
	check_masks_zero(s);
	call_str(s, "exit", 20000, &r);   /* generation 2 is spawned later */
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_UNKNOWN);
	sipc_result_release(&r);
	CU_ASSERT_FATAL(wait_gen_ready(s, 0, 2));
	check_masks_zero(s);
	sipc_destroy(s);
	sigaction(SIGUSR2, &old, NULL);
	pthread_sigmask(SIG_SETMASK, &oldmask, NULL);
}

static void
nproc_reply(unsigned limit, char *buf, size_t len)
{
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;

	cfg_base(&c, "procinfo", NULL, 1);
	c.worker_nproc_limit = limit;
	s = start(&c, 1);
	call_str(s, "info", 20000, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_OK);
	buf[0] = '\0';
	CU_ASSERT(field(&r, "nproc=", buf, len));
	sipc_result_release(&r);
	sipc_destroy(s);
}

/* D7: worker_nproc_limit becomes the worker's RLIMIT_NPROC (soft and
 * hard); 0 leaves the inherited limit alone, except under the sandbox,
 * whose max_procs default (512) is set then. */
/* rules: D7 */
static void
test_contract_worker_nproc_limit_applied(void)
{
	struct rlimit rl;
	char got[64], want[64];

	nproc_reply(777, got, sizeof(got));
	CU_ASSERT_STRING_EQUAL(got, "777/777");
	CU_ASSERT_FATAL(getrlimit(RLIMIT_NPROC, &rl) == 0);
	if (rl.rlim_cur == RLIM_INFINITY)
		snprintf(want, sizeof(want), "inf/");
	else
		snprintf(want, sizeof(want), "%llu/",
		    (unsigned long long)rl.rlim_cur);
	if (rl.rlim_max == RLIM_INFINITY)
		snprintf(want + strlen(want), sizeof(want) - strlen(want),
		    "inf");
	else
		snprintf(want + strlen(want), sizeof(want) - strlen(want),
		    "%llu", (unsigned long long)rl.rlim_max);
	if (st_sandboxed())
		snprintf(want, sizeof(want), "512/512");
	nproc_reply(0, got, sizeof(got));
	CU_ASSERT_STRING_EQUAL(got, want);
}

/* 1.5: every worker is told the supervisor's max_payload. */
/* rules: D3 F10 */
static void
test_contract_worker_told_max_payload(void)
{
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	char got[32] = "";

	cfg_base(&c, "procinfo", NULL, 1);
	c.max_payload = 65536;
	s = start(&c, 1);
	call_str(s, "info", 20000, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_OK);
	CU_ASSERT(field(&r, "maxp=", got, sizeof(got)));
	CU_ASSERT_STRING_EQUAL(got, "65536");
	sipc_result_release(&r);
	sipc_destroy(s);
}

/* ------------------------------------------------------------ diagnostics */

/* G3: a DIAG line carries the slot, generation and pid of the worker
 * that wrote it, equal to stats and to what the worker says of itself,
 * in the first generation and in its replacement. */
static void
check_diag_tags(sipc_supervisor *s, unsigned gen)
{
	struct sipc_worker_stats w;
	struct sipc_result r;
	struct sipc_stats st;
	struct logent e;
	char needle[64], pid[32], g[32];

	call_str(s, "info", 20000, &r);
	CU_ASSERT_EQUAL_FATAL(r.outcome, SIPC_OUTCOME_OK);
	CU_ASSERT_FATAL(field(&r, "pid=", pid, sizeof(pid)));
	CU_ASSERT_FATAL(field(&r, "gen=", g, sizeof(g)));
	CU_ASSERT_EQUAL(strtoul(g, NULL, 10), gen);
	CU_ASSERT_EQUAL(r.generation, gen);
	CU_ASSERT_EQUAL(r.pid, (pid_t)strtol(pid, NULL, 10));
	sipc_result_release(&r);
	st = stats(s);
	w = st.workers[0];
	sipc_stats_release(&st);
	snprintf(needle, sizeof(needle), "procinfo pid=%s gen=%u", pid, gen);
	CU_ASSERT_FATAL(tl_wait_until(log_has_cb, needle, WAIT_MS));
	CU_ASSERT_FATAL(log_find(needle, &e));
	CU_ASSERT_EQUAL(e.lvl, SIPC_LOG_DIAG);
	CU_ASSERT_EQUAL(e.wid, 0);
	CU_ASSERT_EQUAL(e.gen, gen);
	CU_ASSERT_EQUAL(e.gen, w.generation);
	CU_ASSERT_EQUAL(e.pid, w.pid);
	CU_ASSERT_EQUAL(e.pid, (pid_t)strtol(pid, NULL, 10));
}

/* rules: G2 */
static void
test_contract_diag_tagged_with_generation_and_pid(void)
{
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;

	if (st_skip_sandboxed("reads the worker's host pid or group"))
		return;
	cfg_base(&c, "procinfo", NULL, 1);
	/* the worker names its own pid: the same number as the host's
	 * only outside a PID namespace (inside, the tags carry the pid of
	 * its sipc-init, the process the supervisor owns) */
	c.containment = SIPC_CONTAIN_PROCESS_GROUP;
	s = start(&c, 1);
	check_diag_tags(s, 1);
	call_str(s, "exit", 20000, &r);
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_UNKNOWN);
	sipc_result_release(&r);
	CU_ASSERT_FATAL(wait_gen_ready(s, 0, 2));
	check_diag_tags(s, 2);
	sipc_destroy(s);
}

/* ------------------------------------------------------------ callbacks */

/*
 * TH2 (and TH1 for completions): callbacks call sipc_stats_get(), which
 * takes every slot lock and the table lock, and sipc_submit().  Were a
 * library lock held around a callback, its own thread would deadlock
 * and the expected completions would never all arrive.
 */
#define TH2_THREADS 8

static struct {
	_Atomic(sipc_supervisor *) s;
	atomic_int log_calls, log_submits, stats_fail, submit_fail;
	atomic_int done_calls;
	atomic_llong busy_since;          /* a callback inside the library */
	pthread_mutex_t mu;
	pthread_t log_thr[TH2_THREADS], done_thr[TH2_THREADS];
	unsigned nlog_thr, ndone_thr;
} th2 = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void
th2_note_thread(pthread_t *set, unsigned *n)
{
	pthread_t me = pthread_self();
	unsigned i;

	pthread_mutex_lock(&th2.mu);
	for (i = 0; i < *n && !pthread_equal(set[i], me); i++)
		;
	if (i == *n && *n < TH2_THREADS)
		set[(*n)++] = me;
	pthread_mutex_unlock(&th2.mu);
}

static void th2_done(void *arg, struct sipc_result *res);

/* stats, then (when asked) one submit, from inside a callback */
static void
th2_reenter(const char *payload, void *done_arg)
{
	sipc_supervisor *s = atomic_load(&th2.s);
	struct sipc_request rq;
	struct sipc_stats st;
	int rc;

	if (s == NULL)
		return;
	atomic_store(&th2.busy_since, tl_now_ms());
	/* SIPC_E_SHUTDOWN: a log callback while destroy is under way */
	if ((rc = sipc_stats_get(s, &st)) == 0)
		sipc_stats_release(&st);
	else if (rc != SIPC_E_SHUTDOWN)
		atomic_fetch_add(&th2.stats_fail, 1);
	if (payload != NULL) {
		rq = (struct sipc_request){ .payload = payload,
		    .len = strlen(payload) };
		rc = sipc_submit(s, &rq, th2_done, done_arg, NULL);
		if (rc != 0 && rc != SIPC_E_SHUTDOWN)
			atomic_fetch_add(&th2.submit_fail, 1);
	}
	atomic_store(&th2.busy_since, 0);
}

static void
th2_log(void *arg, enum sipc_log_level lvl, uint32_t wid, uint32_t gen,
        pid_t pid, const char *msg)
{
	const char *p = NULL;

	log_fn(arg, lvl, wid, gen, pid, msg);
	atomic_fetch_add(&th2.log_calls, 1);
	if (atomic_load(&th2.s) == NULL)
		return;
	th2_note_thread(th2.log_thr, &th2.nlog_thr);
	if (lvl == SIPC_LOG_DIAG && atomic_fetch_add(&th2.log_submits, 1) < 3)
		p = "from-log";
	th2_reenter(p, "log");
}

static void
th2_done(void *arg, struct sipc_result *res)
{
	/* "first" submits a follow-up; the others only look at stats */
	th2_note_thread(th2.done_thr, &th2.ndone_thr);
	th2_reenter(strcmp(arg, "first") == 0 ? "follow-up" : NULL, "follow");
	sipc_result_release(res);
	atomic_fetch_add(&th2.done_calls, 1);
}

static bool
th2_done_count(void *arg)
{
	return atomic_load(&th2.done_calls) >= *(int *)arg;
}

/* rules: TH1 */
static void
test_contract_callbacks_hold_no_library_lock(void)
{
	static const char exitp[] = "exit";
	struct sipc_request rq = { .payload = "first", .len = 5 };
	struct sipc_config c;
	sipc_supervisor *s;
	pthread_t me = pthread_self();
	int want;
	bool ok;

	cfg_base(&c, "procinfo", NULL, 1);
	c.log = th2_log;
	s = start(&c, 1);
	atomic_store(&th2.s, s);
	/* a reply: completion on the reader, follow-up from there */
	CU_ASSERT_FATAL(sipc_submit(s, &rq, th2_done, "first", NULL) == 0);
	/* a crash: UNKNOWN settled by the reaper, follow-up from there */
	rq = (struct sipc_request){ .payload = exitp, .len = 4 };
	CU_ASSERT_FATAL(sipc_submit(s, &rq, th2_done, "first", NULL) == 0);
	/* 2 submitted here + 2 follow-ups + 3 submitted from DIAG lines */
	want = 7;
	ok = tl_wait_until(th2_done_count, &want, 3 * WAIT_MS);
	if (!ok) {
		fprintf(stderr, "TH2: %d of %d completions; a callback has "
		    "been inside the library since %lld ms: deadlock\n",
		    atomic_load(&th2.done_calls), want,
		    atomic_load(&th2.busy_since) ?
		    (long long)(tl_now_ms() - atomic_load(&th2.busy_since)) :
		    -1LL);
		CU_FAIL_FATAL("a callback did not return");
	}
	CU_ASSERT(wait_gen_ready(s, 0, 2));
	CU_ASSERT_EQUAL(atomic_load(&th2.stats_fail), 0);
	CU_ASSERT_EQUAL(atomic_load(&th2.submit_fail), 0);
	/* reader (DIAG) and reaper ("worker ended") both called the log
	 * callback; reader (reply) and reaper (settle) both completed */
	pthread_mutex_lock(&th2.mu);
	CU_ASSERT(th2.nlog_thr >= 2);
	CU_ASSERT(th2.ndone_thr >= 2);
	for (unsigned i = 0; i < th2.nlog_thr; i++)
		CU_ASSERT(!pthread_equal(th2.log_thr[i], me));
	for (unsigned i = 0; i < th2.ndone_thr; i++)
		CU_ASSERT(!pthread_equal(th2.done_thr[i], me));
	pthread_mutex_unlock(&th2.mu);
	CU_ASSERT(log_find("worker ended", NULL));
	/* the callbacks stay armed through destroy (submits: SHUTDOWN) */
	sipc_destroy(s);
	atomic_store(&th2.s, NULL);
	CU_ASSERT_EQUAL(atomic_load(&th2.done_calls), want);
	CU_ASSERT_EQUAL(atomic_load(&th2.stats_fail), 0);
	CU_ASSERT_EQUAL(atomic_load(&th2.submit_fail), 0);
}

/* ------------------------------------------------------------ SIGCHLD */

/* SC1 is gone: a host that ignores SIGCHLD (or sets SA_NOCLDWAIT) is
 * accepted and its workers' exits are classified exactly
 * (host_test.c: test_host_sigchld_ignored_exit_classes_kept). */

/* SC2: a host thread created before sipc_create() with SIGCHLD unblocked
 * and a handler installed takes the signal; the reaper still notices the
 * exit (rescan on every wake) and replaces the worker. */
static atomic_int sc2_signals;
static atomic_bool sc2_stop, sc2_armed;

static void
sc2_handler(int sig)
{
	(void)sig;
	atomic_fetch_add(&sc2_signals, 1);
}

static void *
sc2_host_thread(void *arg)
{
	struct timespec nap = { 0, 20 * 1000000L };
	sigset_t chld;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	pthread_sigmask(SIG_UNBLOCK, &chld, NULL);
	atomic_store(&sc2_armed, true);
	while (!atomic_load(&sc2_stop))
		nanosleep(&nap, NULL);         /* interrupted by SIGCHLD */
	return NULL;
}

static bool
sc2_armed_cb(void *arg)
{
	return atomic_load(&sc2_armed);
}

/* Crash the worker of generation `gen`; its end must be classified and
 * a generation gen + 1 serve.  Returns false on the first failure. */
static bool
sc2_crash_once(sipc_supervisor *s, unsigned gen)
{
	struct sipc_result r;
	char cmd[32];
	size_t n;
	int64_t t0;
	bool ok;

	memcpy(cmd, "\0CMD", 4);
	n = 4 + (size_t)snprintf(cmd + 4, sizeof(cmd) - 4, "crash exit 3");
	t0 = tl_now_ms();
	{
		struct sipc_request rq = { .payload = cmd, .len = n };

		CU_ASSERT_FATAL(sipc_call(s, &rq, &r) == 0);
	}
	ok = r.outcome == SIPC_OUTCOME_UNKNOWN &&
	    r.error == SIPC_E_WORKER_DIED && r.generation == gen &&
	    r.exit.kind == SIPC_EXIT_CODE && r.exit.code == 3 &&
	    tl_now_ms() - t0 < 5000;
	sipc_result_release(&r);
	CU_ASSERT(ok);
	if (ok)
		CU_ASSERT(ok = wait_gen_ready(s, 0, gen + 1));
	return ok;
}

/*
 * Which thread gets a process-directed SIGCHLD is a race between the
 * host thread (handler) and the reaper's signalfd read (which dequeues
 * the same pending signal), so the worker is crashed until the host
 * thread has taken at least one: every crash, taken or not, must be
 * noticed in time.
 */
/* rules: SC1 */
static void
test_contract_sigchld_taken_by_host_thread(void)
{
	struct sigaction sa, old;
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	pthread_t t;
	unsigned gen;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sc2_handler;
	sa.sa_flags = SA_RESTART;
	CU_ASSERT_FATAL(sigaction(SIGCHLD, &sa, &old) == 0);
	atomic_store(&sc2_stop, false);
	atomic_store(&sc2_armed, false);
	atomic_store(&sc2_signals, 0);
	CU_ASSERT_FATAL(pthread_create(&t, NULL, sc2_host_thread, NULL) == 0);
	CU_ASSERT_FATAL(tl_wait_until(sc2_armed_cb, NULL, WAIT_MS));
	cfg_base(&c, "echo", NULL, 1);
	c.restart_intensity = 100;
	c.pool_restart_budget = 1000;
	s = start(&c, 1);
	for (gen = 1; gen <= 30 && atomic_load(&sc2_signals) == 0; gen++)
		if (!sc2_crash_once(s, gen))
			break;
	/* the host thread did take the signal (the case under test) */
	CU_ASSERT(atomic_load(&sc2_signals) >= 1);
	call_str(s, "after", 20000, &r);
	CU_ASSERT(reply_is(&r, "after"));
	sipc_result_release(&r);
	sipc_destroy(s);
	atomic_store(&sc2_stop, true);
	pthread_join(t, NULL);
	sigaction(SIGCHLD, &old, NULL);
}

/* ------------------------------------------------------------ owner mode */

static int
subreaper_flag(void)
{
	int v = -1;

	if (prctl(PR_GET_CHILD_SUBREAPER, &v) < 0)
		return -1;
	return v;
}

static int
start_owner_in(sipc_supervisor **s, const char *state_dir)
{
	struct sipc_config c;
	char err[256];

	cfg_base(&c, "echo", NULL, 1);
	c.owner = true;
	c.state_dir = state_dir;
	return sipc_create(&c, err, sizeof(err), s);
}

static int
start_owner(sipc_supervisor **s)
{
	return start_owner_in(s, NULL);
}

static bool
sigchld_blocked(void)
{
	sigset_t m;

	pthread_sigmask(SIG_SETMASK, NULL, &m);
	return sigismember(&m, SIGCHLD) == 1;
}

/* SC4: owner mode sets the subreaper flag and blocks SIGCHLD in the
 * creating thread; one owner at a time; destroy clears the flag unless
 * the host had set it itself. */
/* rules: SC4 */
static void
test_contract_owner_flag_restored(void)
{
	sipc_supervisor *a = NULL, *b = NULL;

	CU_ASSERT_EQUAL_FATAL(subreaper_flag(), 0);
	CU_ASSERT_FALSE_FATAL(sigchld_blocked());
	/* a create that fails after taking owner mode gives all of it
	 * back: the mask, the flag, the one owner slot */
	CU_ASSERT(start_owner_in(&a, "/dev/null/no") < 0);
	CU_ASSERT_FALSE(sigchld_blocked());
	CU_ASSERT_EQUAL(subreaper_flag(), 0);
	CU_ASSERT_EQUAL_FATAL(start_owner(&a), 0);
	CU_ASSERT_NOT_EQUAL(subreaper_flag(), 0);
	CU_ASSERT_TRUE(sigchld_blocked());
	CU_ASSERT_EQUAL(start_owner(&b), -EBUSY);   /* one owner at a time */
	sipc_destroy(a);
	CU_ASSERT_EQUAL(subreaper_flag(), 0);
	st_unblock_sigchld();

	CU_ASSERT_FATAL(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
	CU_ASSERT_EQUAL_FATAL(start_owner(&a), 0);
	sipc_destroy(a);
	CU_ASSERT_NOT_EQUAL(subreaper_flag(), 0);   /* the host's own */
	CU_ASSERT_FATAL(prctl(PR_SET_CHILD_SUBREAPER, 0) == 0);
	st_unblock_sigchld();
}

/* ------------------------------------------------------------ destroy */

/*
 * S4: a worker that ignores TERM and holds a request: destroy takes the
 * whole documented bound, drain_ms + min(500, grace_ms/2) + grace_ms
 * (the request holds the drain open, TERM is ignored, only SIGKILL at
 * the end of the grace ends it), and no more than that plus the reaping
 * margin S4 allows; the request gets exactly one outcome (UNKNOWN /
 * SHUTDOWN, ended by SIGKILL).
 */
#define S4_REAP_MARGIN_MS 250

/* rules: S4 */
static void
test_contract_destroy_time_bounded(void)
{
	struct done_cap d = { 0 };
	struct sipc_request rq = { .payload = "held", .len = 4 };
	struct held_wait hw;
	struct sipc_config c;
	sipc_supervisor *s;
	int64_t t0, took, bound;

	cfg_base(&c, "stubborn", NULL, 1);
	c.drain_ms = 200;
	c.grace_ms = 300;
	bound = c.drain_ms + (c.grace_ms / 2 < 500 ? c.grace_ms / 2 : 500) +
	    c.grace_ms;                                   /* 650 ms */
	s = start(&c, 1);
	CU_ASSERT_FATAL(sipc_submit(s, &rq, done_capture, &d, NULL) == 0);
	hw = (struct held_wait){ s, -1 };
	CU_ASSERT_FATAL(tl_wait_until(one_inflight_cb, &hw, WAIT_MS));
	t0 = tl_now_ms();
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
	took = tl_now_ms() - t0;
	/* timers never fire early; 1 ms for clock granularity */
	CU_ASSERT(took >= bound - 1);
	CU_ASSERT(took <= bound + S4_REAP_MARGIN_MS);
	if (took < bound - 1 || took > bound + S4_REAP_MARGIN_MS)
		fprintf(stderr, "S4: destroy took %lld ms, bound %lld + %d\n",
		    (long long)took, (long long)bound, S4_REAP_MARGIN_MS);
	CU_ASSERT_EQUAL(atomic_load(&d.calls), 1);
	CU_ASSERT_EQUAL(d.res.outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT_EQUAL(d.res.error, SIPC_E_SHUTDOWN);
	CU_ASSERT_EQUAL(d.res.exit.kind, SIPC_EXIT_TERMINATED);
	CU_ASSERT_EQUAL(d.res.exit.reason, SIPC_TERM_SHUTDOWN);
	CU_ASSERT_EQUAL(d.res.exit.signo, SIGKILL);
	sipc_result_release(&d.res);
}

/* ------------------------------------------------------------ wait_ready */

static void
expect_wait_ready(const char *mode, unsigned handshake_ms, int want)
{
	char *argv[] = { "badframes", (char *)mode, NULL };
	struct sipc_config c;
	sipc_supervisor *s;
	int64_t t0;

	cfg_base(&c, "badframes", argv, 1);
	c.handshake_ms = handshake_ms;
	c.restart_base_ms = 3000;       /* no new start while we wait */
	c.restart_cap_ms = 3000;
	s = start(&c, 0);
	t0 = tl_now_ms();
	CU_ASSERT_EQUAL(sipc_wait_ready(s, 1, 20000), want);
	CU_ASSERT(tl_now_ms() - t0 < 15000);     /* said at once, no deadline */
	sipc_destroy(s);
}

/* rules: H5 */
static void
test_contract_wait_ready_version(void)
{
	expect_wait_ready("badversion", 3000, SIPC_E_VERSION);
}

/* rules: H5 */
static void
test_contract_wait_ready_handshake(void)
{
	expect_wait_ready("nohello", 200, SIPC_E_HANDSHAKE);
}

/* The executable vanishes while the supervisor runs: the next start
 * fails and sipc_wait_ready() says SIPC_E_EXEC. */
/* rules: H5 */
static void
test_contract_wait_ready_exec(void)
{
	char dir[] = "/tmp/sipc-contract-XXXXXX", bin[PATH_MAX], cmd[32];
	struct st_exit_want ef = { 0, SIPC_EXIT_EXEC_FAILED };
	struct sipc_config c;
	struct sipc_result r;
	sipc_supervisor *s;
	size_t n;
	int64_t t0;

	CU_ASSERT_FATAL(mkdtemp(dir) != NULL);
	/* a root supervisor's sandboxed worker runs as sandbox_uid */
	CU_ASSERT(chmod(dir, 0755) == 0);
	snprintf(bin, sizeof(bin), "%s/echo-copy", dir);
	CU_ASSERT_FATAL(st_copy_file(tl_fixture("echo"), bin) == 0);
	cfg_base(&c, "echo", NULL, 1);
	c.path = bin;
	s = start(&c, 1);
	CU_ASSERT_FATAL(unlink(bin) == 0);
	memcpy(cmd, "\0CMD", 4);
	n = 4 + (size_t)snprintf(cmd + 4, sizeof(cmd) - 4, "crash exit 3");
	{
		struct sipc_request rq = { .payload = cmd, .len = n };

		CU_ASSERT_FATAL(sipc_call(s, &rq, &r) == 0);
	}
	CU_ASSERT_EQUAL(r.outcome, SIPC_OUTCOME_UNKNOWN);
	sipc_result_release(&r);
	CU_ASSERT_FATAL(st_stats_wait(s, st_pred_exit_kind, &ef, WAIT_MS));
	t0 = tl_now_ms();
	CU_ASSERT_EQUAL(sipc_wait_ready(s, 1, 20000), SIPC_E_EXEC);
	CU_ASSERT(tl_now_ms() - t0 < 15000);
	sipc_destroy(s);
	rmdir(dir);
}

int
main(void)
{
	tl_suite("contract", (tl_test[]){
	    { "test_contract_short_error_is_violation",
	      test_contract_short_error_is_violation },
	    { "test_contract_worker_sends_request_is_violation",
	      test_contract_worker_sends_request_is_violation },
	    { "test_contract_worker_sends_cancel_is_violation",
	      test_contract_worker_sends_cancel_is_violation },
	    { "test_contract_accept_unowed_is_violation",
	      test_contract_accept_unowed_is_violation },
	    { "test_contract_accept_twice_is_violation",
	      test_contract_accept_twice_is_violation },
	    { "test_contract_flag_bits_are_violation",
	      test_contract_flag_bits_are_violation },
	    { "test_contract_runtime_rejects_flag_bits",
	      test_contract_runtime_rejects_flag_bits },
	    { "test_contract_reply_to_other_workers_id",
	      test_contract_reply_to_other_workers_id },
	    { "test_contract_late_reply_dropped_silently",
	      test_contract_late_reply_dropped_silently },
	    { "test_contract_worker_signal_mask_and_dispositions_reset",
	      test_contract_worker_signal_mask_and_dispositions_reset },
	    { "test_contract_worker_nproc_limit_applied",
	      test_contract_worker_nproc_limit_applied },
	    { "test_contract_worker_told_max_payload",
	      test_contract_worker_told_max_payload },
	    { "test_contract_diag_tagged_with_generation_and_pid",
	      test_contract_diag_tagged_with_generation_and_pid },
	    { "test_contract_callbacks_hold_no_library_lock",
	      test_contract_callbacks_hold_no_library_lock },
	    { "test_contract_sigchld_taken_by_host_thread",
	      test_contract_sigchld_taken_by_host_thread },
	    { "test_contract_owner_flag_restored",
	      test_contract_owner_flag_restored },
	    { "test_contract_destroy_time_bounded",
	      test_contract_destroy_time_bounded },
	    { "test_contract_wait_ready_version",
	      test_contract_wait_ready_version },
	    { "test_contract_wait_ready_handshake",
	      test_contract_wait_ready_handshake },
	    { "test_contract_wait_ready_exec",
	      test_contract_wait_ready_exec },
	    { NULL, NULL } });
	return tl_run();
}

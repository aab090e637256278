/*
 * hostile_test.c - workers that attack the supervisor (fixtures/hostile
 * and echo commands): a 4 GiB length prefix, a reply dribbled one byte a
 * second, a flood of replies to ids never issued, a flood of stderr
 * without newlines, a closed protocol descriptor, a fork loop, ignoring
 * SIGTERM, and a setsid escape.  For each: the supervisor stays up, the
 * other worker keeps serving, memory stays inside the ceiling, the
 * hostile worker is classified, and destroy leaves nothing behind
 * (descriptors, threads, children, zombies) - except the setsid escapee,
 * which the local adapter documents it cannot contain.
 *
 * The hostile fixture misbehaves only in slot 0 (its WORKER_ID argument)
 * and serves echo in slot 1.
 *
 * Threads: the CUnit thread drives every test; the log callback runs on
 * library threads and touches only the mutex-guarded capture below.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sipc.h"
#include "sipctest.h"
#include "testlib.h"

#define WAIT_MS 20000          /* generous deadline for any event */
#define STALL_MS 500
#define GRACE_MS 300
#define SLACK_MS 3000          /* timer slices, rescans, slow CI, sanitizers */
#define CEILING (4u << 20)
#define RSS_SLACK_KB (16 * 1024)
#define LEFT_MS 5000           /* destroy leaves nothing behind within */

/* ------------------------------------------------------------ capture */

static struct {
	pthread_mutex_t mu;
	size_t diag_lines0, diag_bytes0, diag_max0, diag_other0;
	pid_t escapee;
	int forked;                 /* "hostile: forked N children", or -1 */
	int64_t t_term0, t_kill0;   /* slot 0: TERM sent, grace over */
	bool alive_at_kill0;
} cap = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void
cap_reset(void)
{
	pthread_mutex_lock(&cap.mu);
	cap.diag_lines0 = cap.diag_bytes0 = cap.diag_max0 = 0;
	cap.diag_other0 = 0;
	cap.escapee = 0;
	cap.forked = -1;
	cap.t_term0 = cap.t_kill0 = 0;
	cap.alive_at_kill0 = false;
	pthread_mutex_unlock(&cap.mu);
}

static bool
all_e(const char *msg, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (msg[i] != 'E')
			return false;
	return n > 0;
}

/* Slot 0's diagnostics and termination steps; no allocation. */
static void
log_fn(void *arg, enum sipc_log_level lvl, uint32_t wid, uint32_t gen,
       pid_t pid, const char *msg)
{
	size_t n = strlen(msg);
	int v;

	if (wid != 0)
		return;
	pthread_mutex_lock(&cap.mu);
	if (lvl == SIPC_LOG_DIAG) {
		if (all_e(msg, n)) {
			cap.diag_lines0++;
			cap.diag_bytes0 += n;
			if (n > cap.diag_max0)
				cap.diag_max0 = n;
		} else {
			cap.diag_other0++;
		}
		if (sscanf(msg, "hostile: escapee=%d", &v) == 1)
			cap.escapee = v;
		if (sscanf(msg, "hostile: forked %d children", &v) == 1)
			cap.forked = v;
	} else if (strncmp(msg, "terminating worker", 18) == 0 &&
	    cap.t_term0 == 0) {
		cap.t_term0 = tl_now_ms();
	} else if (strncmp(msg, "grace period over", 17) == 0 &&
	    cap.t_kill0 == 0) {
		/* logged just before SIGKILL: the worker outlived TERM */
		cap.t_kill0 = tl_now_ms();
		cap.alive_at_kill0 = tl_pid_alive(pid);
	}
	pthread_mutex_unlock(&cap.mu);
}

/* ------------------------------------------------------------ helpers */

/* hostile MODE ARG 0: misbehave in slot 0, echo in slot 1. */
static struct sipc_config
hostile_cfg(char **argv)
{
	struct sipc_config c;

	st_cfg_init(&c, argv[0], argv, 2);
	/* the fixtures report pids and groups as the host sees them */
	c.containment = SIPC_CONTAIN_PROCESS_GROUP;
	c.max_payload = 64 * 1024;
	c.ring_bytes = 1u << 20;
	c.mem_ceiling = CEILING;
	c.stall_ms = STALL_MS;
	c.grace_ms = GRACE_MS;
	c.handshake_ms = WAIT_MS;      /* every mode shakes hands */
	c.drain_ms = 500;
	c.diag_line_max = 256;
	c.restart_base_ms = 5000;      /* the hostile slot stays down a while */
	c.restart_cap_ms = 5000;
	c.log = log_fn;
	cap_reset();
	return c;
}

/*
 * `n` echo calls.  Every call comes back OK with its own bytes, except
 * that the hostile slot 0 may have been restarted (full-jitter backoff
 * can make that quick) and misbehave again: a call it took may then end
 * UNKNOWN or REJECTED - an honest outcome, never a wrong reply.  Most
 * calls are served.  Returns how many were OK.
 */
static unsigned
serves_within(sipc_supervisor *s, unsigned n, unsigned timeout_ms)
{
	struct sipc_request q = { .timeout_ms = timeout_ms };
	struct sipc_result res;
	char buf[48];
	unsigned i, ok = 0;

	for (i = 0; i < n; i++) {
		q.payload = buf;
		q.len = (size_t)snprintf(buf, sizeof(buf), "still here %u\n", i);
		CU_ASSERT_FATAL(sipc_call(s, &q, &res) == 0);
		if (res.outcome == SIPC_OUTCOME_OK && res.reply_len == q.len &&
		    memcmp(res.reply, buf, q.len) == 0) {
			ok++;
		} else {
			CU_ASSERT(res.outcome != SIPC_OUTCOME_OK);
			CU_ASSERT(res.worker_id == 0 || res.attempts == 0);
			CU_ASSERT(res.outcome == SIPC_OUTCOME_UNKNOWN ||
			    res.outcome == SIPC_OUTCOME_REJECTED);
			fprintf(stderr, "serves: %s %s from worker %u\n",
			    sipc_outcome_name(res.outcome),
			    sipc_strerror(res.error), res.worker_id);
		}
		sipc_result_release(&res);
	}
	CU_ASSERT(ok >= n - n / 4);
	return ok;
}

static unsigned
serves(sipc_supervisor *s, unsigned n)
{
	return serves_within(s, n, WAIT_MS);
}

/* Memory promises at the end of a hostile run. */
static void
check_memory(sipc_supervisor *s, const struct st_base *b, long peak_rss_kb)
{
	long rss = st_status_kb("VmRSS:");

	CU_ASSERT(st_pool_stats(s).mem_held <= CEILING);
	if (rss > peak_rss_kb)
		peak_rss_kb = rss;
	/* RSS: the payload ceiling plus buffers and thread stacks. */
	if (ST_CHECK_RSS && peak_rss_kb > b->rss_kb + (long)(CEILING / 1024) +
	    RSS_SLACK_KB) {
		fprintf(stderr, "rss %ld -> %ld KiB\n", b->rss_kb, peak_rss_kb);
		CU_FAIL("resident memory above ceiling + overhead");
	}
}

struct ended {
	sipc_supervisor *s;
	unsigned w;
};

/* Slot's first worker has ended (and been classified). */
static bool
slot_ended(void *arg)
{
	struct ended *e = arg;

	return st_worker_stats(e->s, e->w).last_exit.kind != SIPC_EXIT_NONE;
}

static bool
wait_ended(sipc_supervisor *s, unsigned w)
{
	struct ended e = { s, w };

	return tl_wait_until(slot_ended, &e, WAIT_MS);
}

static void
show_exit(const char *what, const struct sipc_exit *e)
{
	char buf[160];

	sipc_exit_format(e, buf, sizeof(buf));
	fprintf(stderr, "%s: %s (%s)\n", what, buf,
	    sipc_term_reason_name(e->reason));
}

/* ------------------------------------------------------------ framing */

/*
 * A REPLY header claiming 0xFFFFFFFF bytes right after HELLO: rejected
 * by the decoder before any allocation (no 4 GiB reservation shows in
 * the peak virtual size), counted as a violation, worker terminated.
 */
/* rules: F4 */
static void
test_hostile_len4g(void)
{
	char *argv[] = { "hostile", "len4g", "-", "0", NULL };
	struct sipc_config c = hostile_cfg(argv);
	struct st_base b = st_baseline();
	long peak0 = st_status_kb("VmPeak:");
	struct sipc_worker_stats ws;
	sipc_supervisor *s;

	s = st_start(&c, 1, WAIT_MS);
	CU_ASSERT_FATAL(wait_ended(s, 0));
	ws = st_worker_stats(s, 0);
	CU_ASSERT(ws.protocol_violations >= 1);
	CU_ASSERT(ws.last_exit.kind == SIPC_EXIT_TERMINATED);
	CU_ASSERT(ws.last_exit.reason == SIPC_TERM_PROTOCOL);
	if (ws.last_exit.kind != SIPC_EXIT_TERMINATED)
		show_exit("len4g", &ws.last_exit);
	serves(s, 20);
	CU_ASSERT(st_pool_stats(s).mem_held <= CEILING);
	/* a 4 GiB buffer would raise the peak virtual size by 4 GiB */
	CU_ASSERT(st_status_kb("VmPeak:") - peak0 < 2L * 1024 * 1024);
	check_memory(s, &b, 0);
	sipc_destroy(s);
	st_check_nothing_left(&b, LEFT_MS);
}

struct outs {
	pthread_mutex_t mu;
	unsigned done, ok, stalled, other;
	int64_t last_ms;
};

static void
outs_done(void *arg, struct sipc_result *res)
{
	struct outs *o = arg;

	pthread_mutex_lock(&o->mu);
	if (res->outcome == SIPC_OUTCOME_OK && res->worker_id == 1)
		o->ok++;
	else if (res->outcome == SIPC_OUTCOME_UNKNOWN && res->may_have_run &&
	    res->error == SIPC_E_STALL && res->worker_id == 0 &&
	    res->exit.kind == SIPC_EXIT_TERMINATED &&
	    res->exit.reason == SIPC_TERM_STALL)
		o->stalled++;
	else
		o->other++;
	o->done++;
	o->last_ms = tl_now_ms();
	pthread_mutex_unlock(&o->mu);
	sipc_result_release(res);
}

static bool
outs_reached(void *arg)
{
	struct outs *o = arg;
	bool r;

	pthread_mutex_lock(&o->mu);
	r = o->done >= 8;
	pthread_mutex_unlock(&o->mu);
	return r;
}

/* Eight requests spread over both slots; wait for all their outcomes. */
static int64_t
spread_eight(sipc_supervisor *s, struct outs *o)
{
	struct sipc_request q = { .payload = "x", .len = 1,
	    .timeout_ms = WAIT_MS };
	int64_t t0 = tl_now_ms();

	for (unsigned i = 0; i < 8; i++)
		CU_ASSERT(sipc_submit(s, &q, outs_done, o, NULL) == 0);
	CU_ASSERT(tl_wait_until(outs_reached, o, WAIT_MS));
	return t0;
}

/*
 * A reply dribbled one byte a second.  Each byte is progress, but the
 * gaps are longer than stall_ms, so stall detection on the pending work
 * bounds it: the slot-0 requests end (UNKNOWN, may have run, STALL)
 * within stall_ms plus slack, not after the 28 s the frame would take.
 */
static void
test_hostile_slowloris(void)
{
	char *argv[] = { "hostile", "slowloris", "-", "0", NULL };
	struct sipc_config c = hostile_cfg(argv);
	struct outs o = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct st_base b = st_baseline();
	struct sipc_worker_stats ws;
	sipc_supervisor *s;
	int64_t t0;

	s = st_start(&c, 2, WAIT_MS);
	t0 = spread_eight(s, &o);
	CU_ASSERT(o.stalled >= 1);     /* slot 0 got some of them */
	CU_ASSERT(o.ok >= 1);          /* and slot 1 served the rest */
	CU_ASSERT(o.other == 0);
	CU_ASSERT(o.last_ms - t0 <= STALL_MS + 1000 + SLACK_MS);
	ws = st_worker_stats(s, 0);
	CU_ASSERT(ws.last_exit.kind == SIPC_EXIT_TERMINATED);
	CU_ASSERT(ws.last_exit.reason == SIPC_TERM_STALL);
	serves(s, 20);
	check_memory(s, &b, 0);
	sipc_destroy(s);
	st_check_nothing_left(&b, LEFT_MS);
}

/*
 * 100000 replies to ids never issued, as fast as the worker can write:
 * the first is a violation; the reader stops decoding; the worker is
 * terminated; nothing reaches a caller.
 */
/* rules: C4 */
static void
test_hostile_flood_unknown_ids(void)
{
	char *argv[] = { "hostile", "flood", "-", "0", NULL };
	struct sipc_config c = hostile_cfg(argv);
	struct st_base b = st_baseline();
	struct sipc_worker_stats ws;
	struct sipc_stats st;
	sipc_supervisor *s;
	unsigned ok;

	s = st_start(&c, 1, WAIT_MS);
	CU_ASSERT_FATAL(wait_ended(s, 0));
	ws = st_worker_stats(s, 0);
	CU_ASSERT(ws.protocol_violations >= 1);
	CU_ASSERT(ws.completed == 0);  /* no flood reply was delivered */
	CU_ASSERT(ws.last_exit.kind == SIPC_EXIT_TERMINATED);
	CU_ASSERT(ws.last_exit.reason == SIPC_TERM_PROTOCOL);
	ok = serves(s, 20);
	CU_ASSERT(sipc_stats_get(s, &st) == 0);
	CU_ASSERT(st.completed_ok == ok);   /* only real replies completed */
	sipc_stats_release(&st);
	check_memory(s, &b, 0);
	sipc_destroy(s);
	st_check_nothing_left(&b, LEFT_MS);
}

/* ------------------------------------------------------------ resources */

/* The per-byte diagnostics path runs ~20x slower under TSan. */
#define FLOOD_BYTES (ST_UNDER_TSAN ? 16u << 20 : 64u << 20)

static bool
flood_logged(void *arg)
{
	bool done;

	pthread_mutex_lock(&cap.mu);
	done = cap.diag_bytes0 >= FLOOD_BYTES;
	pthread_mutex_unlock(&cap.mu);
	return done;
}

struct flood_watch {
	sipc_supervisor *s;
	long peak_rss_kb;
	size_t peak_mem;
	size_t seen;              /* diagnostics bytes at the last wake-up */
};

static size_t
flood_bytes(void)
{
	size_t n;

	pthread_mutex_lock(&cap.mu);
	n = cap.diag_bytes0;
	pthread_mutex_unlock(&cap.mu);
	return n;
}

/* Sample memory; true once more of the flood was logged. */
static bool
flood_moved(void *arg)
{
	struct flood_watch *f = arg;
	long rss = st_status_kb("VmRSS:");
	size_t m = st_pool_stats(f->s).mem_held;

	if (rss > f->peak_rss_kb)
		f->peak_rss_kb = rss;
	if (m > f->peak_mem)
		f->peak_mem = m;
	return flood_bytes() > f->seen;
}

/*
 * Wait for the whole flood to be logged, sampling memory, for as long as
 * it keeps coming: a sanitizer's per-byte cost on a loaded machine makes
 * its total time unbounded, but a reader that stops for WAIT_MS is
 * stuck, and fails.
 */
static bool
flood_wait(struct flood_watch *f)
{
	while (!flood_logged(NULL)) {
		f->seen = flood_bytes();
		if (!tl_wait_until(flood_moved, f, WAIT_MS))
			return false;
	}
	return true;
}

/*
 * 64 MiB of stderr without a newline (the fixture's gigabyte, scaled
 * for test time): it arrives as lines of exactly diag_line_max bytes,
 * every byte accounted for, supervisor memory flat, the worker not
 * faulted (diagnostics volume is not a protocol matter) and serving.
 */
/* rules: G2 G5 */
static void
test_hostile_stderr_flood(void)
{
	char bytes[32];
	char *argv[] = { "hostile", "stderrflood", bytes, "0", NULL };
	struct sipc_config c;
	struct st_base b = st_baseline();
	struct flood_watch f = { 0 };
	struct sipc_worker_stats ws;
	sipc_supervisor *s;

	snprintf(bytes, sizeof(bytes), "%u", FLOOD_BYTES);
	c = hostile_cfg(argv);
	c.stall_ms = 60000;            /* slot 0 answers after its flood */
	s = st_start(&c, 1, WAIT_MS);
	f.s = s;
	/* A call written to slot 0 waits for the whole flood (see
	 * flood_wait()): its deadline is for a stuck worker, not a slow
	 * one. */
	serves_within(s, 20, 6 * WAIT_MS);
	CU_ASSERT(flood_wait(&f));
	pthread_mutex_lock(&cap.mu);
	CU_ASSERT(cap.diag_bytes0 == FLOOD_BYTES);
	CU_ASSERT(cap.diag_max0 == c.diag_line_max);
	CU_ASSERT(cap.diag_lines0 == FLOOD_BYTES / c.diag_line_max);
	pthread_mutex_unlock(&cap.mu);
	CU_ASSERT(f.peak_mem <= CEILING);
	ws = st_worker_stats(s, 0);
	CU_ASSERT(ws.generation == 1 && ws.state == SIPC_WS_READY);
	CU_ASSERT(ws.protocol_violations == 0);
	serves(s, 20);
	check_memory(s, &b, f.peak_rss_kb);
	sipc_destroy(s);
	st_check_nothing_left(&b, LEFT_MS);
}

/*
 * The worker closes its protocol descriptor and stays alive: channel
 * loss is noticed, the worker terminated and classified CHANNEL_LOST, its
 * request ends UNKNOWN (it ran), and a replacement serves.
 */
static void
test_hostile_closechan_alive(void)
{
	char *argv[] = { "echo", NULL };
	struct sipc_config c = hostile_cfg(argv);
	struct sipc_request q = { .payload = "\0CMDclosechan", .len = 13,
	    .timeout_ms = WAIT_MS };
	struct st_base b = st_baseline();
	struct sipc_worker_stats ws;
	struct sipc_result res;
	sipc_supervisor *s;
	uint32_t w;

	c.restart_base_ms = 20;
	c.restart_cap_ms = 100;
	s = st_start(&c, 2, WAIT_MS);
	CU_ASSERT_FATAL(sipc_call(s, &q, &res) == 0);
	w = res.worker_id;
	CU_ASSERT(res.outcome == SIPC_OUTCOME_UNKNOWN && res.may_have_run);
	CU_ASSERT(res.exit.kind == SIPC_EXIT_TERMINATED);
	CU_ASSERT(res.exit.reason == SIPC_TERM_CHANNEL_LOST);
	if (res.exit.reason != SIPC_TERM_CHANNEL_LOST)
		show_exit("closechan", &res.exit);
	sipc_result_release(&res);
	CU_ASSERT_FATAL(w < 2);
	ws = st_worker_stats(s, w);
	CU_ASSERT(ws.last_exit.kind == SIPC_EXIT_TERMINATED);
	CU_ASSERT(ws.last_exit.reason == SIPC_TERM_CHANNEL_LOST);
	CU_ASSERT(ws.protocol_violations == 0);
	CU_ASSERT(sipc_wait_ready(s, 2, WAIT_MS) == 0);   /* replaced */
	serves(s, 20);
	check_memory(s, &b, 0);
	sipc_destroy(s);
	st_check_nothing_left(&b, LEFT_MS);
}

/* ------------------------------------------------------------ processes */

/* Processes (not zombies) whose process group is `pgid`. */
static int
count_group(pid_t pgid)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		pid_t pg;
		char st;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		if (st_proc_stat(atoi(e->d_name), &st, NULL, &pg) == 0 &&
		    pg == pgid && st != 'Z' && st != 'X')
			n++;
	}
	closedir(d);
	return n;
}

static bool
group_empty(void *arg)
{
	return count_group(*(pid_t *)arg) == 0 &&
	    tl_count_zombie_children() == 0;
}

static bool
forked_logged(void *arg)
{
	bool r;

	pthread_mutex_lock(&cap.mu);
	r = cap.forked >= 0;
	pthread_mutex_unlock(&cap.mu);
	return r;
}

/*
 * A worker forks 50 children into its process group.  What bounds the
 * loop here is the fixture's MAX: the configured worker_nproc_limit
 * (RLIMIT_NPROC) is not enforced by the kernel for root, which runs
 * these tests, so it is not relied on.  When the worker ends, its whole
 * group is swept with it; in owner mode the supervisor adopts and reaps
 * the orphans, so no process of the group and no zombie remains, and
 * destroy sweeps the replacement's group the same way.
 */
/* rules: T2 */
static void
test_hostile_forkloop_group_swept(void)
{
	char *argv[] = { "hostile", "forkloop", "50", "0", NULL };
	struct sipc_config c = hostile_cfg(argv);
	struct st_base b;
	pid_t leader, leader2;
	sipc_supervisor *s;
	int forked;

	if (st_skip_sandboxed("process-group mechanics"))
		return;
	c.owner = true;
	c.restart_base_ms = 20;
	c.restart_cap_ms = 100;
	b = st_baseline();
	s = st_start(&c, 2, WAIT_MS);
	CU_ASSERT_FATAL(tl_wait_until(forked_logged, NULL, WAIT_MS));
	pthread_mutex_lock(&cap.mu);
	forked = cap.forked;
	cap.forked = -1;
	pthread_mutex_unlock(&cap.mu);
	CU_ASSERT(forked == 50);
	leader = st_worker_stats(s, 0).pid;
	CU_ASSERT(count_group(leader) == forked + 1);
	serves(s, 20);
	/* the leader dies (as if it crashed): its group goes with it */
	CU_ASSERT_FATAL(kill(leader, SIGKILL) == 0);
	CU_ASSERT(tl_wait_until(group_empty, &leader, WAIT_MS));
	CU_ASSERT(wait_ended(s, 0));
	CU_ASSERT(st_worker_stats(s, 0).last_exit.kind == SIPC_EXIT_SIGNAL);
	/* the replacement forks again; destroy must sweep that group too */
	CU_ASSERT(tl_wait_until(forked_logged, NULL, WAIT_MS));
	leader2 = st_worker_stats(s, 0).pid;
	CU_ASSERT(leader2 != leader && count_group(leader2) > 1);
	serves(s, 20);
	sipc_destroy(s);
	CU_ASSERT(count_group(leader2) == 0);
	st_check_nothing_left(&b, LEFT_MS);
	st_unblock_sigchld();   /* owner mode left it blocked here */
}

static bool
grace_over(void *arg)
{
	bool r;

	pthread_mutex_lock(&cap.mu);
	r = cap.t_kill0 != 0;
	pthread_mutex_unlock(&cap.mu);
	return r;
}

/*
 * A worker that ignores SIGTERM and never replies: stalled, sent TERM,
 * still alive when the grace period ends, then killed; its requests end
 * UNKNOWN (STALL); the other slot served its share meanwhile.
 */
/* rules: T3 */
static void
test_hostile_ignoreterm_killed_after_grace(void)
{
	char *argv[] = { "hostile", "ignoreterm", "-", "0", NULL };
	struct sipc_config c = hostile_cfg(argv);
	struct outs o = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct st_base b = st_baseline();
	struct sipc_worker_stats ws;
	sipc_supervisor *s;

	s = st_start(&c, 2, WAIT_MS);
	(void)spread_eight(s, &o);
	CU_ASSERT(o.stalled >= 1 && o.ok >= 1 && o.other == 0);
	CU_ASSERT(tl_wait_until(grace_over, NULL, WAIT_MS));
	pthread_mutex_lock(&cap.mu);
	CU_ASSERT(cap.t_term0 != 0);
	CU_ASSERT(cap.t_kill0 - cap.t_term0 >= GRACE_MS - 5);
	CU_ASSERT(cap.alive_at_kill0);   /* TERM alone did not end it */
	pthread_mutex_unlock(&cap.mu);
	CU_ASSERT(wait_ended(s, 0));
	ws = st_worker_stats(s, 0);
	CU_ASSERT(ws.last_exit.kind == SIPC_EXIT_TERMINATED);
	CU_ASSERT(ws.last_exit.reason == SIPC_TERM_STALL);
	CU_ASSERT(ws.last_exit.signo == SIGKILL);
	if (ws.last_exit.signo != SIGKILL)
		show_exit("ignoreterm", &ws.last_exit);
	serves(s, 20);
	check_memory(s, &b, 0);
	sipc_destroy(s);
	st_check_nothing_left(&b, LEFT_MS);
}

static bool
escapee_logged(void *arg)
{
	bool r;

	pthread_mutex_lock(&cap.mu);
	r = cap.escapee > 0;
	pthread_mutex_unlock(&cap.mu);
	return r;
}

/* The escapee's parent pid, or -1. */
static pid_t
parent_of(pid_t pid)
{
	pid_t ppid;

	return st_proc_stat(pid, NULL, &ppid, NULL) == 0 ? ppid : -1;
}

/*
 * A child that leaves the worker's process group with setsid() is out
 * of reach of the group sweep: it survives destroy.  That is the local
 * adapter's documented non-guarantee (PRODUCTION_BOUNDARY.md: only a
 * cgroup or PID namespace contains it), recorded here as a fact; the
 * test then kills the escapee itself.  Everything else is swept.
 */
/* rules: T4 */
static void
test_hostile_setsid_escape_documented(void)
{
	char *argv[] = { "hostile", "escape", "-", "0", NULL };
	struct sipc_config c = hostile_cfg(argv);
	struct st_base b = st_baseline();
	sipc_supervisor *s;
	pid_t esc, leader;

	if (st_skip_sandboxed("process-group mechanics"))
		return;
	/* without a cgroup: one ends it (cgroup_test.c) */
	c.cgroup = SIPC_CGROUP_OFF;
	s = st_start(&c, 2, WAIT_MS);
	CU_ASSERT_FATAL(tl_wait_until(escapee_logged, NULL, WAIT_MS));
	pthread_mutex_lock(&cap.mu);
	esc = cap.escapee;
	pthread_mutex_unlock(&cap.mu);
	leader = st_worker_stats(s, 0).pid;
	CU_ASSERT(tl_pid_alive(esc));
	CU_ASSERT(getsid(esc) == esc && getpgid(esc) != leader);
	serves(s, 20);
	sipc_destroy(s);
	CU_ASSERT(!tl_pid_alive(leader));
	CU_ASSERT(tl_pid_alive(esc));     /* the non-guarantee, as documented */
	CU_ASSERT(kill(esc, SIGKILL) == 0);
	if (parent_of(esc) == getpid())   /* adopted if we are a subreaper */
		(void)waitpid(esc, NULL, 0);
	CU_ASSERT(tl_wait_until(st_pid_dead, &esc, WAIT_MS));
	st_check_nothing_left(&b, LEFT_MS);
}

/* Start and join one thread first: a sanitizer runtime may start a
 * helper thread of its own at the first pthread_create, which must be in
 * every test's baseline rather than counted as a leak. */
static void *
nop_thread(void *arg)
{
	return arg;
}

int
main(void)
{
	pthread_t th;

	if (pthread_create(&th, NULL, nop_thread, NULL) == 0)
		pthread_join(th, NULL);
	tl_suite("hostile", (tl_test[]){
	    { "test_hostile_len4g", test_hostile_len4g },
	    { "test_hostile_slowloris", test_hostile_slowloris },
	    { "test_hostile_flood_unknown_ids", test_hostile_flood_unknown_ids },
	    { "test_hostile_stderr_flood", test_hostile_stderr_flood },
	    { "test_hostile_closechan_alive", test_hostile_closechan_alive },
	    { "test_hostile_forkloop_group_swept",
	      test_hostile_forkloop_group_swept },
	    { "test_hostile_ignoreterm_killed_after_grace",
	      test_hostile_ignoreterm_killed_after_grace },
	    { "test_hostile_setsid_escape_documented",
	      test_hostile_setsid_escape_documented },
	    { NULL, NULL } });
	return tl_run();
}

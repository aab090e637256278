/*
 * durable_test.c - what the supervisor does when its journal cannot be
 * written: a real file size limit (RLIMIT_FSIZE, in a forked instance)
 * makes one record fail, and the request that record was for is never
 * sent, says so in its outcome, the journal is broken in stats and in
 * the log, every later submit is refused, and what the next instance
 * lists matches what actually ran, after a crash and after a clean
 * destroy, in EACH and GROUP modes.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "journal/journal.h"
#include "jtest.h"
#include "os/os.h"
#include "sipc.h"
#include "sipctest.h"
#include "statedir.h"
#include "testlib.h"

#define DEADLINE_MS 20000

/* What k-a is, and the pool it runs on (set before the fork). */
static const char *fault_payload = "alpha";
static size_t fault_len = 5;
static unsigned fault_flags, fault_workers = 1;

static struct sipc_config
cfg_for(const char *dir, enum sipc_durability d)
{
	struct sipc_config c;

	st_cfg_init(&c, "echo", NULL, fault_workers);
	c.grace_ms = 300;
	c.restart_base_ms = 20;
	c.state_dir = dir;
	c.durability = d;
	c.group_commit_ms = 5;
	return c;
}

/*
 * The instance whose journal fills up: a real file size limit
 * (RLIMIT_FSIZE, SIGXFSZ ignored so that write() says EFBIG) lets the
 * journal grow by exactly `fault_room` more bytes, then two requests are
 * called: "k-a" (whose records hit the limit) and "k-b" (after the
 * break).  Reports "ready <a outcome> <a error> <b outcome> <b error>
 * <journal_error> <frames written to workers> <break logged> <a may
 * have run>", then
 * waits to be killed, or with fault_clean destroys the supervisor and
 * exits 0.
 */
static size_t fault_room;
static bool fault_clean;

/* Where the forked instance runs. */
struct inst_at { const char *dir; enum sipc_durability d; };

static void __attribute__((noreturn))
child_journal_fault(int fd, void *arg)
{
	const struct inst_at *in = arg;
	const char *dir = in->dir;
	struct sipc_config c = cfg_for(dir, in->d);
	struct sipc_request r = { .payload = fault_payload, .len = fault_len,
	    .flags = fault_flags };
	unsigned long long frames = 0;
	struct sigaction sa = { .sa_handler = SIG_IGN };
	struct sipc_result a, b;
	struct sipc_stats st;
	sipc_supervisor *s = NULL;
	struct rlimit rl;
	struct stat sb;
	char path[512];
	int rc;

	c.log = st_log_fn;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGXFSZ, &sa, NULL) < 0)
		sd_child_fail(fd, "sigaction", -errno);
	st_log_reset();
	if ((rc = sipc_create(&c, NULL, 0, &s)) < 0)
		sd_child_fail(fd, "create", rc);
	if ((rc = sipc_wait_ready(s, fault_workers, DEADLINE_MS)) < 0)
		sd_child_fail(fd, "ready", rc);
	/* Nothing else appends now: a worker's record comes before its
	 * HELLO, and the group commit only syncs. */
	snprintf(path, sizeof(path), "%s/journal", dir);
	if (stat(path, &sb) < 0 || getrlimit(RLIMIT_FSIZE, &rl) < 0)
		sd_child_fail(fd, "journal size", -errno);
	rl.rlim_cur = (rlim_t)sb.st_size + fault_room;
	if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
		sd_child_fail(fd, "setrlimit", -errno);
	r.idempotency_key = "k-a";
	if ((rc = sipc_call(s, &r, &a)) < 0)
		sd_child_fail(fd, "call k-a", rc);
	r = (struct sipc_request){ .payload = "beta", .len = 4,
	    .idempotency_key = "k-b" };
	if ((rc = sipc_call(s, &r, &b)) < 0)
		sd_child_fail(fd, "call k-b", rc);
	if ((rc = sipc_stats_get(s, &st)) < 0)
		sd_child_fail(fd, "stats", rc);
	for (unsigned i = 0; i < st.nworkers; i++)
		frames += st.workers[i].frames_out;
	dprintf(fd, "ready %d %d %d %d %d %llu %d %d\n", (int)a.outcome,
	    a.error, (int)b.outcome, b.error, st.journal_error, frames,
	    st_log_has("journal broken"), a.may_have_run);
	sipc_stats_release(&st);
	sipc_result_release(&a);
	sipc_result_release(&b);
	if (fault_clean) {
		sipc_destroy(s);
		_exit(0);
	}
	for (;;)
		pause();
}

static sipc_supervisor *
open_next(const char *dir)
{
	struct sipc_config c = cfg_for(dir, SIPC_DURABLE_EACH);

	return st_start(&c, 0, 0);      /* reconcile needs no ready worker */
}

/* Bytes of one record of `type` as this instance writes it for "k-a". */
static size_t
rec_bytes(uint8_t type)
{
	struct sipc__jrec rec;
	uint8_t buf[SIPC__JREC_MAX];
	size_t n = 0;

	memset(&rec, 0, sizeof(rec));
	rec.type = type;
	rec.u.acc.keylen = 3;
	CU_ASSERT_FATAL(sipc__jrec_encode(&rec, buf, sizeof(buf), &n) == 0);
	return n;
}

struct fault_report {
	int a_outcome, a_error, b_outcome, b_error, jerr, logged, a_ran;
	unsigned long long frames;
};

/* Run child_journal_fault with `room` bytes of journal left; crash it
 * (or let it destroy cleanly) and return what it saw. */
static struct fault_report
journal_fault(const char *dir, enum sipc_durability d, size_t room,
    bool clean)
{
	struct inst_at in = { dir, d };
	struct fault_report f;
	char line[256];
	pid_t pid;
	int st;

	fault_room = room;
	fault_clean = clean;
	pid = sd_fork_instance(child_journal_fault, &in, line, sizeof(line),
	    DEADLINE_MS);
	CU_ASSERT_FATAL(sscanf(line + 6, "%d %d %d %d %d %llu %d %d",
	    &f.a_outcome, &f.a_error, &f.b_outcome, &f.b_error, &f.jerr,
	    &f.frames, &f.logged, &f.a_ran) == 8);
	if (!clean) {
		sd_kill_instance(pid);
		return f;
	}
	CU_ASSERT(waitpid(pid, &st, 0) == pid);
	CU_ASSERT(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	return f;
}

/* After the WRITTEN record of k-a failed: k-a was never sent and says
 * so (REJECTED / SIPC_E_JOURNAL, the worker got no frame at all), the
 * journal is broken (stats, one ERROR log line), k-b is refused, and the
 * next instance lists k-a as NEVER_SENT, which is true, and nothing
 * else. */
static void
check_written_failed(const char *dir, const struct fault_report *f)
{
	struct sipc_unresolved *u = NULL;
	const struct sipc_unresolved *e;
	sipc_supervisor *s;
	size_t n = 0;

	CU_ASSERT_EQUAL(f->a_outcome, SIPC_OUTCOME_REJECTED);
	CU_ASSERT_EQUAL(f->a_error, SIPC_E_JOURNAL);
	CU_ASSERT(!f->a_ran);
	CU_ASSERT_EQUAL(f->frames, 0);
	CU_ASSERT_EQUAL(f->jerr, -EFBIG);
	CU_ASSERT(f->logged);
	CU_ASSERT_EQUAL(f->b_outcome, SIPC_OUTCOME_REJECTED);
	CU_ASSERT_EQUAL(f->b_error, SIPC_E_JOURNAL);
	s = open_next(dir);
	CU_ASSERT_FATAL(sipc_reconcile_list(s, &u, &n) == 0);
	CU_ASSERT_EQUAL(n, 1);
	e = sd_find_key(u, n, "k-a");
	CU_ASSERT(e != NULL && e->state == SIPC_UNRESOLVED_NEVER_SENT);
	CU_ASSERT(sd_find_key(u, n, "k-b") == NULL);
	sipc_reconcile_free(u);
	sipc_destroy(s);
}

/* rules: J7 J8 */
static void
test_durable_written_record_failed_never_sent(void)
{
	char *dir = sd_make();
	struct fault_report f;

	/* Room for k-a's ACCEPTED record, not for its WRITTEN record. */
	f = journal_fault(dir, SIPC_DURABLE_EACH,
	    rec_bytes(SIPC__JR_ACCEPTED), false);
	check_written_failed(dir, &f);
	sd_remove(dir);
}

/* J5 with a broken journal: a clean destroy cannot record what it could
 * not write, and what the next instance lists still matches what ran. */
/* rules: J5 J7 J8 */
static void
test_durable_broken_journal_clean_destroy(void)
{
	char *dir = sd_make();
	struct fault_report f;

	f = journal_fault(dir, SIPC_DURABLE_GROUP,
	    rec_bytes(SIPC__JR_ACCEPTED), true);
	check_written_failed(dir, &f);
	sd_remove(dir);
}

/* k-a was written (journalled) and ran; its COMPLETED record failed: the
 * caller has its OK, the next instance lists it MAY_HAVE_RUN (never
 * NEVER_SENT); k-b, whose ACCEPTED record failed, was never sent and is
 * not listed. */
/* rules: J7 J8 */
static void
test_durable_completed_record_failed_may_have_run(void)
{
	char *dir = sd_make();
	struct sipc_unresolved *u = NULL;
	const struct sipc_unresolved *e;
	struct fault_report f;
	sipc_supervisor *s;
	size_t n = 0;

	f = journal_fault(dir, SIPC_DURABLE_EACH,
	    rec_bytes(SIPC__JR_ACCEPTED) + rec_bytes(SIPC__JR_WRITTEN), false);
	CU_ASSERT_EQUAL(f.a_outcome, SIPC_OUTCOME_OK);
	CU_ASSERT_EQUAL(f.frames, 1);
	CU_ASSERT_EQUAL(f.jerr, -EFBIG);
	CU_ASSERT_EQUAL(f.b_outcome, SIPC_OUTCOME_REJECTED);
	CU_ASSERT_EQUAL(f.b_error, SIPC_E_JOURNAL);
	s = open_next(dir);
	CU_ASSERT_FATAL(sipc_reconcile_list(s, &u, &n) == 0);
	CU_ASSERT_EQUAL(n, 1);
	e = sd_find_key(u, n, "k-a");
	CU_ASSERT(e != NULL && e->state == SIPC_UNRESOLVED_MAY_HAVE_RUN);
	CU_ASSERT(sd_find_key(u, n, "k-b") == NULL);
	sipc_reconcile_free(u);
	sipc_destroy(s);
	sd_remove(dir);
}

/* k-a is idempotent and kills the worker it starts on (after its
 * ACCEPT: it may have run).  Its retry on the other worker cannot be
 * journalled as written (the limit is reached by then, by the retry's
 * WRITTEN record or by the worker's end record before it), so the retry
 * is not sent, and the outcome says what is true: UNKNOWN (the first
 * attempt may have run), may_have_run, SIPC_E_JOURNAL; never REJECTED.
 * The next instance lists it MAY_HAVE_RUN. */
/* rules: J7 */
static void
test_durable_retry_not_journalled_is_unknown(void)
{
	static const char crash[] = "\0CMDcrash exit 3";
	char *dir = sd_make();
	struct sipc_unresolved *u = NULL;
	const struct sipc_unresolved *e;
	struct fault_report f;
	sipc_supervisor *s;
	size_t n = 0;

	fault_payload = crash;
	fault_len = sizeof(crash) - 1;
	fault_flags = SIPC_REQ_IDEMPOTENT;
	fault_workers = 2;
	f = journal_fault(dir, SIPC_DURABLE_EACH,
	    rec_bytes(SIPC__JR_ACCEPTED) + rec_bytes(SIPC__JR_WRITTEN), false);
	fault_payload = "alpha";
	fault_len = 5;
	fault_flags = 0;
	fault_workers = 1;
	CU_ASSERT_EQUAL(f.a_outcome, SIPC_OUTCOME_UNKNOWN);
	CU_ASSERT_EQUAL(f.a_error, SIPC_E_JOURNAL);
	CU_ASSERT(f.a_ran);
	CU_ASSERT_EQUAL(f.frames, 1);
	CU_ASSERT_EQUAL(f.jerr, -EFBIG);
	CU_ASSERT_EQUAL(f.b_outcome, SIPC_OUTCOME_REJECTED);
	CU_ASSERT_EQUAL(f.b_error, SIPC_E_JOURNAL);
	s = open_next(dir);
	CU_ASSERT_FATAL(sipc_reconcile_list(s, &u, &n) == 0);
	CU_ASSERT_EQUAL(n, 1);
	e = sd_find_key(u, n, "k-a");
	CU_ASSERT(e != NULL && e->state == SIPC_UNRESOLVED_MAY_HAVE_RUN);
	sipc_reconcile_free(u);
	sipc_destroy(s);
	sd_remove(dir);
}

/*
 * TH5 on a host thread: when the journal breaks while sipc_submit()
 * appends a request's ACCEPTED record, the ERROR log line runs on the
 * submitting host thread, inside sipc_submit().  Blocking calls from
 * that log callback would wait for the submit they run in; they must
 * return -EDEADLK instead of hanging.  The child reports
 * "ready <ran on host thread> <destroy rc> <call rc> <wait_ready rc>".
 */
static sipc_supervisor *inner_sup;
static pthread_t inner_host;
static int inner_seen, inner_destroy_rc, inner_call_rc, inner_ready_rc;

static void
blocking_from_log(void *arg, enum sipc_log_level lvl, uint32_t wid,
    uint32_t gen, pid_t pid, const char *msg)
{
	struct sipc_request r = { .payload = "x", .len = 1 };
	struct sipc_result res;

	if (lvl != SIPC_LOG_ERROR || inner_seen ||
	    !pthread_equal(pthread_self(), inner_host))
		return;
	inner_seen = 1;
	inner_destroy_rc = sipc_destroy(inner_sup);
	inner_call_rc = sipc_call(inner_sup, &r, &res);
	inner_ready_rc = sipc_wait_ready(inner_sup, 1, 10);
}

static void __attribute__((noreturn))
child_blocking_in_log(int fd, void *arg)
{
	const char *dir = arg;
	struct sipc_config c = cfg_for(dir, SIPC_DURABLE_EACH);
	struct sipc_request r = { .payload = "alpha", .len = 5,
	    .idempotency_key = "k-a" };
	struct sigaction sa = { .sa_handler = SIG_IGN };
	struct sipc_result res;
	struct rlimit rl;
	struct stat sb;
	char path[512];
	int rc;

	c.log = blocking_from_log;
	inner_host = pthread_self();
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGXFSZ, &sa, NULL) < 0)
		sd_child_fail(fd, "sigaction", -errno);
	if ((rc = sipc_create(&c, NULL, 0, &inner_sup)) < 0)
		sd_child_fail(fd, "create", rc);
	if ((rc = sipc_wait_ready(inner_sup, 1, DEADLINE_MS)) < 0)
		sd_child_fail(fd, "ready", rc);
	snprintf(path, sizeof(path), "%s/journal", dir);
	if (stat(path, &sb) < 0 || getrlimit(RLIMIT_FSIZE, &rl) < 0)
		sd_child_fail(fd, "journal size", -errno);
	rl.rlim_cur = (rlim_t)sb.st_size;     /* no room for ACCEPTED */
	if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
		sd_child_fail(fd, "setrlimit", -errno);
	if ((rc = sipc_call(inner_sup, &r, &res)) < 0)
		sd_child_fail(fd, "call", rc);
	sipc_result_release(&res);
	dprintf(fd, "ready %d %d %d %d\n", inner_seen, inner_destroy_rc,
	    inner_call_rc, inner_ready_rc);
	sipc_destroy(inner_sup);
	_exit(0);
}

/* rules: TH5 */
static void
test_durable_blocking_call_in_host_log_callback_refused(void)
{
	char *dir = sd_make(), line[256];
	int seen = 0, d = 0, c = 0, w = 0, st;
	pid_t pid;

	/* a hang fails here: no report within the deadline */
	pid = sd_fork_instance(child_blocking_in_log, dir, line, sizeof(line),
	    DEADLINE_MS);
	CU_ASSERT(sscanf(line, "ready %d %d %d %d", &seen, &d, &c, &w) == 4);
	CU_ASSERT(waitpid(pid, &st, 0) == pid);
	CU_ASSERT(seen == 1);
	CU_ASSERT_EQUAL(d, -EDEADLK);
	CU_ASSERT_EQUAL(c, -EDEADLK);
	CU_ASSERT_EQUAL(w, -EDEADLK);
	sd_remove(dir);
}

/*
 * A state directory from 0.x: its journal holds a version 1 WORKER
 * record (pid, group, start time, boot id) of a worker that outlived its
 * supervisor.  The reader takes it as a local identity, and the next
 * instance proves and terminates that process; a second record of the
 * same shape whose start time does not match (a reused pid) is left
 * alone.  The bytes are crafted here, as 0.x wrote them.
 */
static void
test_durable_v1_worker_record_still_terminated(void)
{
	char *dir = sd_make(), path[600];
	struct sipc__jrec inst;
	struct sipc__ident k, stale;
	struct sipc_leftover *l = NULL;
	struct sipc_config c = cfg_for(dir, SIPC_DURABLE_EACH);
	uint8_t buf[3 * SIPC__JREC_MAX];
	size_t n, len = 0, i;
	sipc_supervisor *s;
	pid_t pid;
	int fd, st = 0;

	CU_ASSERT_FATAL((pid = tl_spawn_idle(NULL, true)) > 0);
	CU_ASSERT_EQUAL_FATAL(sipc__ident_of(pid, &k), 0);
	memset(&inst, 0, sizeof(inst));
	inst.type = SIPC__JR_INSTANCE;
	memset(inst.u.inst.instance, 0x5a, 16);
	memcpy(inst.u.inst.boot_id, k.boot_id, SIPC__BOOT_ID_LEN);
	inst.u.inst.pid = 1;
	CU_ASSERT_EQUAL_FATAL(sipc__jrec_encode(&inst, buf, sizeof(buf), &n), 0);
	len = n;
	memcpy(k.instance, inst.u.inst.instance, 16);
	k.slot = 0;
	k.generation = 4;
	len += jt_v1_worker_record(buf + len, &k);
	stale = k;
	stale.starttime = k.starttime + 1;     /* the pid, reused */
	stale.generation = 5;
	len += jt_v1_worker_record(buf + len, &stale);
	CU_ASSERT_EQUAL_FATAL(mkdir(dir, 0700), 0);
	snprintf(path, sizeof(path), "%s/journal", dir);
	CU_ASSERT_FATAL((fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600)) >= 0);
	CU_ASSERT_EQUAL_FATAL(write(fd, buf, len), (ssize_t)len);
	close(fd);

	s = st_start(&c, 0, 0);
	/* terminated by then: already waitable (no wait in a failure) */
	if (waitpid(pid, &st, WNOHANG) != pid) {
		CU_FAIL("the v1 leftover was not terminated");
		tl_kill_reap(pid);
	}
	CU_ASSERT(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
	CU_ASSERT_FATAL(sipc_reconcile_leftovers(s, &l, &n) == 0);
	CU_ASSERT_EQUAL_FATAL(n, 2);
	for (i = 0; i < n; i++) {
		CU_ASSERT_STRING_EQUAL(l[i].provider, "local");
		CU_ASSERT_EQUAL(l[i].pid, pid);
		CU_ASSERT_EQUAL(l[i].pgid, pid);
		CU_ASSERT_EQUAL(l[i].verdict, l[i].generation == 4 ?
		    SIPC_LEFTOVER_TERMINATED : SIPC_LEFTOVER_NOT_PROVEN);
	}
	sipc_reconcile_leftovers_free(l);
	CU_ASSERT_EQUAL(sipc_destroy(s), 0);
	sd_remove(dir);
}

int
main(void)
{
	tl_suite("durable", (tl_test[]){
	    { "test_durable_written_record_failed_never_sent", test_durable_written_record_failed_never_sent },
	    { "test_durable_broken_journal_clean_destroy", test_durable_broken_journal_clean_destroy },
	    { "test_durable_completed_record_failed_may_have_run", test_durable_completed_record_failed_may_have_run },
	    { "test_durable_retry_not_journalled_is_unknown", test_durable_retry_not_journalled_is_unknown },
	    { "test_durable_blocking_call_in_host_log_callback_refused", test_durable_blocking_call_in_host_log_callback_refused },
	    { "test_durable_v1_worker_record_still_terminated", test_durable_v1_worker_record_still_terminated },
	    { NULL, NULL } });
	return tl_run();
}

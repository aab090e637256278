/*
 * supervisor_test.c - the core promises of the public API against real
 * worker processes (fixtures/): framing of arbitrary bytes, correlation
 * of out-of-order replies under concurrent callers, descriptor hygiene,
 * diagnostics kept apart from protocol, containment of protocol
 * violations, clear errors, and nothing left behind after destroy.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sipc.h"
#include "sipctest.h"
#include "testlib.h"

/* Generous deadline for ready workers and other events: sanitizers
 * and a loaded machine make exec and start-up many times slower. */
#define WAIT_MS 30000

static struct sipc_config
base_cfg(const char *fixture, unsigned workers)
{
	struct sipc_config c;

	st_cfg_init(&c, fixture, NULL, workers);
	c.grace_ms = 500;
	c.handshake_ms = WAIT_MS;       /* no test here times a handshake out */
	c.restart_base_ms = 20;
	return c;
}

/* One synchronous echo; returns true when the reply is the payload. */
static bool
echo_ok(sipc_supervisor *s, const void *p, size_t n)
{
	struct sipc_request r = { .payload = p, .len = n, .timeout_ms = 20000 };
	struct sipc_result res;
	bool ok;

	if (sipc_call(s, &r, &res) != 0)
		return false;
	ok = res.outcome == SIPC_OUTCOME_OK && res.reply_len == n &&
	    (n == 0 || memcmp(res.reply, p, n) == 0);
	if (!ok)
		fprintf(stderr, "echo: outcome %s error %s len %zu/%zu\n",
		    sipc_outcome_name(res.outcome), sipc_strerror(res.error),
		    res.reply_len, n);
	sipc_result_release(&res);
	return ok;
}

/* ------------------------------------------------------------ framing */

/* rules: F2 */
static void
test_supervisor_every_byte_every_size(void)
{
	struct sipc_config c = base_cfg("echo", 1);
	size_t sizes[] = { 0, 1, 10, 23, 24, 25, 255, 256, 4096, 65535,
	    65536, 65537, 1 << 20 };
	sipc_supervisor *s;
	uint8_t *buf;
	size_t i, j;

	c.max_payload = 1 << 20;
	c.ring_bytes = 4 << 20;
	c.mem_ceiling = 8 << 20;
	s = st_start(&c, c.workers, WAIT_MS);
	buf = malloc(1 << 20);
	CU_ASSERT_FATAL(buf != NULL);
	for (j = 0; j < (1 << 20); j++)
		buf[j] = (uint8_t)(j * 7 + (j >> 8));   /* all values, \n, \0 */
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		CU_ASSERT(echo_ok(s, buf, sizes[i]));
	/* newline-only and NUL-only payloads */
	memset(buf, '\n', 4096);
	CU_ASSERT(echo_ok(s, buf, 4096));
	memset(buf, 0, 4096);
	CU_ASSERT(echo_ok(s, buf, 4096));
	free(buf);
	sipc_destroy(s);
}

static bool
mem_released(void *arg)
{
	struct sipc_stats st;
	bool zero;

	if (sipc_stats_get(arg, &st) != 0)
		return false;
	zero = st.mem_held == 0;
	sipc_stats_release(&st);
	return zero;
}

/* rules: F10 R7 */
static void
test_supervisor_oversize_payload_rejected(void)
{
	struct sipc_config c = base_cfg("echo", 1);
	struct sipc_request r;
	struct sipc_stats st;
	sipc_supervisor *s;
	uint8_t *buf = calloc(1, 70000);

	c.max_payload = 65536;
	s = st_start(&c, c.workers, WAIT_MS);
	r = (struct sipc_request){ .payload = buf, .len = 65537 };
	CU_ASSERT(sipc_submit(s, &r, (sipc_done_fn)abort, NULL, NULL) ==
	    SIPC_E_TOOBIG);
	CU_ASSERT(echo_ok(s, buf, 65536));     /* nothing else lost */
	/* the payload's bytes leave the budget when the reader drops its
	 * last reference, just after the callback */
	CU_ASSERT(tl_wait_until(mem_released, s, 10000));
	CU_ASSERT(sipc_stats_get(s, &st) == 0);
	CU_ASSERT(st.pending == 0);
	sipc_stats_release(&st);
	free(buf);
	sipc_destroy(s);
}

/* ------------------------------------------------------------ correlation */

struct caller {
	sipc_supervisor *s;
	unsigned seed, n, bad;
};

static void *
caller_main(void *arg)
{
	struct caller *c = arg;
	char buf[128];
	unsigned i;
	int n;

	for (i = 0; i < c->n; i++) {
		n = snprintf(buf, sizeof(buf), "caller %u request %u\n%c end",
		    c->seed, i, 0);
		if (!echo_ok(c->s, buf, (size_t)n))
			c->bad++;
	}
	return NULL;
}

/* rules: C2 */
static void
test_supervisor_out_of_order_concurrent(void)
{
	struct sipc_config c = base_cfg("reorder", 2);
	char *argv[] = { "reorder", "12345", NULL };
	struct caller cs[6];
	pthread_t th[6];
	struct sipc_stats st;
	sipc_supervisor *s;
	unsigned i;

	c.argv = argv;
	c.max_inflight = 8;
	s = st_start(&c, c.workers, WAIT_MS);
	for (i = 0; i < 6; i++) {
		cs[i] = (struct caller){ .s = s, .seed = i, .n = 400 };
		CU_ASSERT_FATAL(pthread_create(&th[i], NULL, caller_main,
		    &cs[i]) == 0);
	}
	for (i = 0; i < 6; i++) {
		pthread_join(th[i], NULL);
		CU_ASSERT(cs[i].bad == 0);
	}
	CU_ASSERT(sipc_stats_get(s, &st) == 0);
	CU_ASSERT(st.completed_ok == 2400);
	CU_ASSERT(st.protocol_violations == 0);
	for (i = 0; i < st.nworkers; i++)
		CU_ASSERT(st.workers[i].completed > 0);  /* both served */
	sipc_stats_release(&st);
	sipc_destroy(s);
}

struct async_count {
	pthread_mutex_t lock;
	pthread_cond_t cv;
	unsigned done, ok, submitted, resubmits, full;
	sipc_supervisor *s;
};

static void
async_done(void *arg, struct sipc_result *res)
{
	struct async_count *a = arg;
	struct sipc_request r = { .payload = "again", .len = 5 };
	bool again;
	int rc = -1;

	pthread_mutex_lock(&a->lock);
	again = a->resubmits < 50;
	if (again) {
		a->resubmits++;
		a->submitted++;
	}
	pthread_mutex_unlock(&a->lock);
	/* Callbacks hold no library lock: submitting from one works, and
	 * never blocks (a full queue is SIPC_E_FULL at once). */
	if (again)
		rc = sipc_submit(a->s, &r, async_done, a, NULL);
	pthread_mutex_lock(&a->lock);
	if (again && rc != 0) {
		CU_ASSERT(rc == SIPC_E_FULL);
		a->submitted--;
		a->full++;
	}
	a->done++;
	if (res->outcome == SIPC_OUTCOME_OK)
		a->ok++;
	else
		fprintf(stderr, "async: %s %s\n", sipc_outcome_name(res->outcome),
		    sipc_strerror(res->error));
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->lock);
	sipc_result_release(res);
}

/* rules: C1 M2 S1 TH1 */
static void
test_supervisor_async_submit_from_callback(void)
{
	struct sipc_config c = base_cfg("echo", 2);
	struct async_count a = { .lock = PTHREAD_MUTEX_INITIALIZER,
	    .cv = PTHREAD_COND_INITIALIZER };
	struct sipc_request r = { .payload = "x", .len = 1 };
	uint64_t id, last = 0;
	unsigned i;

	a.s = st_start(&c, c.workers, WAIT_MS);
	for (i = 0; i < 1000; i++) {
		pthread_mutex_lock(&a.lock);
		a.submitted++;
		pthread_mutex_unlock(&a.lock);
		CU_ASSERT(sipc_submit(a.s, &r, async_done, &a, &id) == 0);
		CU_ASSERT(id > last);           /* ids never reused */
		last = id;
	}
	pthread_mutex_lock(&a.lock);
	while (a.done < a.submitted)
		pthread_cond_wait(&a.cv, &a.lock);
	CU_ASSERT(a.ok == a.done);
	CU_ASSERT(a.done == 1000 + a.resubmits - a.full);
	pthread_mutex_unlock(&a.lock);
	sipc_destroy(a.s);
}

/* ------------------------------------------------------------ descriptors */

/* rules: D1 SC5 PB6 */
static void
test_supervisor_host_fd_without_cloexec_not_inherited(void)
{
	struct sipc_config c = base_cfg("fdprobe", 1);
	struct sipc_request r = { .payload = "?", .len = 1, .timeout_ms = 10000 };
	struct sipc_result res;
	int leak1, leak2[2], leak3[2];
	sipc_supervisor *s;
	char *text;

	/* Opened the careless way: no O_CLOEXEC anywhere. */
	leak1 = open("/dev/zero", O_RDONLY);
	CU_ASSERT_FATAL(leak1 >= 0);
	CU_ASSERT_FATAL(pipe(leak2) == 0);
	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, leak3) == 0);
	s = st_start(&c, c.workers, WAIT_MS);
	CU_ASSERT_FATAL(sipc_call(s, &r, &res) == 0);
	CU_ASSERT_FATAL(res.outcome == SIPC_OUTCOME_OK);
	text = strndup((const char *)res.reply, res.reply_len);
	CU_ASSERT(strncmp(text, "0 1 2 3\n", 8) == 0);
	CU_ASSERT(strstr(text, "0=/dev/null") != NULL);
	CU_ASSERT(strstr(text, "/dev/zero") == NULL);
	if (strncmp(text, "0 1 2 3\n", 8) != 0)
		fprintf(stderr, "fdprobe: %s\n", text);
	free(text);
	sipc_result_release(&res);
	sipc_destroy(s);
	close(leak1);
	close(leak2[0]);
	close(leak2[1]);
	close(leak3[0]);
	close(leak3[1]);
}

/* ------------------------------------------------------------ diagnostics */

struct diaglog {
	pthread_mutex_t lock;
	unsigned lines, raw_bytes, long_lines, escapes_seen;
	size_t max_len;
};

static void
diag_cb(void *arg, enum sipc_log_level lvl, uint32_t w, uint32_t g, pid_t pid,
        const char *msg)
{
	struct diaglog *d = arg;
	const unsigned char *p;

	if (lvl != SIPC_LOG_DIAG)
		return;
	pthread_mutex_lock(&d->lock);
	d->lines++;
	for (p = (const unsigned char *)msg; *p; p++)
		if (*p < 0x20 || *p >= 0x7f)
			d->raw_bytes++;
	if (strstr(msg, "\\033[31m") != NULL)
		d->escapes_seen++;
	if (strlen(msg) > d->max_len)
		d->max_len = strlen(msg);
	pthread_mutex_unlock(&d->lock);
}

/* rules: G1 G2 */
static void
test_supervisor_diagnostics_never_protocol(void)
{
	struct sipc_config c = base_cfg("chatty", 2);
	char *argv[] = { "chatty", "20", NULL };
	struct diaglog d = { .lock = PTHREAD_MUTEX_INITIALIZER };
	struct sipc_stats st;
	sipc_supervisor *s;
	char buf[64];
	unsigned i;
	int n;

	c.argv = argv;
	c.log = diag_cb;
	c.log_arg = &d;
	c.diag_line_max = 256;
	s = st_start(&c, c.workers, WAIT_MS);
	for (i = 0; i < 100; i++) {
		n = snprintf(buf, sizeof(buf), "payload %u", i);
		CU_ASSERT(echo_ok(s, buf, (size_t)n));
	}
	CU_ASSERT(sipc_stats_get(s, &st) == 0);
	CU_ASSERT(st.protocol_violations == 0);     /* frame-like stderr ignored */
	CU_ASSERT(st.completed_ok == 100);
	sipc_stats_release(&st);
	sipc_destroy(s);
	CU_ASSERT(d.lines > 100);
	CU_ASSERT(d.raw_bytes == 0);                 /* all escaped */
	CU_ASSERT(d.escapes_seen > 0);
	/* a 5000-byte line arrives in pieces of at most the line cap,
	 * each escaped to at most 4 bytes per byte */
	CU_ASSERT(d.max_len <= 4 * 256);
}

/* ------------------------------------------------------------ violations */

struct mode_case {
	const char *mode;
	bool violation;          /* counted as a protocol violation */
	bool handshakes;         /* the bad worker completes its handshake */
};

static bool
violation_seen(void *arg)
{
	struct sipc_stats st;
	bool seen;

	if (sipc_stats_get(arg, &st) != 0)
		return false;
	seen = st.protocol_violations >= 1;
	sipc_stats_release(&st);
	return seen;
}

static void
run_badframes(const struct mode_case *mc)
{
	struct sipc_config c = base_cfg("badframes", 2);
	char *argv[] = { "badframes", (char *)mc->mode, "0", NULL };
	struct sipc_request r;
	struct sipc_result res;
	struct sipc_stats st;
	sipc_supervisor *s = NULL;
	unsigned i, ok = 0, other = 0;
	char err[256], buf[32];
	int n;

	c.argv = argv;
	/* No mode needs the handshake to time out (a bad HELLO fails at
	 * once; nohello just never gets work), while the good slot must
	 * never miss it: a short budget failed it under load. */
	c.handshake_ms = WAIT_MS;
	c.restart_base_ms = 5000;       /* the bad slot stays down a while */
	c.restart_cap_ms = 5000;
	CU_ASSERT_FATAL(sipc_create(&c, err, sizeof(err), &s) == 0);
	CU_ASSERT_FATAL(sipc_wait_ready(s, mc->handshakes ? 2 : 1, WAIT_MS) ==
	    0);
	for (i = 0; i < 40; i++) {
		n = snprintf(buf, sizeof(buf), "req %u\n", i);
		r = (struct sipc_request){ .payload = buf, .len = (size_t)n,
		    .timeout_ms = 20000 };
		CU_ASSERT_FATAL(sipc_call(s, &r, &res) == 0);
		if (res.outcome == SIPC_OUTCOME_OK &&
		    res.reply_len == (size_t)n && !memcmp(res.reply, buf, n))
			ok++;
		else {
			other++;
			/* never a wrong reply: only an honest outcome */
			CU_ASSERT(res.outcome == SIPC_OUTCOME_UNKNOWN ||
			    res.outcome == SIPC_OUTCOME_REJECTED);
		}
		sipc_result_release(&res);
	}
	/* contained: the other worker kept serving */
	CU_ASSERT(ok >= 38);
	CU_ASSERT(other <= 2);
	if (mc->violation)   /* the handshake modes fail asynchronously */
		CU_ASSERT(tl_wait_until(violation_seen, s, WAIT_MS));
	CU_ASSERT(sipc_stats_get(s, &st) == 0);
	if (!mc->handshakes)  /* a worker that never shook hands got no work */
		CU_ASSERT(st.workers[0].completed == 0);
	sipc_stats_release(&st);
	sipc_destroy(s);
}

#define BADMODE(name, viol, hs)                                        \
	static void test_supervisor_badframes_##name(void)             \
	{                                                              \
		const struct mode_case mc = { #name, viol, hs };       \
		run_badframes(&mc);                                    \
	}
/* rules: C6 F4 F10 */
BADMODE(oversize, true, true)
/* rules: C6 */
BADMODE(badmagic, true, true)
/* rules: C4 */
BADMODE(unknownid, true, true)
/* rules: C4 */
BADMODE(duplicate, true, true)
/* rules: C6 */
BADMODE(truncated, true, true)
/* rules: V1 */
BADMODE(badversion, true, false)
/* rules: H2 */
BADMODE(nohello, false, false)

/* rules: H2 */
static void
test_supervisor_badframes_garbage_hello(void)
{
	const struct mode_case mc = { "garbage-hello", true, false };

	run_badframes(&mc);
}

/* ------------------------------------------------------------ errors */

/* rules: D4 */
static void
test_supervisor_missing_binary_clear_error(void)
{
	struct sipc_config c = base_cfg("echo", 1);
	sipc_supervisor *s = NULL;
	char err[256];
	int before = tl_count_children();

	c.path = "/nonexistent/sipc-worker";
	CU_ASSERT(sipc_create(&c, err, sizeof(err), &s) == SIPC_E_EXEC);
	CU_ASSERT(s == NULL);
	CU_ASSERT(strstr(err, "/nonexistent/sipc-worker") != NULL);
	CU_ASSERT(strstr(err, "No such file") != NULL);
	{
		char tmp[] = "/tmp/sipc-noexec-XXXXXX";
		int fd = mkstemp(tmp);     /* mode 0600: exists, not executable */

		CU_ASSERT_FATAL(fd >= 0);
		close(fd);
		c.path = tmp;
		CU_ASSERT(sipc_create(&c, err, sizeof(err), &s) == SIPC_E_EXEC);
		CU_ASSERT(strstr(err, "Permission denied") != NULL);
		unlink(tmp);
	}
	CU_ASSERT(tl_count_children() == before);
}

/* rules: R7 S3 */
static void
test_supervisor_bad_arguments(void)
{
	struct sipc_config c = base_cfg("echo", 1);
	struct sipc_request r = { .payload = NULL, .len = 3 };
	sipc_supervisor *s = st_start(&c, c.workers, WAIT_MS);
	struct sipc_result res;

	CU_ASSERT(sipc_submit(s, &r, (sipc_done_fn)abort, NULL, NULL) == -EINVAL);
	CU_ASSERT(sipc_submit(s, NULL, (sipc_done_fn)abort, NULL, NULL) == -EINVAL);
	r.payload = "abc";
	CU_ASSERT(sipc_submit(s, &r, NULL, NULL, NULL) == -EINVAL);
	CU_ASSERT(sipc_call(s, &r, NULL) == -EINVAL);
	CU_ASSERT(sipc_call(s, &r, &res) == 0);
	CU_ASSERT(res.outcome == SIPC_OUTCOME_OK);
	sipc_result_release(&res);
	sipc_result_release(&res);      /* twice is harmless */
	sipc_result_release(NULL);
	sipc_destroy(s);
	sipc_destroy(NULL);
}

/* ------------------------------------------------------------ teardown */

/* rules: I1 S5 TH4 */
static void
test_supervisor_destroy_leaves_nothing(void)
{
	struct sipc_config c = base_cfg("echo", 4);
	int threads = tl_settled_threads(WAIT_MS), fds = tl_count_fds();
	int children = tl_count_children();
	struct sipc_stats st;
	sipc_supervisor *s;
	pid_t pids[4];
	unsigned i;

	s = st_start(&c, c.workers, WAIT_MS);
	for (i = 0; i < 200; i++)
		CU_ASSERT(echo_ok(s, "abc\n", 4));
	CU_ASSERT(sipc_stats_get(s, &st) == 0);
	CU_ASSERT(st.nworkers == 4);
	for (i = 0; i < 4; i++) {
		pids[i] = st.workers[i].pid;
		CU_ASSERT(pids[i] > 0);
		CU_ASSERT(st.workers[i].generation == 1);
		CU_ASSERT(st.workers[i].state == SIPC_WS_READY);
		CU_ASSERT(st.workers[i].bytes_in > 0);
	}
	sipc_stats_release(&st);
	CU_ASSERT(tl_count_threads() == threads + 1 + 2 * 4);
	if (tl_count_threads() != threads + 1 + 2 * 4)
		fprintf(stderr, "threads %d, expected %d\n", tl_count_threads(),
		    threads + 1 + 2 * 4);
	sipc_destroy(s);
	if (tl_count_fds() != fds || tl_count_children() != children)
		fprintf(stderr, "fds %d/%d children %d/%d\n", tl_count_fds(), fds,
		    tl_count_children(), children);
	/* destroy joined and reaped everything before returning */
	CU_ASSERT(tl_count_fds() == fds);
	/* joined, but a joined thread is listed a moment longer */
	CU_ASSERT(tl_wait_baseline(fds, threads, children, WAIT_MS));
	CU_ASSERT(tl_count_children() == children);
	CU_ASSERT(tl_count_zombie_children() == 0);
	for (i = 0; i < 4; i++)
		CU_ASSERT(!tl_pid_alive(pids[i]));
}

int
main(void)
{
	tl_suite("supervisor", (tl_test[]){
	    { "test_supervisor_every_byte_every_size",
	      test_supervisor_every_byte_every_size },
	    { "test_supervisor_oversize_payload_rejected",
	      test_supervisor_oversize_payload_rejected },
	    { "test_supervisor_out_of_order_concurrent",
	      test_supervisor_out_of_order_concurrent },
	    { "test_supervisor_async_submit_from_callback",
	      test_supervisor_async_submit_from_callback },
	    { "test_supervisor_host_fd_without_cloexec_not_inherited",
	      test_supervisor_host_fd_without_cloexec_not_inherited },
	    { "test_supervisor_diagnostics_never_protocol",
	      test_supervisor_diagnostics_never_protocol },
	    { "test_supervisor_badframes_oversize",
	      test_supervisor_badframes_oversize },
	    { "test_supervisor_badframes_badmagic",
	      test_supervisor_badframes_badmagic },
	    { "test_supervisor_badframes_unknownid",
	      test_supervisor_badframes_unknownid },
	    { "test_supervisor_badframes_duplicate",
	      test_supervisor_badframes_duplicate },
	    { "test_supervisor_badframes_truncated",
	      test_supervisor_badframes_truncated },
	    { "test_supervisor_badframes_badversion",
	      test_supervisor_badframes_badversion },
	    { "test_supervisor_badframes_nohello",
	      test_supervisor_badframes_nohello },
	    { "test_supervisor_badframes_garbage_hello",
	      test_supervisor_badframes_garbage_hello },
	    { "test_supervisor_missing_binary_clear_error",
	      test_supervisor_missing_binary_clear_error },
	    { "test_supervisor_bad_arguments", test_supervisor_bad_arguments },
	    { "test_supervisor_destroy_leaves_nothing",
	      test_supervisor_destroy_leaves_nothing },
	    { NULL, NULL } });
	return tl_run();
}
